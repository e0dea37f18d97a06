// Proxy mode (docs/contract.md §2.6) and every row of the docs/contract.md §2.5 outcome table that
// needs an origin: a real HTTP server on 127.0.0.1 or a second Worker.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GATEWAY_MODULES, ROOT, startGateway, startOrigin, deferred, eventually, read, json, slug, ACME, GLOBEX } from "./harness.mjs";

/** The deployed entry over a ledger whose every call the runtime refuses as overloaded (tests/e2e/workers/overloaded-entry.mjs). */
const OVERLOADED_ENTRY = { type: "ESModule", path: `${ROOT}tests/e2e/workers/overloaded-entry.mjs` };

const post = (key, body = "amount=100", headers = {}) => ({
  method: "POST",
  headers: { authorization: ACME, "content-type": "application/x-www-form-urlencoded", "idempotency-key": key, ...headers },
  body,
});
const lookup = async (gw, key, auth = ACME) =>
  json(await gw.request(`/v1/idempotency-keys/${encodeURIComponent(key)}`, { headers: { authorization: auth } }));
const stats = async (gw) => (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json;

test("protected requests reach the origin once, with exact bytes and the server's tenant", async () => {
  const origin = await startOrigin(() => ({ status: 201, headers: { "content-type": "text/plain", location: "/charges/1", "x-extra": "kept-on-first" }, body: "charged" }));
  const gw = await startGateway({ vars: { ORIGIN_URL: `${origin.url}/api/` } });
  try {
    const body = Buffer.from([0x00, 0xff, 0x7b, 0x22, 0x0a]);
    const init = post("proxy-1", body, { "x-tenant-id": "globex", "x-custom": "v" });
    const first = await read(await gw.request("/charges?b=2&a=1", init));
    assert.equal(first.status, 201);
    assert.equal(first.text, "charged");
    assert.equal(first.headers["x-extra"], "kept-on-first", "the first caller gets the origin's full response");
    assert.equal(origin.requests.length, 1);
    const seen = origin.requests[0];
    assert.equal(seen.method, "POST");
    assert.equal(seen.url, "/api/charges?b=2&a=1", "base path kept, path+query appended verbatim");
    assert.ok(seen.body.equals(body), "exact body bytes");
    assert.equal(seen.headers["x-tenant-id"], "acme", "the server's tenant, not the client's");
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.headers["idempotency-key"], "proxy-1");
    assert.equal(seen.headers["x-custom"], "v");

    const replay = await read(await gw.request("/charges?b=2&a=1", init));
    assert.equal(replay.status, 201);
    assert.equal(replay.text, "charged");
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(replay.headers.location, "/charges/1");
    assert.equal(replay.headers["x-extra"], undefined, "only STORED_RESPONSE_HEADERS are replayed");
    assert.equal(origin.requests.length, 1, "the origin is not called again");

    const unprotected = await read(await gw.request("/charges", { headers: { authorization: ACME } }));
    assert.equal(unprotected.status, 201);
    assert.equal(origin.requests.length, 2, "unprotected methods are forwarded too");
    assert.equal(origin.requests[1].method, "GET");
  } finally { await gw.dispose(); await origin.close(); }
});

test("a takeover after the lease runs again; the superseded owner is fenced out but still gets its answer", async () => {
  const firstHeld = deferred();
  const origin = await startOrigin((_req, n) => (n === 1 ? firstHeld.promise : { status: 200, body: "second-run" }));
  // The origin timeout outlives the lease on purpose: this is the fencing scenario.
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, LEASE_SECONDS: "5", ORIGIN_TIMEOUT_SECONDS: "30" } });
  try {
    const a = gw.request("/charges", post("takeover-1")).then(read);
    await origin.waitForRequests(1);

    const inUse = await json(await gw.request("/charges", post("takeover-1")));
    assert.equal(inUse.status, 409);
    assert.equal(slug(inUse.json), "idempotency-key-in-use");
    assert.equal(inUse.headers["retry-after"], "1");
    assert.ok(inUse.json.lease_remaining_ms > 0 && inUse.json.lease_remaining_ms <= 5_000);

    // Retry until the lease has ended and the retry takes over.
    const b = await eventually(async () => {
      const r = await read(await gw.request("/charges", post("takeover-1")));
      return r.status === 409 ? null : r;
    });
    assert.equal(b.status, 200);
    assert.equal(b.text, "second-run");
    assert.equal(origin.requests.length, 2);
    assert.equal((await lookup(gw, "takeover-1")).json.generation, 2);

    // Now the slow first owner finishes: fenced out, ledger unchanged.
    firstHeld.resolve({ status: 200, body: "first-run" });
    const aDone = await a;
    assert.equal(aDone.text, "first-run", "the superseded owner's caller gets the response its run produced");
    const s = await stats(gw);
    assert.equal(s.takeovers, 1);
    assert.equal(s.fenced_out, 1);
    const replay = await read(await gw.request("/charges", post("takeover-1")));
    assert.equal(replay.text, "second-run");
    assert.equal(replay.headers["idempotent-replayed"], "true");
    await eventually(() => gw.events("idempotency.fenced_out").length > 0);
    const warn = gw.events("idempotency.config_warning");
    assert.ok(warn.some((w) => /ORIGIN_TIMEOUT_SECONDS/.test(w.warning) && /LEASE_SECONDS/.test(w.warning)));
  } finally { firstHeld.resolve({ status: 200 }); await gw.dispose(); await origin.close(); }
});

test("an unreachable origin releases the claim: 502, and a retry runs again", async () => {
  const closed = await startOrigin(() => ({}));
  const deadUrl = closed.url;
  await closed.close();
  const gw = await startGateway({ vars: { ORIGIN_URL: deadUrl } });
  try {
    const r = await json(await gw.request("/charges", post("dead-1")));
    assert.equal(r.status, 502);
    assert.equal(slug(r.json), "origin-unavailable");
    const rec = await lookup(gw, "dead-1");
    assert.equal(rec.json.state, "released");
    const again = await json(await gw.request("/charges", post("dead-1")));
    assert.equal(again.status, 502, "the retry ran again rather than being refused");
    assert.equal((await lookup(gw, "dead-1")).json.generation, 2);
  } finally { await gw.dispose(); }
});

test("an origin that throws releases the claim: 502 (service binding)", async () => {
  const gw = await startGateway({
    workers: [{ name: "origin", modules: true, script: `export default { async fetch() { throw new Error("origin crashed"); } }` }],
    gateway: { serviceBindings: { ORIGIN: "origin" } },
  });
  try {
    const r = await json(await gw.request("/charges", post("throw-1")));
    assert.equal(r.status, 502);
    assert.equal(slug(r.json), "origin-unavailable");
    assert.equal((await lookup(gw, "throw-1")).json.state, "released");
  } finally { await gw.dispose(); }
});

test("a second Worker bound as ORIGIN receives the tenant and its answer is stored", async () => {
  const gw = await startGateway({
    workers: [{
      name: "origin", modules: true,
      script: `let n = 0; export default { async fetch(req) { n++; return new Response(JSON.stringify({ n, tenant: req.headers.get("x-tenant-id"), auth: req.headers.get("authorization") }), { status: 201, headers: { "content-type": "application/json" } }); } }`,
    }],
    gateway: { serviceBindings: { ORIGIN: "origin" } },
  });
  try {
    const first = await json(await gw.request("/charges", post("svc-1")));
    assert.deepEqual(first.json, { n: 1, tenant: "acme", auth: null });
    const replay = await json(await gw.request("/charges", post("svc-1")));
    assert.deepEqual(replay.json, { n: 1, tenant: "acme", auth: null });
    assert.equal(replay.headers["idempotent-replayed"], "true");
  } finally { await gw.dispose(); }
});

test("an origin that does not answer in time: 504, the key stays in flight", async () => {
  const held = deferred();
  const origin = await startOrigin(() => held.promise);
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, ORIGIN_TIMEOUT_SECONDS: "1" } });
  try {
    const r = await json(await gw.request("/charges", post("slow-1")));
    assert.equal(r.status, 504);
    assert.equal(slug(r.json), "origin-timeout");
    const rec = await lookup(gw, "slow-1");
    assert.equal(rec.json.state, "in_flight", "not released: the outcome is unknown");
    const retry = await json(await gw.request("/charges", post("slow-1")));
    assert.equal(retry.status, 409);
  } finally { held.resolve({ status: 200 }); await gw.dispose(); await origin.close(); }
});

test("a response over MAX_STORED_BODY_BYTES reaches its first caller, then replays as a loud tombstone", async () => {
  const big = "x".repeat(1000);
  const origin = await startOrigin(() => ({ status: 200, headers: { "content-type": "text/plain" }, body: big }));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, MAX_STORED_BODY_BYTES: "16" } });
  try {
    const first = await read(await gw.request("/export", post("tomb-1")));
    assert.equal(first.status, 200);
    assert.equal(first.text, big);
    for (let i = 0; i < 2; i++) {
      const replay = await json(await gw.request("/export", post("tomb-1")));
      assert.equal(replay.status, 500);
      assert.equal(slug(replay.json), "idempotency-response-not-retained");
      assert.equal(replay.json.original_status, 200);
      assert.equal(replay.headers["idempotent-replayed"], "true");
    }
    assert.equal(origin.requests.length, 1, "the origin never runs twice");
    const rec = await lookup(gw, "tomb-1");
    assert.equal(rec.json.retained, false);
    assert.equal(rec.json.response_status, 200);
  } finally { await gw.dispose(); await origin.close(); }
});

test("a 5xx is stored and replayed by default; RELEASE_ON_5XX=true releases it instead", async () => {
  const origin = await startOrigin(() => ({ status: 503, body: "busy" }));
  const stored = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    assert.equal((await read(await stored.request("/charges", post("5xx-1")))).status, 503);
    const replay = await read(await stored.request("/charges", post("5xx-1")));
    assert.equal(replay.status, 503);
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(origin.requests.length, 1);
  } finally { await stored.dispose(); }
  const releasing = await startGateway({ vars: { ORIGIN_URL: origin.url, RELEASE_ON_5XX: "true" } });
  try {
    const first = await read(await releasing.request("/charges", post("5xx-2")));
    assert.equal(first.status, 503, "the 5xx is still passed to its caller");
    assert.equal((await lookup(releasing, "5xx-2")).json.state, "released");
    const again = await read(await releasing.request("/charges", post("5xx-2")));
    assert.equal(again.headers["idempotent-replayed"], undefined);
    assert.equal(origin.requests.length, 3, "the retry ran again");
  } finally { await releasing.dispose(); await origin.close(); }
});

const brokenLedger = {
  name: "broken", modules: true,
  durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
  script: `export class TenantLedger { constructor() {} async fetch() { throw new Error("ledger storage failure"); } }
           export default { fetch() { return new Response("unused"); } }`,
};

test("FAILURE_POLICY=closed: an unreachable ledger is 503 and the origin is not called", async () => {
  const origin = await startOrigin(() => ({ status: 200, body: "ran" }));
  const gw = await startGateway({
    vars: { ORIGIN_URL: origin.url },
    workers: [brokenLedger],
    gateway: { durableObjects: { TENANT_LEDGER: { className: "TenantLedger", scriptName: "broken" } } },
  });
  try {
    const r = await json(await gw.request("/charges", post("down-1")));
    assert.equal(r.status, 503);
    assert.equal(slug(r.json), "idempotency-store-unavailable");
    assert.equal(origin.requests.length, 0);
  } finally { await gw.dispose(); await origin.close(); }
});

test("FAILURE_POLICY=open: a ledger that was certainly not reached runs the request unprotected and logs it", async () => {
  const origin = await startOrigin(() => ({ status: 200, body: "ran-unprotected" }));
  // Every call refused by the runtime as overloaded, before delivery: nothing
  // sent, nothing applied. (No TENANT_LEDGER binding at all is a configuration
  // error, 500 misconfigured under every policy: careless-config.test.mjs.)
  const gw = await startGateway({
    vars: { ORIGIN_URL: origin.url, FAILURE_POLICY: "open" },
    gateway: { modules: [OVERLOADED_ENTRY, ...GATEWAY_MODULES] },
  });
  try {
    const r = await read(await gw.request("/charges", post("down-2")));
    assert.equal(r.status, 200);
    assert.equal(r.text, "ran-unprotected");
    assert.equal(origin.requests.length, 1);
    await eventually(() => gw.events("idempotency.unprotected").length === 1);
    assert.ok(gw.events("idempotency.request").some((e) => e.outcome === "unprotected"));
  } finally { await gw.dispose(); await origin.close(); }
});

test("FAILURE_POLICY=open: a ledger that threw may have acted, so it is 503 and the origin is not called", async () => {
  const origin = await startOrigin(() => ({ status: 200, body: "ran" }));
  const gw = await startGateway({
    vars: { ORIGIN_URL: origin.url, FAILURE_POLICY: "open" },
    workers: [brokenLedger],
    gateway: { durableObjects: { TENANT_LEDGER: { className: "TenantLedger", scriptName: "broken" } } },
  });
  try {
    const r = await json(await gw.request("/charges", post("down-3")));
    assert.equal(r.status, 503);
    assert.equal(slug(r.json), "idempotency-store-unavailable");
    assert.equal(origin.requests.length, 0, "never a second, unprotected run");
  } finally { await gw.dispose(); await origin.close(); }
});

test("MAX_KEYS_PER_TENANT: new keys get 429 with Retry-After; existing keys are still answered", async () => {
  const origin = await startOrigin(() => ({ status: 200, body: "ok" }));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, MAX_KEYS_PER_TENANT: "2" } });
  try {
    assert.equal((await read(await gw.request("/c", post("q-1")))).status, 200);
    assert.equal((await read(await gw.request("/c", post("q-2")))).status, 200);
    const full = await json(await gw.request("/c", post("q-3")));
    assert.equal(full.status, 429);
    assert.equal(slug(full.json), "idempotency-ledger-full");
    assert.ok(Number(full.headers["retry-after"]) >= 1);
    const replay = await read(await gw.request("/c", post("q-1")));
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal((await json(await gw.request("/c", post("q-2", "other")))).status, 422);
    const g = await read(await gw.request("/c", { ...post("q-3"), headers: { ...post("q-3").headers, authorization: GLOBEX } }));
    assert.equal(g.status, 200, "the quota is per tenant");
  } finally { await gw.dispose(); await origin.close(); }
});

test("introspection is tenant-scoped and logs never carry raw keys, tokens or bodies", async () => {
  const origin = await startOrigin(() => ({ status: 200, body: "secret-response-body" }));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    await gw.request("/c", post("visible-only-to-acme", "secret-request-body"));
    await gw.request("/c", post("visible-only-to-acme", "secret-request-body"));
    assert.equal((await lookup(gw, "visible-only-to-acme")).status, 200);
    assert.equal((await lookup(gw, "visible-only-to-acme", GLOBEX)).status, 404);
    const gs = (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: GLOBEX } }))).json;
    assert.equal(gs.records, 0);
    const { headers: noKey } = post("unused");
    delete noKey["idempotency-key"];
    await gw.request("/c", { method: "POST", headers: noKey, body: "x" });
    await gw.request("/c", post('"bad-key-never-logged'));
    await gw.request("/c", { headers: { authorization: ACME } }); // GET: not protected, no line
    await eventually(() => gw.events("idempotency.request").length >= 4);
    const lines = gw.events("idempotency.request");
    assert.deepEqual(lines.map((l) => [l.outcome, l.status]), [["executed", 200], ["replayed", 200], ["key_missing", 400], ["key_invalid", 400]]);
    for (const l of lines) {
      assert.match(l.tenant, /^[0-9a-f]{12}$/);
      assert.equal(typeof l.duration_ms, "number");
    }
    assert.match(lines[0].key, /^[0-9a-f]{12}$/);
    assert.equal(lines[0].key, lines[1].key);
    assert.equal(lines[2].key, null);
    const all = gw.logs.join("\n");
    for (const secret of ["visible-only-to-acme", "bad-key-never-logged", "dev-token-acme", "secret-request-body", "secret-response-body"]) {
      assert.ok(!all.includes(secret), `logs must not contain ${secret}`);
    }
  } finally { await gw.dispose(); await origin.close(); }
});

test("16 concurrent requests with one key reach the origin exactly once", async () => {
  const held = deferred();
  const origin = await startOrigin(() => held.promise);
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url } });
  try {
    const first = gw.request("/charges", post("burst-1")).then(read);
    await origin.waitForRequests(1);
    const others = await Promise.all(Array.from({ length: 15 }, () => gw.request("/charges", post("burst-1")).then(json)));
    for (const r of others) {
      assert.equal(r.status, 409);
      assert.equal(slug(r.json), "idempotency-key-in-use");
    }
    held.resolve({ status: 201, body: "charged-once" });
    assert.equal((await first).text, "charged-once");
    const replays = await Promise.all(Array.from({ length: 8 }, () => gw.request("/charges", post("burst-1")).then(read)));
    for (const r of replays) {
      assert.equal(r.text, "charged-once");
      assert.equal(r.headers["idempotent-replayed"], "true");
    }
    assert.equal(origin.requests.length, 1);
    const s = await stats(gw);
    assert.equal(s.in_use, 15);
    assert.equal(s.replays, 8);
  } finally { held.resolve({ status: 500 }); await gw.dispose(); await origin.close(); }
});

test("MAX_DB_BYTES_PER_OBJECT holds under large answers: 8 keys in flight answered with 1,000,000 bytes each get their answers, none is stored, replays say so", async () => {
  const answer = Buffer.alloc(1_000_000, "q");
  const gate = deferred();
  const origin = await startOrigin(async () => { await gate.promise; return { status: 201, headers: { "content-type": "application/octet-stream" }, body: answer }; });
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, MAX_DB_BYTES_PER_OBJECT: "65536" } });
  try {
    const keys = Array.from({ length: 8 }, (_, i) => `quota-${i}`);
    const firsts = keys.map((key) => gw.request("/charges", post(key)).then(async (r) => ({ status: r.status, body: Buffer.from(await r.arrayBuffer()) })));
    await origin.waitForRequests(8); // every key claimed before any completes
    gate.resolve();
    for (const first of await Promise.all(firsts)) {
      assert.equal(first.status, 201);
      assert.ok(first.body.equals(answer), `the caller gets its whole answer (${first.body.length} bytes)`);
    }
    for (const key of keys) {
      const replay = await json(await gw.request("/charges", post(key)));
      assert.equal(replay.status, 500);
      assert.equal(slug(replay.json), "idempotency-response-not-retained");
      assert.equal(replay.json.original_status, 201);
      assert.equal((await lookup(gw, key)).json.retained, false);
    }
    assert.equal(origin.requests.length, 8, "no key ran twice");
    const s = await stats(gw);
    assert.equal(s.quota_tombstones, 8);
    assert.equal(gw.events("idempotency.quota_tombstone").length, 8, "each is logged");
    // docs/contract.md §4: the quota + 128 KiB × (1 + records in flight).
    assert.ok(s.db_bytes <= 65_536 + 9 * 128 * 1024, `db_bytes ${s.db_bytes}`);
  } finally { await gw.dispose(); await origin.close(); }
});
