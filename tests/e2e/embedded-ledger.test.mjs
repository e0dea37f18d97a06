// The embedded Ledger (idempotency-ledger/ledger) in a user's own SQLite
// Durable Object (tests/e2e/workers/embedded-app.mjs), in workerd with
// the built wasm: what `run` may answer, transactions for every run,
// protected methods, a Ledger per request, counts that follow only what
// committed (nested and enclosing transactions), the flush timer, the
// recount on start, and the core's alarm rule.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { ledgerWorker } from "../../worker/testing.mjs";

/** Retries `check` (which asserts) until it passes or `timeoutMs` ends; the last failure is thrown. */
async function eventually(check, { timeoutMs = 30_000, every = 200 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try { return await check(); } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, every));
  }
}

const ROOT = new URL("../../", import.meta.url).pathname;
let mf;
before(async () => {
  const { modulesRoot, modules } = ledgerWorker();
  mf = new Miniflare(convertV4MiniflareOptions({
    workers: [{
      name: "shop",
      modulesRoot,
      modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/embedded-app.mjs` }, ...modules.filter((m) => !m.path.endsWith("worker/entry.mjs"))],
      compatibilityDate: "2026-08-15",
      durableObjects: { SHOP: { className: "Shop", useSQLite: true } },
    }],
  }));
});
after(async () => { await mf?.dispose(); });

let objects = 0;
/** A fresh object per test, so tests never see each other's records. */
const newObject = () => `shop-${++objects}-${Date.now()}`;
const send = async (object, { method = "POST", key = null, op = "ok", body = method === "GET" ? undefined : "{}", headers = {}, query = "" } = {}) => {
  const r = await mf.dispatchFetch(`https://shop/charges${query}`, {
    method, body,
    headers: { "x-object": object, "x-op": op, "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }), ...headers },
  });
  const text = await r.text();
  return { status: r.status, headers: Object.fromEntries(r.headers), text, json: text ? (() => { try { return JSON.parse(text); } catch { return undefined; } })() : undefined };
};
const read = async (object, key) => (await send(object, { method: "GET", op: "read", query: key === undefined ? "" : `?key=${encodeURIComponent(key)}` })).json;

test("a Ledger made with an option it does not know is a TypeError naming it (and ours, for another library's name)", async () => {
  const object = newObject();
  for (const [options, message] of [
    [{ ttl: 60 }, /unknown option "ttl" \(ours is "retentionSeconds"/],
    [{ maxKey: 3 }, /unknown option "maxKey" \(did you mean "maxKeys"\?\)/],
    [{ retentionSeconds: 60, leaseSeconds: 5 }, /unknown option "leaseSeconds"/],
  ]) {
    const r = await send(object, { op: "foreign-options", body: JSON.stringify(options) });
    assert.equal(r.status, 599, r.text);
    assert.equal(r.json.thrown, "TypeError");
    assert.match(r.json.message, message);
  }
  const ok = await send(object, { op: "foreign-options", body: JSON.stringify({ retentionSeconds: 60, maxKeys: 3 }) });
  assert.equal(ok.text, "accepted");
});

test("a run that returns a Response is refused with a TypeError and commits nothing; the key stays free", async () => {
  const o = newObject();
  const r = await send(o, { key: "resp-1", op: "response" });
  assert.equal(r.status, 599, r.text);
  assert.equal(r.json.thrown, "TypeError");
  assert.match(r.json.message, /not a Response/);
  let state = await read(o, "resp-1");
  assert.deepEqual(state.effects, [], "the run's own insert rolled back");
  assert.equal(state.lookup, null, "no record");
  // The same key then runs once with a plain answer, and replays it byte for byte.
  const ok = await send(o, { key: "resp-1" });
  assert.equal(ok.status, 201);
  const again = await send(o, { key: "resp-1" });
  assert.equal(again.text, ok.text);
  assert.equal(again.headers["idempotent-replayed"], "true");
  state = await read(o, "resp-1");
  assert.equal(state.effects.length, 1);
});

test("a json value JSON cannot encode is a TypeError, nothing committed (never an empty stored body)", async () => {
  const o = newObject();
  const r = await send(o, { key: "json-1", op: "bad-json" });
  assert.equal(r.status, 599, r.text);
  assert.equal(r.json.thrown, "TypeError");
  const state = await read(o, "json-1");
  assert.deepEqual(state.effects, []);
  assert.equal(state.lookup, null);
});

test("a keyless run (required: false) runs in a transaction: a throw or a Promise writes nothing", async () => {
  const o = newObject();
  const thrown = await send(o, { op: "throw" });
  assert.equal(thrown.status, 599);
  assert.match(thrown.json.message, /refused/);
  const promised = await send(o, { op: "promise" });
  assert.equal(promised.status, 599);
  assert.equal(promised.json.thrown, "TypeError");
  assert.match(promised.json.message, /synchronous/);
  assert.deepEqual((await read(o)).effects, [], "neither keyless run left its row");
  // A keyless run that answers commits its row, unprotected.
  const ok = await send(o, {});
  assert.equal(ok.status, 201);
  assert.deepEqual((await read(o)).effects, ["POST null {}"]);
});

test("protectedMethods: GET and PUT run unprotected without a key; POST without one is 400 where a key is required", async () => {
  const o = newObject();
  const get = await send(o, { method: "GET" });
  assert.equal(get.status, 200, get.text);
  assert.deepEqual(get.json, { key: null, method: "GET" });
  const put = await send(o, { method: "PUT", key: "ignored-for-put" });
  assert.equal(put.status, 201);
  assert.equal(put.json.key, null, "PUT is not protected: the key is not read");
  const state = await read(o);
  assert.deepEqual(state.effects, ["GET null ", "PUT null {}"]);
  assert.equal(state.stats.records, 0, "nothing recorded for unprotected methods");
  // The per-request Ledger there requires a key (the default): a keyless POST is the gateway's 400.
  const missing = await send(o, { op: "per-request" });
  assert.equal(missing.status, 400);
  assert.match(missing.json.type, /idempotency-key-missing/);
});

test("a Ledger made per request shares the object's counts: maxKeys holds", async () => {
  const o = newObject();
  for (const k of ["p1", "p2", "p3"]) assert.equal((await send(o, { key: k, op: "per-request" })).status, 201, k);
  assert.equal((await send(o, { key: "p1", op: "per-request" })).headers["idempotent-replayed"], "true");
  const full = await send(o, { key: "p4", op: "per-request" });
  assert.equal(full.status, 429, full.text);
  assert.match(full.json.type, /idempotency-ledger-full/);
  const state = await read(o);
  assert.equal(state.effects.length, 3);
  assert.equal(state.stats.completed, 3);
  assert.equal(state.row.completed, 3, "the record counts are in the row, written with each record");
});

test("a failing execute nested in a run is taken back alone; the outer commits", async () => {
  const o = newObject();
  const r = await send(o, { key: "outer-1", op: "nested", headers: { "x-inner": "inner-1" } });
  assert.equal(r.status, 201, r.text);
  const state = await read(o, "inner-1");
  assert.deepEqual(state.effects, ["outer outer-1"], "the inner run's row rolled back");
  assert.equal(state.lookup, null, "the inner key is free");
  assert.equal(state.stats.completed, 1);
  assert.equal(state.stats.claims, 1);
});

test("an execute inside the caller's transaction that rolls back is not counted: stats and the quota follow what committed", async () => {
  const o = newObject();
  const state = await send(o, { key: "enc-1", op: "enclosed", query: "?key=enc-1" }).then((r) => r.json);
  assert.deepEqual(state.effects, []);
  assert.equal(state.lookup, null);
  assert.equal(state.stats.completed, 0, JSON.stringify(state.stats));
  assert.equal(state.stats.claims, 0);
  assert.equal(state.stats.records, 0);
  assert.equal(state.row.completed, 0);
});

test("counts of outcomes that wrote nothing are written by the ledger's own timer when the object goes idle", async () => {
  const o = newObject();
  assert.equal((await send(o, { key: "idle-1" })).status, 201);
  assert.equal((await send(o, { key: "idle-1" })).headers["idempotent-replayed"], "true");
  // No further request is needed: the row shows the replay within the flush delay (2 s).
  await eventually(async () => {
    const { row } = await read(o);
    assert.equal(row.replays, 1, JSON.stringify(row));
  }, { timeoutMs: 15_000 });
});

test("a new object instance recounts the records it holds (a count an earlier instance got wrong is healed)", async () => {
  const o = newObject();
  for (const k of ["r1", "r2"]) assert.equal((await send(o, { key: k })).status, 201);
  await send(o, { op: "corrupt-and-restart" }).catch(() => {});
  await eventually(async () => {
    const state = await read(o);
    assert.equal(state.stats.completed, 2, JSON.stringify(state.stats));
    assert.equal(state.row.completed, 2);
  }, { timeoutMs: 15_000 });
});

test("after a full sweep batch the next alarm is the core's (within a second), as TenantLedger's", async () => {
  const o = newObject();
  const tag = Date.now();
  await send(o, { op: "short-sweep", query: `?n=3&tag=${tag}` });
  await eventually(async () => {
    const r = (await send(o, { op: "short-sweep", query: "?n=0&sweep=1" })).json;
    assert.equal(r.swept.deleted, 1, JSON.stringify(r));
    assert.equal(r.swept.batch_full, true);
    const ahead = r.swept.next_alarm_at - r.now;
    assert.ok(ahead > 0 && ahead <= 1_000, `next alarm ${ahead} ms ahead`);
  }, { timeoutMs: 20_000 });
});
