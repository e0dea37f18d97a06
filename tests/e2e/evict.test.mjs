// Evicting a key (docs/contract.md §2.11) through the built gateway and
// over RPC v1 — fetch RPC, the LedgerService JS RPC entrypoint and the npm
// package's TenantLedgers — on real SQLite-backed TenantLedger objects and
// a real origin: a stored 500 evicted and the retry run again, an in-flight
// key refused until its owner is done, a fenced-out owner staying fenced
// after the key is claimed again, and a resharding tenant's key evicted
// where it lives. Through the gateway, evicting takes an operator's token
// (OPERATOR_TOKENS; a tenant's API token only with EVICT_WITH_API_TOKENS:
// operator-access.test.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, startOrigin, deferred, eventually, read, json, slug, sha256hex, rpcCaller, ACME } from "./harness.mjs";
import { fingerprint, shardOf, shardObjectName, TenantLedgers, LedgerClient } from "../../client/index.js";

const post = (key, body = "amount=100", auth = ACME) => ({
  method: "POST",
  headers: { authorization: auth, "content-type": "application/x-www-form-urlencoded", "idempotency-key": key },
  body,
});
/** Each tenant's operator token: evicting through the gateway needs one. */
const OPERATOR = "Bearer operator-token-acme";
const GLOBEX_OPERATOR = "Bearer operator-token-globex";
const OPERATOR_TOKENS = JSON.stringify({ [sha256hex("operator-token-acme")]: "acme", [sha256hex("operator-token-globex")]: "globex" });
const keyPath = (key) => `/v1/idempotency-keys/${encodeURIComponent(key)}`;
const evict = async (gw, key, auth = OPERATOR) => json(await gw.request(keyPath(key), { method: "DELETE", headers: auth ? { authorization: auth } : {} }));
const lookup = async (gw, key) => json(await gw.request(keyPath(key), { headers: { authorization: ACME } }));
const stats = async (gw) => (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json;
/** One RPC v1 call on an object, by name. */
const rpcAt = async (gw, name, route, call) => {
  const stub = await gw.ledger(name);
  const r = await stub.fetch(`https://ledger/rpc/v1/${route}`, { method: "POST", body: JSON.stringify(call) });
  return { status: r.status, headers: Object.fromEntries(r.headers), json: await r.json() };
};
const stored = (status, text) => ({ status, headers: [["content-type", "text/plain"]], body: Buffer.from(text).toString("base64") });

test("a stored 500 is evicted through the gateway and the retry runs again; other tenants, bad and unknown keys change nothing", async () => {
  // The origin fails the first run, then succeeds.
  const origin = await startOrigin((_, n) => (n === 1 ? { status: 500, body: "boom" } : { status: 201, headers: { "content-type": "text/plain" }, body: `ran #${n}` }));
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, OPERATOR_TOKENS } });
  try {
    assert.equal((await read(await gw.request("/charges", post("poisoned")))).status, 500);
    // Poisoned: the 500 replays.
    const replay = await read(await gw.request("/charges", post("poisoned")));
    assert.equal(replay.status, 500);
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(origin.requests.length, 1);

    // Nobody else can evict it: no token, the tenant's own API token, another tenant's operator.
    assert.equal((await evict(gw, "poisoned", null)).status, 401);
    assert.equal((await evict(gw, "poisoned", ACME)).status, 403);
    const other = await evict(gw, "poisoned", GLOBEX_OPERATOR);
    assert.equal(other.status, 404);
    assert.equal(slug(other.json), "not-found");
    // A key the key rule refuses, an unknown key: refused, nothing changed.
    for (const bad of ["%FF", "%00x", encodeURIComponent("k".repeat(256))]) {
      const answer = await json(await gw.request(`/v1/idempotency-keys/${bad}`, { method: "DELETE", headers: { authorization: OPERATOR } }));
      assert.equal(answer.status, 400, bad);
      assert.equal(slug(answer.json), "idempotency-key-invalid", bad);
    }
    const unknown = await evict(gw, "never-used");
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers["content-type"], "application/problem+json");
    assert.equal((await read(await gw.request("/charges", post("poisoned")))).headers["idempotent-replayed"], "true", "still poisoned");

    // Evicted: the answer is the record as it stood.
    const gone = await evict(gw, "poisoned");
    assert.equal(gone.status, 200, JSON.stringify(gone.json));
    assert.equal(gone.json.key, "poisoned");
    assert.equal(gone.json.state, "completed");
    assert.equal(gone.json.response_status, 500);
    assert.equal(gone.json.generation, 1);
    assert.equal(gone.json.replays, 2, "both replays, one from this isolate's cache");
    assert.equal((await lookup(gw, "poisoned")).status, 404);
    assert.equal((await evict(gw, "poisoned")).status, 404, "evicting twice: nothing left");

    // The retry runs again (not replayed from the object nor this isolate's cache), above the evicted generation.
    const again = await read(await gw.request("/charges", post("poisoned")));
    assert.equal(again.status, 201);
    assert.equal(again.text, "ran #2");
    assert.equal(again.headers["idempotent-replayed"], undefined);
    assert.equal(origin.requests.length, 2);
    const now = await lookup(gw, "poisoned");
    assert.equal(now.json.state, "completed");
    assert.equal(now.json.response_status, 201);
    assert.ok(now.json.generation > 1, `generation ${now.json.generation} never goes back`);

    // Counted (stats and trend), and logged with the key's hash, never the key.
    const s = await stats(gw);
    assert.equal(s.evicted, 1);
    assert.equal(s.trend.reduce((n, m) => n + m.evicted, 0), 1);
    const lines = gw.events("idempotency.key_evicted");
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].key, sha256hex("poisoned").slice(0, 12));
    assert.equal(lines[0].state, "completed");
    assert.equal(lines[0].status, 500);
    assert.equal(lines[0].generation, 1);
    assert.ok(!JSON.stringify(gw.events()).includes("\"poisoned\""), "the raw key is never logged");
  } finally {
    await gw.dispose();
    await origin.close();
  }
});

test("an in-flight key is 409 with Retry-After until its owner is done; then it is evicted", async () => {
  const held = deferred();
  const origin = await startOrigin(async () => { await held.promise; return { status: 201, body: "done" }; });
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, OPERATOR_TOKENS } });
  try {
    const running = gw.request("/charges", post("busy")).then(read);
    await origin.waitForRequests(1);
    const refused = await evict(gw, "busy");
    assert.equal(refused.status, 409, JSON.stringify(refused.json));
    assert.equal(slug(refused.json), "idempotency-key-in-use");
    assert.ok(refused.json.lease_remaining_ms > 0);
    assert.ok(Number(refused.headers["retry-after"]) >= 1, refused.headers["retry-after"]);
    assert.equal((await lookup(gw, "busy")).json.state, "in_flight", "nothing changed");
    held.resolve();
    assert.equal((await running).status, 201, "the owner completes as if nothing happened");
    const gone = await evict(gw, "busy");
    assert.equal(gone.status, 200);
    assert.equal(gone.json.response_status, 201);
    assert.equal((await stats(gw)).evicted, 1);
  } finally {
    held.resolve();
    await gw.dispose();
    await origin.close();
  }
});

test("RPC evict: a lease that ended is evicted and its fenced-out owner stays fenced after the key is claimed again", async () => {
  const gw = await startGateway();
  try {
    const fp = await fingerprint({ method: "POST", target: "/charges", headers: {}, body: new TextEncoder().encode("x") });
    const a = await rpcAt(gw, "acme", "claim", { key: "zombie", fingerprint: fp, lease_seconds: 1 });
    assert.equal(a.json.outcome, "claimed");
    // The lease is live: refused, with the time it has left.
    const early = await rpcAt(gw, "acme", "evict", { key: "zombie" });
    if (early.json.outcome === "in_flight") {
      assert.equal(early.json.generation, a.json.generation);
      assert.ok(early.json.retry_after_ms > 0 && early.json.retry_after_ms <= 1000);
    }
    // Once it has ended, the key goes (polled: the object's clock decides).
    const gone = await eventually(async () => {
      const r = await rpcAt(gw, "acme", "evict", { key: "zombie" });
      return r.json.outcome === "evicted" ? r.json : null;
    }, { ms: 30_000, every: 250 });
    assert.equal(gone.record.state, "in_flight");
    assert.equal(gone.record.generation, a.json.generation);
    // B claims the key again: above A's generation.
    const b = await rpcAt(gw, "acme", "claim", { key: "zombie", fingerprint: fp });
    assert.equal(b.json.outcome, "claimed");
    assert.ok(b.json.generation > a.json.generation, `B at ${b.json.generation}, A at ${a.json.generation}`);
    // A, late, is fenced out both ways; B completes.
    const late = await rpcAt(gw, "acme", "complete", { key: "zombie", generation: a.json.generation, response: stored(201, "A") });
    assert.equal(late.json.outcome, "fenced_out");
    assert.equal((await rpcAt(gw, "acme", "release", { key: "zombie", generation: a.json.generation })).json.outcome, "fenced_out");
    assert.equal((await rpcAt(gw, "acme", "complete", { key: "zombie", generation: b.json.generation, response: stored(201, "B") })).json.outcome, "stored");
    // The JS client: the same call.
    const client = LedgerClient.forTenant(await gw.mf.getDurableObjectNamespace("TENANT_LEDGER"), "acme");
    const byClient = await client.evict("zombie");
    assert.equal(byClient.outcome, "evicted");
    assert.equal(byClient.record.generation, b.json.generation);
    assert.deepEqual(await client.evict("zombie"), { outcome: "not_found" });
    // Bad calls are refused and change nothing.
    for (const call of [{}, { key: "" }, { key: "k", generation: 1 }, { key: "a\u0000b" }]) {
      const r = await rpcAt(gw, "acme", "evict", call);
      assert.equal(r.status, 400, JSON.stringify(call));
      assert.equal(slug(r.json), "invalid-rpc");
    }
    assert.equal((await rpcAt(gw, "acme", "stats", {})).json.evicted, 2);
  } finally {
    await gw.dispose();
  }
});

test("while resharding, JS RPC, TenantLedgers and the gateway evict a key from the layout that holds it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "evict-reshard-"));
  const origin = await startOrigin((req) => ({ status: 201, headers: { "content-type": "text/plain" }, body: `ran ${req.headers["idempotency-key"]}` }));
  // A settle grace (ORIGIN_TIMEOUT_SECONDS) of 5 minutes: far longer than this test runs.
  const windows = { LEASE_SECONDS: "600", ORIGIN_TIMEOUT_SECONDS: "300" };
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, OPERATOR_TOKENS, ...windows, ...vars }, shared: { resourcePersistencePath: dir }, workers: [rpcCaller()] });
  const rpcOf = async (gw) => {
    const worker = await gw.mf.getWorker("rpc-caller");
    return async (op, ...args) => (await worker.fetch("https://c/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
  };
  // The gateway's fingerprint of `post(key, "x")` (FINGERPRINT_HEADERS: content-type).
  const fp = await fingerprint({ method: "POST", target: "/charges", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new TextEncoder().encode("x") });
  const old = ["old-by-rpc", "old-by-client", "old-by-gateway"];
  try {
    // Before: one object; three keys complete there with a 500.
    const before = await start({});
    try {
      const rpc = await rpcOf(before);
      for (const key of old) {
        assert.equal((await rpc("claim", "acme", { key, fingerprint: fp })).outcome, "claimed");
        assert.equal((await rpc("complete", "acme", { key, generation: 1, response: stored(500, "boom") })).outcome, "stored");
      }
      // And one stays in flight, its lease one second long.
      assert.equal((await rpc("claim", "acme", { key: "old-busy", fingerprint: fp, lease_seconds: 1 })).outcome, "claimed");
      await eventually(async () => (await rpc("stats", "acme")).unwritten_counts === 0, { ms: 30_000 });
    } finally { await before.dispose(); }

    // After: four shards, the single object as the previous layout.
    const layout = '{"acme": {"shards": 4, "previous": 1}}';
    const after = await start({ TENANT_SHARDS: layout });
    try {
      const rpc = await rpcOf(after);
      const home = async (key) => shardObjectName("acme", await shardOf(key, 4), 4);
      // A new key lives in its current object only.
      assert.equal((await rpc("claim", "acme", { key: "new-key", fingerprint: fp })).outcome, "claimed");
      assert.equal((await rpc("complete", "acme", { key: "new-key", generation: 1, response: stored(400, "bad") })).outcome, "stored");
      assert.equal((await rpcAt(after, await home("new-key"), "lookup", { key: "new-key" })).json.record?.state, "completed");

      // JS RPC (LedgerService): the old key from the previous layout, the new one from its current object.
      const byRpc = await rpc("evict", "acme", "old-by-rpc");
      assert.equal(byRpc.outcome, "evicted", JSON.stringify(byRpc));
      assert.equal(byRpc.record.response_status, 500);
      assert.equal((await rpcAt(after, "acme", "lookup", { key: "old-by-rpc" })).json.record, null);
      const newGone = await rpc("evict", "acme", "new-key");
      assert.equal(newGone.outcome, "evicted");
      assert.equal(newGone.record.response_status, 400);
      assert.equal((await rpcAt(after, await home("new-key"), "lookup", { key: "new-key" })).json.record, null);
      assert.deepEqual(await rpc("evict", "acme", "new-key"), { outcome: "not_found" });

      // The in-flight key's lease has ended, but a retired shard keeps it until its owner can no longer
      // settle (the settle grace, ORIGIN_TIMEOUT_SECONDS): its next claim would be granted by another
      // object, which the evicted generation's floor does not reach.
      const busy = await rpc("evict", "acme", "old-busy");
      assert.equal(busy.outcome, "in_flight", JSON.stringify(busy));
      assert.ok(busy.retry_after_ms > 60_000, `waits out the grace: ${busy.retry_after_ms} ms`);
      assert.equal((await rpcAt(after, "acme", "lookup", { key: "old-busy" })).json.record?.state, "in_flight");

      // The npm package's TenantLedgers, routed as the gateway routes.
      const ledgers = new TenantLedgers(await after.mf.getDurableObjectNamespace("TENANT_LEDGER"), layout);
      const byClient = await ledgers.evict("acme", "old-by-client");
      assert.equal(byClient.outcome, "evicted");
      assert.equal((await rpcAt(after, "acme", "lookup", { key: "old-by-client" })).json.record, null);

      // The gateway: the old key replays its 500 until evicted, then runs again — in the current layout.
      assert.equal((await read(await after.request("/charges", post("old-by-gateway", "x")))).status, 500);
      const gone = await evict(after, "old-by-gateway");
      assert.equal(gone.status, 200, JSON.stringify(gone.json));
      assert.equal(gone.json.response_status, 500);
      for (const key of old) {
        const again = await read(await after.request("/charges", post(key, "x")));
        assert.equal(again.status, 201, key);
        assert.equal(again.text, `ran ${key}`);
        assert.equal((await rpcAt(after, await home(key), "lookup", { key })).json.record?.state, "completed", `${key} now lives in the current layout`);
      }
      const s = await stats(after);
      assert.equal(s.evicted, 4, "summed over both layouts");
      assert.equal(s.trend.reduce((n, m) => n + m.evicted, 0), 4);
      assert.equal((await rpc("stats", "acme")).evicted, 4, "JS RPC sums the same");
    } finally { await after.dispose(); }
  } finally {
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a key a previous layout kept in force still replays is evicted there through the gateway configured without it, and looked up there (issue 44, item 5)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "evict-kept-"));
  const runs = new Map();
  const origin = await startOrigin(async (req) => {
    const key = req.headers["idempotency-key"];
    runs.set(key, (runs.get(key) ?? 0) + 1);
    return { status: 201, headers: { "content-type": "text/plain" }, body: `run ${runs.get(key)} of ${key}` };
  });
  // Small windows: retention 6 s, so a reshard's window is 6 + 2 + 1 + 1 = 10 s.
  const windows = { RETENTION_SECONDS: "6", LEASE_SECONDS: "2", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" };
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, OPERATOR_TOKENS, ...windows, ...vars }, shared: { resourcePersistencePath: dir } });
  const YEAR = 31_536_000;
  try {
    // The one object completes a key with a stored 500 kept for a year (a caller's own retention).
    const one = await start({});
    try {
      const fp = await fingerprint({ method: "POST", target: "/charges", headers: post("poisoned").headers, body: new TextEncoder().encode("x") });
      const claim = await rpcAt(one, "acme", "claim", { key: "poisoned", fingerprint: fp, retention_seconds: YEAR });
      assert.equal(claim.json.outcome, "claimed", JSON.stringify(claim.json));
      const done = await rpcAt(one, "acme", "complete", { key: "poisoned", generation: 1, lease: claim.json.lease, response: stored(500, "poisoned"), retention_seconds: YEAR });
      assert.deepEqual(done.json, { outcome: "stored" });
    } finally { await one.dispose(); }
    // Resharded, then (past the window) "previous" dropped: the registry keeps the one object in force.
    const resharding = await start({ TENANT_SHARDS: '{"acme": {"shards": 2, "previous": 1}}' });
    try {
      assert.equal((await read(await resharding.request("/charges", post("warm-up", "x")))).status, 201);
    } finally { await resharding.dispose(); }
    await new Promise((r) => setTimeout(r, 11_000));
    const after = await start({ TENANT_SHARDS: '{"acme": 2}' });
    try {
      const replay = await read(await after.request("/charges", post("poisoned", "x")));
      assert.deepEqual([replay.status, replay.text, replay.headers["idempotent-replayed"]], [500, "poisoned", "true"], "the kept layout replays it");
      assert.ok(after.events("idempotency.previous_kept").length > 0, "the previous layout is kept in force");
      const seen = await lookup(after, "poisoned");
      assert.equal(seen.status, 200, `looked up where it lives: ${JSON.stringify(seen.json)}`);
      assert.equal(seen.json.response_status, 500);
      const gone = await evict(after, "poisoned");
      assert.equal(gone.status, 200, `evicted where it lives, not 404: ${JSON.stringify(gone.json)}`);
      assert.equal(gone.json.response_status, 500);
      assert.equal((await rpcAt(after, "acme", "lookup", { key: "poisoned" })).json.record, null, "gone from the kept layout");
      // Its next request runs again, by the operator's choice — once.
      const again = await read(await after.request("/charges", post("poisoned", "x")));
      assert.deepEqual([again.status, again.text], [201, "run 1 of poisoned"]);
      assert.equal(runs.get("poisoned"), 1, "the origin ran it once, after the eviction");
    } finally { await after.dispose(); }
  } finally {
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
