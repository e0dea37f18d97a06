// Optional metrics (docs/operations.md "Metrics"): with an ANALYTICS
// Workers Analytics Engine dataset, every protected request writes one
// data point (outcome, method, tenant hash; status, duration, rows
// written; indexed by the tenant hash); without it nothing changes; an
// ANALYTICS that is not a dataset costs no answer: one error line per
// isolate, and traffic is served without metrics.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ACME, GATEWAY_MODULES, ROOT, orderInit, startGateway } from "../workerd.mjs";

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
