// Optional metrics (docs/operations.md "Metrics"): with an ANALYTICS
// Workers Analytics Engine dataset, every protected request writes one
// data point (outcome, method, tenant hash; status, duration, rows
// written; indexed by the tenant hash); without it nothing changes; an
// ANALYTICS that is not a dataset costs no answer: one error line per
// isolate, and traffic is served without metrics. The rows a data point
// holds are its request's own, however long it waited in the object.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ACME, GATEWAY_MODULES, ROOT, eventually, orderInit, startGateway, startOrigin } from "./harness.mjs";

const ENTRY = { type: "ESModule", path: `${ROOT}tests/e2e/workers/analytics-entry.mjs` };
const read = async (r) => ({ status: r.status, headers: Object.fromEntries(r.headers), text: await r.text() });

async function points(gw) {
  return (await gw.request("/__points")).json();
}

test("with ANALYTICS: one data point per protected request, with its outcome, status and the rows its objects wrote", async () => {
  const gw = await startGateway({ vars: { LOG_LEVEL: "warn" }, gateway: { modules: [ENTRY, ...GATEWAY_MODULES] } });
  try {
    assert.equal((await read(await gw.request("/health"))).status, 200);
    const fresh = await read(await gw.request("/v1/orders", orderInit({ key: "metrics-1" })));
    assert.equal(fresh.status, 201);
    const replay = await read(await gw.request("/v1/orders", orderInit({ key: "metrics-1" })));
    assert.equal(replay.headers["idempotent-replayed"], "true");
    const missing = await read(await gw.request("/v1/orders", orderInit({})));
    assert.equal(missing.status, 400);
    const got = await points(gw);
    assert.equal(got.length, 3, JSON.stringify(got)); // /health is not a decision
    const [a, b, c] = got;
    assert.deepEqual(a.blobs.slice(0, 2), ["executed", "POST"]);
    assert.match(a.blobs[2], /^[0-9a-f]{12}$/, "the tenant, hashed as in the log lines");
    assert.deepEqual(a.indexes, [a.blobs[2]]);
    assert.equal(a.doubles[0], 201);
    assert.ok(a.doubles[1] >= 0);
    // The order's row and the record (each with its index entry) at least.
    assert.ok(a.doubles[2] >= 3, `rows written ${a.doubles[2]}`);
    assert.deepEqual([b.blobs[0], b.doubles[0], b.doubles[2]], ["replayed", 201, 0]);
    assert.deepEqual([c.blobs[0], c.doubles[0], c.doubles[2]], ["key_missing", 400, 0]);
    assert.ok(got.every((p) => p.blobs[2] === a.blobs[2]));
  } finally { await gw.dispose(); }
});

test("without ANALYTICS the object's answers carry no rows header; with Miniflare's own dataset binding requests are answered as before", async () => {
  const plain = await startGateway({ vars: { LOG_LEVEL: "warn" } });
  try {
    assert.equal((await read(await plain.request("/v1/orders", orderInit({ key: "plain-1" })))).status, 201);
    const stub = await plain.ledger("acme");
    const r = await stub.fetch("https://tenant-ledger/rpc/v1/stats", { method: "POST", body: "{}" });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("ledger-rows-written"), null);
    await r.text();
  } finally { await plain.dispose(); }
  const real = await startGateway({ vars: { LOG_LEVEL: "warn" }, gateway: { analyticsEngineDatasets: { ANALYTICS: { dataset: "idempotency" } } } });
  try {
    assert.equal((await read(await real.request("/v1/orders", orderInit({ key: "real-1" })))).status, 201);
    const stub = await real.ledger("acme");
    const r = await stub.fetch("https://tenant-ledger/rpc/v1/stats", { method: "POST", body: "{}" });
    assert.match(r.headers.get("ledger-rows-written") ?? "", /^[0-9]+$/);
    await r.text();
    assert.equal(real.events("idempotency.analytics_failed").length, 0);
  } finally { await real.dispose(); }
});

test("an ANALYTICS that is a variable, not a dataset, costs no answer: traffic and replays served, one error line per isolate", async () => {
  const dir = mkdtempSync(join(tmpdir(), "analytics-var-"));
  const shared = { resourcePersistencePath: dir };
  try {
    // A key completed before the variable appears.
    const before = await startGateway({ shared });
    let done;
    try {
      done = await read(await before.request("/v1/orders", orderInit({ key: "before-change" })));
      assert.equal(done.status, 201);
    } finally { await before.dispose(); }

    const gw = await startGateway({ vars: { ANALYTICS: "off" }, shared });
    try {
      const replay = await read(await gw.request("/v1/orders", orderInit({ key: "before-change" })));
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.headers["idempotent-replayed"], "true");
      assert.equal(replay.text, done.text);
      const fresh = await read(await gw.request("/v1/orders", orderInit({ key: "after-change" })));
      assert.equal(fresh.status, 201, fresh.text);
      const again = await read(await gw.request("/v1/orders", orderInit({ key: "after-change" })));
      assert.equal(again.headers["idempotent-replayed"], "true");
      const stats = await read(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }));
      assert.equal(stats.status, 200, stats.text);
      assert.equal((await read(await gw.request("/health"))).status, 200);
      // The object serves without metering too: no rows header.
      const stub = await gw.ledger("acme");
      const r = await stub.fetch("https://tenant-ledger/rpc/v1/stats", { method: "POST", body: "{}" });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get("ledger-rows-written"), null);
      await r.text();
      // Loud, once: the gateway and its object share the isolate's one line.
      const lines = gw.events("idempotency.analytics_unusable");
      assert.equal(lines.length, 1, JSON.stringify(gw.events()));
      assert.equal(lines[0].variable, "ANALYTICS");
      assert.match(lines[0].error, /analytics_engine_datasets/);
      assert.equal(gw.events("idempotency.misconfigured").length, 0);
    } finally { await gw.dispose(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test("a request parked on an in-flight key is charged only the rows its own calls wrote, not those of keys that arrived meanwhile", async () => {
  let release;
  const held = new Promise((r) => { release = r; });
  const origin = await startOrigin(async (_req, n) => {
    if (n === 1) await held;
    return { status: 201, headers: { "content-type": "text/plain" }, body: `run ${n}` };
  });
  const gw = await startGateway({
    vars: { LOG_LEVEL: "warn", ORIGIN_URL: origin.url },
    gateway: { modules: [ENTRY, ...GATEWAY_MODULES] },
  });
  const post = (key, headers = {}) => ({
    method: "POST",
    headers: { authorization: ACME, "content-type": "text/plain", "idempotency-key": key, ...headers },
    body: "amount=100",
  });
  const stats = async () => (await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } })).json();
  try {
    const owner = gw.request("/charges", post("parked")).then(read);
    await origin.waitForRequests(1);
    const waiter = gw.request("/charges", post("parked", { prefer: "wait=30" })).then(read);
    await eventually(async () => (await stats()).waiting === 1);
    // Fresh keys written while the waiter is parked in the object.
    const FRESH = 50;
    const fresh = await Promise.all(Array.from({ length: FRESH }, (_, i) => gw.request("/charges", post(`fresh-${i}`)).then(read)));
    assert.ok(fresh.every((r) => r.status === 201));
    release();
    const [a, b] = await Promise.all([owner, waiter]);
    assert.equal(a.status, 201);
    assert.equal(b.headers["idempotent-replayed"], "true");
    const got = await eventually(async () => {
      const p = await points(gw);
      return p.length === FRESH + 2 ? p : null;
    });
    const rows = got.map((p) => p.doubles[2]);
    const replayed = got.filter((p) => p.blobs[0] === "replayed");
    assert.equal(replayed.length, 1, JSON.stringify(got.map((p) => p.blobs[0])));
    const freshRows = got.filter((p) => p !== replayed[0]).map((p) => p.doubles[2]);
    assert.ok(Math.min(...freshRows) >= 2, `each new key writes rows: ${rows}`);
    // Old code charged the waiter every row written while it waited (~2 × FRESH).
    assert.ok(replayed[0].doubles[2] <= Math.max(...freshRows),
      `the waiter's rows ${replayed[0].doubles[2]} exceed any one key's (${Math.max(...freshRows)}): others' rows were counted in`);
  } finally { await gw.dispose(); await origin.close(); }
});
