// Waiting for an in-flight result (Prefer: wait=N, IN_FLIGHT_WAIT_SECONDS,
// RPC wait_ms): retries that meet a running key get its answer instead of
// 409. Real origins on 127.0.0.1, the built Worker in workerd, real
// SQLite-backed TenantLedger objects. Every wait is synchronised on events
// (the origin saw the request, `stats.waiting` shows the parked waiters),
// never on sleeps; timing margins are seconds.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  startGateway, startOrigin, deferred, eventually, read, json, slug, orderInit, orders, ACME,
} from "./harness.mjs";
import { LedgerClient, fingerprint } from "../../client/index.js";

const post = (key, headers = {}) => ({
  method: "POST",
  headers: { authorization: ACME, "content-type": "text/plain", "idempotency-key": key, ...headers },
  body: "amount=100",
});
const stats = async (gw) => (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json;
const lookup = async (gw, key) =>
  json(await gw.request(`/v1/idempotency-keys/${encodeURIComponent(key)}`, { headers: { authorization: ACME } }));
/** Resolves once the tenant's object has `n` waiters parked. */
const parked = (gw, n) => eventually(async () => (await stats(gw)).waiting === n);
/** A promise's state without waiting for it. */
const settled = async (p) => Promise.race([p.then(() => true, () => true), new Promise((r) => setTimeout(() => r(false), 0))]);

/** An origin whose first request is held until the test releases it. */
async function heldOrigin() {
  const release = deferred();
  let n = 0;
  const origin = await startOrigin(async () => {
    n += 1;
    if (n === 1) {
      await release.promise;
      return { status: 201, headers: { "content-type": "text/plain" }, body: "charged once" };
    }
    return { status: 201, headers: { "content-type": "text/plain" }, body: `run ${n}` };
  });
  return { origin, release: () => release.resolve() };
}

test("a retry with Prefer: wait=5 gets the first run's answer as a replay; the origin runs once", async () => {
  const { origin, release } = await heldOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const first = gw.request("/charges", post("wait-1")).then(read);
    await origin.waitForRequests(1);
    const retry = gw.request("/charges", post("wait-1", { prefer: "wait=5" })).then(read);
    await parked(gw, 1);
    const releasedAt = Date.now();
    setTimeout(release, 2_000);
    const [a, b] = await Promise.all([first, retry]);
    assert.equal(a.status, 201);
    assert.equal(a.text, "charged once");
    assert.equal(b.status, 201, "the waiter gets the stored response, not 409");
    assert.equal(b.text, "charged once");
    assert.equal(b.headers["idempotent-replayed"], "true");
    assert.equal(b.headers["preference-applied"], "wait=5");
    assert.ok(Date.now() - releasedAt >= 1_500, "the waiter was answered after the release");
    assert.equal(origin.requests.length, 1);
    const s = await stats(gw);
    assert.equal(s.waited, 1);
    assert.equal(s.waited_replayed, 1);
    assert.equal(s.waited_timed_out, 0);
    assert.equal(s.waiting, 0);
  } finally { await gw.dispose(); await origin.close(); }
});

test("20 concurrent waiters on one key all get the same replay", async () => {
  const { origin, release } = await heldOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const first = gw.request("/charges", post("wait-20")).then(read);
    await origin.waitForRequests(1);
    const waiters = Array.from({ length: 20 }, () => gw.request("/charges", post("wait-20", { prefer: "wait=10" })).then(read));
    await parked(gw, 20);
    release();
    const answers = await Promise.all([first, ...waiters]);
    for (const r of answers.slice(1)) {
      assert.equal(r.status, 201);
      assert.equal(r.text, "charged once");
      assert.equal(r.headers["idempotent-replayed"], "true");
    }
    assert.equal(origin.requests.length, 1, "the origin ran once for 21 requests");
    const s = await stats(gw);
    assert.equal(s.waited, 20);
    assert.equal(s.waited_replayed, 20);
  } finally { await gw.dispose(); await origin.close(); }
});

test("a waiter whose owner's lease ends takes the key over at the next generation and runs", async () => {
  const { origin, release } = await heldOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, LEASE_SECONDS: "3", RETENTION_SECONDS: "600", ORIGIN_TIMEOUT_SECONDS: "2" } });
  try {
    // The first owner's origin call is held past its own timeout: the
    // gateway answers 504 and keeps the key in flight until the lease ends.
    const first = gw.request("/charges", post("wait-lease")).then(read);
    await origin.waitForRequests(1);
    const waiter = gw.request("/charges", post("wait-lease", { prefer: "wait=10" })).then(read);
    const w = await waiter;
    assert.equal(w.status, 201, "the waiter ran the request itself after the lease ended");
    assert.equal(w.text, "run 2");
    assert.equal(w.headers["idempotent-replayed"], undefined);
    assert.equal(w.headers["preference-applied"], "wait=10");
    assert.equal((await first).status, 504);
    assert.equal(origin.requests.length, 2);
    assert.equal(origin.requests[1].headers["idempotency-key"], "wait-lease");
    const record = (await lookup(gw, "wait-lease")).json;
    assert.equal(record.generation, 2);
    assert.equal(record.state, "completed");
    const s = await stats(gw);
    assert.equal(s.takeovers, 1);
    assert.equal(s.waited, 1);
    assert.equal(s.waited_replayed, 0);
  } finally { release(); await gw.dispose(); await origin.close(); }
});

test("past its deadline a waiter gets 409; a waiter on key A never delays key B", async () => {
  const { origin, release } = await heldOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const first = gw.request("/charges", post("wait-a")).then(read);
    await origin.waitForRequests(1);
    const started = Date.now();
    const short = gw.request("/charges", post("wait-a", { prefer: "wait=2" })).then(json);
    const long = Array.from({ length: 5 }, () => gw.request("/charges", post("wait-a", { prefer: "wait=10" })).then(read));
    await parked(gw, 6);
    // Key B runs and completes while six waiters are parked on key A.
    const b = await read(await gw.request("/charges", post("wait-b")));
    assert.equal(b.status, 201);
    assert.equal(b.text, "run 2");
    for (const p of long) assert.equal(await settled(p), false, "key A's waiters are still parked");

    const s409 = await short;
    assert.equal(s409.status, 409);
    assert.equal(slug(s409.json), "idempotency-key-in-use");
    assert.equal(s409.headers["retry-after"], "1");
    assert.equal(s409.headers["preference-applied"], "wait=2");
    assert.ok(Date.now() - started >= 1_500, "it waited about its budget");
    release();
    for (const r of await Promise.all(long)) assert.equal(r.headers["idempotent-replayed"], "true");
    await first;
    const s = await stats(gw);
    assert.equal(s.waited_timed_out, 1);
    assert.equal(s.waited_replayed, 5);
    assert.equal(origin.requests.length, 2);
  } finally { release(); await gw.dispose(); await origin.close(); }
});

test("waiters beyond IN_FLIGHT_MAX_WAITERS get 409 at once; IN_FLIGHT_WAIT_SECONDS waits without asking; wait=0 opts out", async () => {
  const { origin, release } = await heldOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, IN_FLIGHT_MAX_WAITERS: "3", IN_FLIGHT_WAIT_SECONDS: "10" } });
  try {
    const first = gw.request("/charges", post("wait-cap")).then(read);
    await origin.waitForRequests(1);
    // No Prefer header: the operator's default makes these wait.
    const waiters = Array.from({ length: 3 }, () => gw.request("/charges", post("wait-cap")).then(read));
    await parked(gw, 3);
    const over = await json(await gw.request("/charges", post("wait-cap", { prefer: "wait=10" })));
    assert.equal(over.status, 409, "the fourth waiter is refused at once");
    assert.equal(over.headers["preference-applied"], undefined, "it did not wait");
    const optOut = await json(await gw.request("/charges", post("wait-cap", { prefer: "wait=0" })));
    assert.equal(optOut.status, 409);
    for (const p of waiters) assert.equal(await settled(p), false);
    release();
    for (const r of await Promise.all(waiters)) {
      assert.equal(r.text, "charged once");
      assert.equal(r.headers["idempotent-replayed"], "true");
      assert.equal(r.headers["preference-applied"], undefined, "nobody asked: nothing applied");
    }
    await first;
  } finally { release(); await gw.dispose(); await origin.close(); }
});

test("embedded mode: an execute waits for a key claimed over RPC and replays its completion; the app never runs", async () => {
  const gw = await startGateway();
  try {
    const body = '{"sku":"SKU-1","quantity":2}';
    const fp = await fingerprint({
      method: "POST", target: "/v1/orders", headers: { "content-type": "application/json" }, body: new TextEncoder().encode(body),
    });
    const client = new LedgerClient(await gw.ledger("acme"));
    const claim = await client.claim({ key: "wait-embedded", fingerprint: fp });
    assert.equal(claim.outcome, "claimed");
    const waiter = gw.request("/v1/orders", orderInit({ key: "wait-embedded", body, headers: { prefer: "wait=10" } })).then(read);
    await parked(gw, 1);
    const stored = { status: 201, headers: [["content-type", "application/json"]], body: Buffer.from('{"id":"from-rpc"}').toString("base64") };
    assert.equal((await client.complete({ key: "wait-embedded", generation: claim.generation, response: stored })).outcome, "stored");
    const r = await waiter;
    assert.equal(r.status, 201);
    assert.equal(r.text, '{"id":"from-rpc"}');
    assert.equal(r.headers["idempotent-replayed"], "true");
    assert.equal(r.headers["preference-applied"], "wait=10");
    assert.deepEqual(await orders(gw), [], "the embedded app never ran");
  } finally { await gw.dispose(); }
});

test("RPC: a claim with wait_ms parks until release, then claims at the next generation; the JS client reports waited_ms", async () => {
  const gw = await startGateway();
  try {
    const fp = await fingerprint({ method: "POST", target: "/x", headers: {}, body: new Uint8Array() });
    const client = new LedgerClient(await gw.ledger("acme"));
    const first = await client.claim({ key: "rpc-wait", fingerprint: fp });
    assert.equal(first.outcome, "claimed");
    const immediate = await client.claim({ key: "rpc-wait", fingerprint: fp, wait_ms: 0 });
    assert.equal(immediate.outcome, "in_flight");
    assert.equal(immediate.waited_ms, undefined);
    const waiting = client.claim({ key: "rpc-wait", fingerprint: fp, wait_ms: 10_000 });
    await parked(gw, 1);
    assert.equal((await client.release({ key: "rpc-wait", generation: first.generation })).outcome, "released");
    const second = await waiting;
    assert.equal(second.outcome, "claimed");
    assert.equal(second.generation, first.generation + 1);
    assert.equal(typeof second.waited_ms, "number");
    // An absurd wait is a bad call, refused before anything is written.
    await assert.rejects(client.claim({ key: "rpc-wait-2", fingerprint: fp, wait_ms: 3_600_001 }), (e) => e.status === 400);
    assert.equal(await client.lookup("rpc-wait-2"), null);
  } finally { await gw.dispose(); }
});

// A link in front of the real TenantLedger that can drop every call it is
// carrying, as the runtime does when an object is reset (code update,
// eviction): the caller's stub fetch throws. `/__reset` on the link object
// triggers it; `/__swallow` makes it hold waiting claims without an answer;
// `/__delay` makes it forward waiting claims only after 7 s (a slow object).
const resetLink = {
  name: "reset", modules: true,
  durableObjects: {
    LINK: { className: "ResetLink", useSQLite: true },
    REAL: { className: "TenantLedger", scriptName: "gateway" },
  },
  script: `
    export class ResetLink {
      constructor(state, env) { this.state = state; this.env = env; this.pending = new Set(); this.swallow = false; this.delay = 0; }
      async fetch(request) {
        const path = new URL(request.url).pathname;
        if (path === "/__reset") {
          for (const reject of this.pending) reject(new Error("Durable Object reset because its code was updated."));
          const n = this.pending.size;
          this.pending.clear();
          return new Response(String(n));
        }
        if (path === "/__swallow") { this.swallow = true; return new Response("ok"); }
        if (path === "/__delay") { this.delay = 7000; return new Response("ok"); }
        const text = await request.text();
        const waiting = path === "/rpc/v1/claim" && JSON.parse(text).wait_ms > 0;
        if (waiting && this.swallow) return new Promise(() => {});
        if (waiting && this.delay) await new Promise((r) => setTimeout(r, this.delay));
        const real = this.env.REAL.get(this.env.REAL.idFromName(this.state.id.name));
        const forwarded = real.fetch(request.url, { method: request.method, headers: request.headers, body: text });
        if (!waiting) return forwarded;
        return new Promise((resolve, reject) => {
          this.pending.add(reject);
          forwarded.then(resolve, reject).finally(() => this.pending.delete(reject));
        });
      }
    }
    export default { fetch() { return new Response("unused"); } }`,
};

async function linkedGateway(origin, vars = {}) {
  return startGateway({
    vars: { ORIGIN_URL: origin.url, ...vars },
    workers: [resetLink],
    gateway: {
      durableObjects: {
        TENANT_LEDGER: { className: "ResetLink", scriptName: "reset" },
        OWN_LEDGER: { className: "TenantLedger", useSQLite: true },
      },
    },
  });
}

async function linkControl(gw, path) {
  const ns = await gw.mf.getDurableObjectNamespace("LINK", "reset");
  return (await ns.get(ns.idFromName("acme")).fetch(`https://link${path}`)).text();
}

test("a waiter whose object is reset gets 409 (retry), never a hang or a second run", async () => {
  const { origin, release } = await heldOrigin();
  const gw = await linkedGateway(origin);
  try {
    const first = gw.request("/charges", post("wait-reset")).then(read);
    await origin.waitForRequests(1);
    const waiter = gw.request("/charges", post("wait-reset", { prefer: "wait=10" })).then(json);
    await eventually(async () => (await linkControl(gw, "/__reset")) === "1");
    const r = await waiter;
    assert.equal(r.status, 409);
    assert.equal(slug(r.json), "idempotency-key-in-use");
    assert.equal(r.headers["retry-after"], "1");
    assert.ok(gw.events("idempotency.wait_interrupted").length >= 1);
    release();
    assert.equal((await first).status, 201);
    const again = await read(await gw.request("/charges", post("wait-reset")));
    assert.equal(again.headers["idempotent-replayed"], "true");
    assert.equal(origin.requests.length, 1);
  } finally { release(); await gw.dispose(); await origin.close(); }
});

test("a waiting call that never gets an answer is given up after its budget plus grace: 409, not a hang", async () => {
  const { origin, release } = await heldOrigin();
  const gw = await linkedGateway(origin);
  try {
    const first = gw.request("/charges", post("wait-silent")).then(read);
    await origin.waitForRequests(1);
    await linkControl(gw, "/__swallow");
    const started = Date.now();
    const r = await json(await gw.request("/charges", post("wait-silent", { prefer: "wait=1" })));
    assert.equal(r.status, 409);
    assert.equal(slug(r.json), "idempotency-key-in-use");
    assert.ok(Date.now() - started >= 5_000, "given up only after the budget and the grace");
    release();
    assert.equal((await first).status, 201);
    assert.equal(origin.requests.length, 1);
  } finally { release(); await gw.dispose(); await origin.close(); }
});

test("a waiting claim the gateway gave up on, granted later by a slow object, is released at once", async () => {
  const held = deferred();
  // The first run is held, then answers 500 with RELEASE_ON_5XX: the key is
  // released while the waiting retry's claim is still on its way.
  const origin = await startOrigin(async (_req, n) => (n === 1 ? (await held.promise, { status: 500, body: "no" }) : { status: 201, body: "ran" }));
  const gw = await linkedGateway(origin, { RELEASE_ON_5XX: "true" });
  const lookup = async () => (await json(await gw.request("/v1/idempotency-keys/wait-abandoned", { headers: { authorization: ACME } }))).json;
  try {
    const first = gw.request("/charges", post("wait-abandoned")).then(read);
    await origin.waitForRequests(1);
    await linkControl(gw, "/__delay");
    const waiter = gw.request("/charges", post("wait-abandoned", { prefer: "wait=1" })).then(json);
    held.resolve();
    assert.equal((await first).status, 500, "the first run answered 5xx and released the key");
    const r = await waiter;
    assert.equal(r.status, 409, "given up after its budget and the grace");
    // The delayed claim reached the object after the key was released: it
    // was granted to nobody, and the gateway gave it back.
    await eventually(() => gw.events("idempotency.abandoned_claim_released").length === 1, { ms: 30_000 });
    await eventually(async () => (await lookup()).state === "released", { ms: 30_000 });
    const again = await read(await gw.request("/charges", post("wait-abandoned")));
    assert.deepEqual([again.status, again.text], [201, "ran"], "a retry runs at once, no lease to wait out");
  } finally { held.resolve(); await gw.dispose(); await origin.close(); }
});

test("invalid wait configuration is refused loudly", async () => {
  const gw = await startGateway({ vars: { IN_FLIGHT_WAIT_SECONDS: "30" } });
  try {
    const r = await json(await gw.request("/v1/orders", orderInit({ key: "cfg" })));
    assert.equal(r.status, 500);
    assert.equal(slug(r.json), "misconfigured");
    assert.match(r.json.detail ?? JSON.stringify(r.json), /IN_FLIGHT_WAIT/);
  } finally { await gw.dispose(); }
});
