// A large schema-1 ledger upgrades in bounded steps (docs/operations.md):
// the built TenantLedger starts over a v1 database of 100,000 records
// (tests/e2e/workers/v1-ledger.mjs), answers 503 with Retry-After while
// records are still moving, carries the upgrade on by its alarm with no
// traffic, and then serves every record and counter it had.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, GATEWAY_MODULES } from "./harness.mjs";

const ROOT = new URL("../../", import.meta.url).pathname;
let gw;
before(async () => {
  gw = await startGateway({
    gateway: {
      modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/v1-ledger.mjs` }, ...GATEWAY_MODULES],
      durableObjects: { TENANT_LEDGER: { className: "V1Ledger", useSQLite: true } },
    },
  });
});
after(async () => { await gw?.dispose(); });

const rpc = async (object, call, body) => {
  const stub = await gw.ledger(object);
  const r = await stub.fetch(`https://ledger/rpc/v1/${call}`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, headers: Object.fromEntries(r.headers), json: await r.json() };
};

test("a 100,000-record v1 ledger answers 503 with Retry-After while it upgrades, finishes by its alarm, and keeps every record", async () => {
  const first = await rpc("big-v1", "lookup", { key: "v1-000042" });
  assert.equal(first.status, 503, JSON.stringify(first.json));
  assert.equal(first.headers["retry-after"], "1");
  assert.match(first.json.detail, /upgrading/);
  assert.ok(gw.events("idempotency.schema_upgraded").some((e) => e.from === 1), "the upgrade began");
  // No further request: the alarm carries it on. Then every record is there.
  const deadline = Date.now() + 60_000;
  while (!gw.events("idempotency.schema_upgrade_done").length) {
    assert.ok(Date.now() < deadline, "the upgrade finished before the deadline");
    await new Promise((r) => setTimeout(r, 250));
  }
  const looked = await rpc("big-v1", "lookup", { key: "v1-000042" });
  assert.equal(looked.status, 200, JSON.stringify(looked.json));
  assert.equal(looked.json.record.state, "completed");
  const stats = (await rpc("big-v1", "stats", {})).json;
  assert.equal(stats.records, 100_000);
  assert.equal(stats.completed, 100_000);
  assert.equal(stats.claims, 100_000, "the v1 counters were kept");
  assert.equal(stats.replays, 7);
});
