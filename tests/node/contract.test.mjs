// The middleware contract (client/middleware/contract.js) against a failing ledger: a
// plain object with async claim/complete/release that throw or answer as
// each test scripts. Run in Node, with the same Web APIs Workers have.
// Completion and release are retried as the gateway retries them
// (client/rpc/settle.js), the handler's response always reaches its caller,
// its error is never masked, and an unreachable ledger is the gateway's
// 503 problem document.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Hono } from "hono";
import {
  withIdempotency, idempotencyContract, LedgerClient, LedgerError, settle, SETTLE_RETRY_DELAYS_MS,
} from "../../client/index.js";
import { problemResponse } from "../../client/rules/problems.js";
import { idempotency } from "../../client/middleware/hono.js";

const unreachable = () => new LedgerError("ledger unreachable: connection reset", { status: null });
const claimed = { outcome: "claimed", generation: 1, takeover: false };
const stored = { outcome: "stored" };
const released = { outcome: "released" };

/**
 * A ledger stub: each operation answers its script in turn (the last entry
 * repeats). An entry is an answer, or a function of the call returning an
 * answer or an Error (thrown).
 */
function stubLedger({ claim = [claimed], complete = [stored], release = [released] } = {}) {
  const calls = [];
  const op = (name, script) => async (call) => {
    const n = calls.filter((c) => c.op === name).length;
    calls.push({ op: name, call, at: performance.now() });
    const step = script[Math.min(n, script.length - 1)];
    const answer = typeof step === "function" ? step(call) : step;
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return {
    calls,
    count: (name) => calls.filter((c) => c.op === name).length,
    claim: op("claim", claim), complete: op("complete", complete), release: op("release", release),
  };
}

/** A handler wrapped with the contract over `ledger`; its runs and the hook's calls are recorded. */
function wrap(ledger, handler = async () => new Response("charged once", { status: 201, headers: { "content-type": "text/plain" } })) {
  const failures = [];
  const runs = [];
  const wrapped = withIdempotency(async (request, env, ctx) => {
    runs.push(request);
    return handler(request, env, ctx);
  }, { ledger: () => ledger, onSettlementFailed: (f) => { failures.push(f); } });
  return { wrapped, failures, runs };
}

const post = (key, body = "10.00", url = "https://api.test/charges") => new Request(url, {
  method: "POST", headers: { "idempotency-key": key, "content-type": "text/plain" }, body,
});

test("SETTLE_RETRY_DELAYS_MS are the gateway's", () => {
  assert.deepEqual(SETTLE_RETRY_DELAYS_MS, [200, 1000]);
  assert.ok(Object.isFrozen(SETTLE_RETRY_DELAYS_MS));
});

test("a completion that fails twice without an answer is retried, and the third attempt stores it", async () => {
  const ledger = stubLedger({ complete: [unreachable, unreachable, stored] });
  const { wrapped, failures, runs } = wrap(ledger);
  const res = await wrapped(post("k-a"), {}, undefined);
  assert.equal(res.status, 201);
  assert.equal(await res.text(), "charged once");
  assert.equal(runs.length, 1);
  assert.deepEqual(ledger.calls.map((c) => c.op), ["claim", "complete", "complete", "complete"]);
  const attempts = ledger.calls.filter((c) => c.op === "complete");
  for (const a of attempts) assert.deepEqual({ key: a.call.key, generation: a.call.generation }, { key: "k-a", generation: 1 });
  // Two pauses, 200 ms then 1,000 ms, at the least (a loaded machine only makes them longer).
  assert.ok(attempts[2].at - attempts[0].at >= 1_150, `${attempts[2].at - attempts[0].at} ms between the first and last attempt`);
  assert.deepEqual(failures, []);
});

test("a completion that always fails still returns the handler's response, and the hook is told", async () => {
  const ledger = stubLedger({ complete: [unreachable] });
  const { wrapped, failures } = wrap(ledger);
  const res = await wrapped(post("k-b"), {}, undefined);
  assert.equal(res.status, 201);
  assert.equal(await res.text(), "charged once");
  assert.equal(ledger.count("complete"), 3);
  assert.equal(failures.length, 1);
  assert.deepEqual({ ...failures[0], error: undefined }, { operation: "complete", key: "k-b", generation: 1, error: undefined });
  assert.ok(failures[0].error instanceof LedgerError);
  assert.equal(failures[0].error.status, null);
});

test("a handler that throws while the release fails rethrows the handler's own error; the hook gets the release", async () => {
  const boom = new Error("the handler failed");
  const ledger = stubLedger({ release: [unreachable] });
  const { wrapped, failures } = wrap(ledger, async () => { throw boom; });
  await assert.rejects(wrapped(post("k-c"), {}, undefined), (e) => e === boom);
  assert.equal(ledger.count("release"), 3);
  assert.equal(ledger.count("complete"), 0);
  assert.equal(failures.length, 1);
  assert.equal(failures[0].operation, "release");
  assert.equal(failures[0].key, "k-c");
  assert.equal(failures[0].generation, 1);
  assert.ok(failures[0].error instanceof LedgerError);
});

test("a release that fails once is retried; the handler's error is rethrown and nothing is reported", async () => {
  const boom = new Error("the handler failed");
  const ledger = stubLedger({ release: [unreachable, released] });
  const { wrapped, failures } = wrap(ledger, async () => { throw boom; });
  await assert.rejects(wrapped(post("k-c2"), {}, undefined), (e) => e === boom);
  assert.equal(ledger.count("release"), 2);
  assert.deepEqual(failures, []);
});

test("a claim that gets no answer is the gateway's 503 idempotency-store-unavailable; nothing runs", async () => {
  const expected = problemResponse("idempotency-store-unavailable");
  const expectedBytes = Buffer.from(await expected.arrayBuffer());
  for (const [name, failure] of [["no answer", unreachable], ["a 5xx", () => new LedgerError("ledger refused claim (500)", { status: 500 })]]) {
    const ledger = stubLedger({ claim: [failure] });
    const { wrapped, runs } = wrap(ledger);
    const res = await wrapped(post("k-d"), {}, undefined);
    assert.equal(res.status, 503, name);
    assert.equal(res.headers.get("content-type"), expected.headers.get("content-type"));
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(expectedBytes), `${name}: the catalog's document, byte for byte`);
    assert.equal(runs.length, 0);
    assert.deepEqual(ledger.calls.map((c) => c.op), ["claim"], `${name}: not retried, nothing settled`);
  }
});

test("a claim the object refused (a 4xx) is the middleware's own call misconfigured: 500 misconfigured, the object's detail only in the log; nothing runs", async (t) => {
  const lines = [];
  t.mock.method(console, "error", (line) => { lines.push(line); });
  const problem = {
    type: "https://idempotency-ledger.dev/problems/idempotency-key-moved", title: "This key lives in another ledger object",
    status: 421, detail: "object acme/shard-0-of-2 is retired",
  };
  const ledger = stubLedger({ claim: [() => new LedgerError("ledger refused claim (421): object acme/shard-0-of-2 is retired", { status: 421, problem })] });
  const { wrapped, runs } = wrap(ledger);
  const res = await wrapped(post("k-d2"), {}, undefined);
  assert.equal(res.status, 500);
  assert.equal(res.headers.get("content-type"), "application/problem+json");
  const doc = await res.json();
  assert.equal(doc.type, "https://idempotency-ledger.dev/problems/misconfigured");
  assert.match(doc.detail, /the ledger refused the idempotency middleware's claim \(421 idempotency-key-moved\)/);
  assert.ok(!doc.detail.includes("acme/shard-0-of-2"), "the object's detail is logged, not answered");
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [
    { event: "idempotency.misconfigured", cause: "claim_refused", status: 421, problem: "idempotency-key-moved", error: "object acme/shard-0-of-2 is retired" },
  ]);
  assert.equal(runs.length, 0);
  assert.deepEqual(ledger.calls.map((c) => c.op), ["claim"], "not retried, nothing settled");
});

test("a claim answered without a known outcome is 503; an error that is not the ledger's is rethrown", async () => {
  const odd = stubLedger({ claim: [null] });
  assert.equal((await wrap(odd).wrapped(post("k-d3"), {}, undefined)).status, 503);
  const bug = new TypeError("a bug in the ledger option");
  const buggy = stubLedger({ claim: [() => bug] });
  await assert.rejects(wrap(buggy).wrapped(post("k-d4"), {}, undefined), (e) => e === bug);
});

test("a retry fenced out by this owner's own completed generation counts as stored", async () => {
  const ledger = stubLedger({ complete: [unreachable, { outcome: "fenced_out", current: { state: "completed", generation: 1 } }] });
  const { wrapped, failures } = wrap(ledger);
  const res = await wrapped(post("k-e"), {}, undefined);
  assert.equal(res.status, 201);
  assert.equal(await res.text(), "charged once");
  assert.equal(ledger.count("complete"), 2);
  assert.deepEqual(failures, []);
});

test("a 4xx from complete is not retried: called once, the hook told, the response returned", async () => {
  const refused = () => new LedgerError("ledger refused complete (400): bad call", { status: 400, problem: null });
  const ledger = stubLedger({ complete: [refused] });
  const { wrapped, failures } = wrap(ledger);
  const res = await wrapped(post("k-f"), {}, undefined);
  assert.equal(res.status, 201);
  assert.equal(ledger.count("complete"), 1);
  assert.equal(failures.length, 1);
  assert.equal(failures[0].operation, "complete");
  assert.equal(failures[0].error.status, 400);
});

test("a 5xx from complete is retried; an undecodable answer is not", async () => {
  const busy = stubLedger({ complete: [() => new LedgerError("ledger refused complete (503)", { status: 503 }), stored] });
  const b = wrap(busy);
  assert.equal((await b.wrapped(post("k-f2"), {}, undefined)).status, 201);
  assert.equal(busy.count("complete"), 2);
  assert.deepEqual(b.failures, []);
  const garbled = stubLedger({ complete: [null, stored] });
  const g = wrap(garbled);
  assert.equal((await g.wrapped(post("k-f3"), {}, undefined)).status, 201);
  assert.equal(garbled.count("complete"), 1);
  assert.equal(g.failures.length, 1);
  assert.equal(g.failures[0].operation, "complete");
});

test("ctx.waitUntil receives the settlement promise, which the request awaits (complete and release)", async () => {
  const ledger = stubLedger();
  const held = [];
  const ctx = { waitUntil(p) { held.push(p); } };
  const { wrapped } = wrap(ledger);
  const res = await wrapped(post("k-g"), {}, ctx);
  assert.equal(res.status, 201);
  assert.equal(held.length, 1);
  assert.ok(held[0] instanceof Promise);
  assert.equal(ledger.count("complete"), 1, "the request answered after the completion");
  assert.equal(await held[0], undefined, "the settlement never rejects");
  const boom = new Error("boom");
  const thrower = wrap(stubLedger(), async () => { throw boom; });
  await assert.rejects(thrower.wrapped(post("k-g2"), {}, ctx), (e) => e === boom);
  assert.equal(held.length, 2, "the release too");
  assert.ok(held[1] instanceof Promise);
  await held[1];
});

test("fenced out at the first attempt: the response is returned, nothing reported (the object logs it)", async () => {
  const ledger = stubLedger({ complete: [{ outcome: "fenced_out", current: { state: "in_flight", generation: 2 } }] });
  const { wrapped, failures } = wrap(ledger);
  assert.equal((await wrapped(post("k-h"), {}, undefined)).status, 201);
  assert.equal(ledger.count("complete"), 1);
  assert.deepEqual(failures, []);
});

test("settle: retries only what is safe, and reports an earlier attempt's success", async () => {
  let n = 0;
  const { answer, attempts, landed } = await settle(async () => {
    n += 1;
    if (n === 1) throw unreachable();
    return { outcome: "fenced_out", current: { state: "released", generation: 4 } };
  }, { landed: (a) => a.current?.state === "released" });
  assert.deepEqual({ attempts, landed, outcome: answer.outcome }, { attempts: 2, landed: true, outcome: "fenced_out" });
  const first = await settle(async () => ({ outcome: "fenced_out", current: { state: "released", generation: 4 } }), { landed: () => true });
  assert.equal(first.landed, false, "only a retry can find its own earlier success");
  let tries = 0;
  const plain = new Error("not the ledger's");
  await assert.rejects(settle(async () => { tries += 1; throw plain; }), (e) => e === plain);
  assert.equal(tries, 1);
});

test("onSettlementFailed must be a function, checked when the middleware is made", () => {
  const ledger = () => stubLedger();
  assert.throws(() => withIdempotency(() => new Response(), { ledger, onSettlementFailed: "log" }), TypeError);
  assert.throws(() => idempotency({ ledger, onSettlementFailed: 1 }), TypeError);
  assert.throws(() => idempotencyContract({ ledger, onSettlementFailed: null }), TypeError);
  withIdempotency(() => new Response(), { ledger, onSettlementFailed: undefined });
});

test("the default hook logs idempotency.complete_failed with a short hash of the key, never the key", async (t) => {
  const lines = [];
  t.mock.method(console, "error", (line) => { lines.push(line); });
  const ledger = stubLedger({ complete: [() => new LedgerError("ledger refused complete (400): bad", { status: 400 })], release: [unreachable] });
  const wrapped = withIdempotency(async (request) => {
    if ((await request.text()) === "explode") throw new Error("boom");
    return new Response("ok", { status: 201 });
  }, { ledger: () => ledger });
  assert.equal((await wrapped(post("secret-key-1"), {}, undefined)).status, 201);
  await assert.rejects(wrapped(post("secret-key-2", "explode"), {}, undefined), /boom/);
  const hash = (key) => createHash("sha256").update(key).digest("hex").slice(0, 12);
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [
    { event: "idempotency.complete_failed", key: hash("secret-key-1"), error: "ledger refused complete (400): bad" },
    { event: "idempotency.release_failed", key: hash("secret-key-2"), error: "ledger unreachable: connection reset" },
  ]);
  assert.ok(!lines.join("\n").includes("secret-key"), "the raw key is never logged");
});

test("a hook that throws costs the request nothing", async () => {
  const ledger = stubLedger({ complete: [() => new LedgerError("refused", { status: 400 })] });
  const wrapped = withIdempotency(async () => new Response("ok", { status: 201 }), {
    ledger: () => ledger, onSettlementFailed: () => { throw new Error("hook broke"); },
  });
  assert.equal((await wrapped(post("k-hook"), {}, undefined)).status, 201);
});

test("Hono: an unreachable ledger is 503, not a plain 500; completion is retried under c.executionCtx.waitUntil", async () => {
  const failures = [];
  let ledger;
  const app = new Hono();
  app.use("/payments/*", idempotency({ ledger: () => ledger, onSettlementFailed: (f) => { failures.push(f); } }));
  app.post("/payments/charge", (c) => c.text("charged", 201));
  const held = [];
  const ctx = { waitUntil(p) { held.push(p); }, passThroughOnException() {}, props: {} };
  const send = (key) => app.fetch(post(key, "1.00", "https://hono.test/payments/charge"), {}, ctx);

  ledger = stubLedger({ claim: [unreachable] });
  const down = await send("h-down");
  assert.equal(down.status, 503);
  assert.equal(await down.text(), await problemResponse("idempotency-store-unavailable").text());

  ledger = stubLedger({ complete: [unreachable, stored] });
  const ok = await send("h-retry");
  assert.equal(ok.status, 201);
  assert.equal(await ok.text(), "charged");
  assert.equal(ledger.count("complete"), 2);
  assert.equal(held.length, 1);
  assert.deepEqual(failures, []);
});

test("an upgrading object's 503 keeps its Retry-After: LedgerError.retryAfter, then withIdempotency and Hono answer it, over a LedgerClient or a LedgerService binding", async () => {
  const problem = {
    type: "https://idempotency-ledger.dev/problems/idempotency-store-unavailable", title: "Idempotency store unavailable",
    status: 503, detail: "the ledger is upgrading its schema in place; retry in a moment",
  };
  // A TenantLedger stub answering as an upgrading object does.
  const stub = (retryAfter) => ({
    fetch: async () => new Response(JSON.stringify(problem), {
      status: 503, headers: { "content-type": "application/problem+json", ...(retryAfter ? { "retry-after": retryAfter } : {}) },
    }),
  });
  const upgrading = new LedgerClient(stub("1"));
  const error = await upgrading.claim(/** @type {any} */ ({ key: "k" })).then(() => null, (e) => e);
  assert.ok(error instanceof LedgerError);
  assert.deepEqual([error.status, error.retryAfter], [503, 1]);
  assert.match(error.message, /^ledger refused claim \(503\): .*\(retry-after: 1\)$/);
  const silent = await new LedgerClient(stub(null)).claim(/** @type {any} */ ({ key: "k" })).then(() => null, (e) => e);
  assert.equal(silent.retryAfter, null);
  assert.equal((await new LedgerClient(stub("Wed, 21 Oct 2026 07:28:00 GMT")).claim(/** @type {any} */ ({ key: "k" })).catch((e) => e)).retryAfter, null, "only delta-seconds are kept");

  // A LedgerService binding: JS RPC carries the message alone.
  const service = {
    [Symbol.toStringTag]: "Fetcher",
    claim: async () => { throw new Error(error.message); },
    complete: async () => stored,
    release: async () => released,
  };
  for (const [name, ledger, options] of [["LedgerClient", upgrading, {}], ["LedgerService", service, { tenant: "acme" }]]) {
    let runs = 0;
    const wrapped = withIdempotency(async () => { runs += 1; return new Response("ran"); }, { ledger: () => ledger, ...options });
    const res = await wrapped(post(`k-up-${name}`), {}, undefined);
    assert.equal(res.status, 503, name);
    assert.equal(res.headers.get("retry-after"), "1", `${name}: withIdempotency passes Retry-After on`);
    assert.match((await res.json()).type, /idempotency-store-unavailable$/);
    assert.equal(runs, 0);

    const app = new Hono();
    app.use("/payments/*", idempotency({ ledger: () => ledger, ...options }));
    app.post("/payments/charge", (c) => c.text("charged", 201));
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} };
    const hono = await app.fetch(post(`h-up-${name}`, "1.00", "https://hono.test/payments/charge"), {}, ctx);
    assert.equal(hono.status, 503, name);
    assert.equal(hono.headers.get("retry-after"), "1", `${name}: Hono passes Retry-After on`);
  }
  // No Retry-After from the object: none invented.
  const plain = await withIdempotency(async () => new Response("ran"), { ledger: () => new LedgerClient(stub(null)) })(post("k-plain"), {}, undefined);
  assert.equal(plain.status, 503);
  assert.equal(plain.headers.get("retry-after"), null);
});
