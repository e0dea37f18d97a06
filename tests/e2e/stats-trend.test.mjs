// The stats answer's per-minute trend and limits (docs/contract.md §2.7)
// through the built gateway: 60 minutes ending with the current one, every
// outcome counted (replays the replay cache answered too), no row written
// for it, kept across a restart; and the tenant's quotas beside its counts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, orderInit, read, json, eventually, ACME } from "./harness.mjs";

const stats = async (gw) => (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json;
const total = (trend, name) => trend.reduce((n, m) => n + m[name], 0);
const MINUTE = 60_000;

test("the trend: 60 minutes ending with the current one, each outcome counted, kept across a restart; the limits beside", async () => {
  const dir = mkdtempSync(join(tmpdir(), "trend-"));
  const vars = { MAX_KEYS_PER_TENANT: "5000", MAX_DB_BYTES_PER_OBJECT: "1048576" };
  const opts = { vars, shared: { resourcePersistencePath: dir } };
  try {
    const gw = await startGateway(opts);
    let shown;
    try {
      const before = Date.now();
      for (let i = 0; i < 5; i++) assert.equal((await read(await gw.request("/v1/orders", orderInit({ key: `t-${i}` })))).status, 201);
      // Six replays: the first from the object, the rest from the gateway's replay cache.
      for (let i = 0; i < 6; i++) assert.equal((await read(await gw.request("/v1/orders", orderInit({ key: "t-0" })))).headers["idempotent-replayed"], "true");
      assert.equal((await read(await gw.request("/v1/orders", orderInit({ key: "t-1", body: '{"sku":"X","quantity":1}' })))).status, 422);
      const s = await stats(gw);
      const after = Date.now();
      assert.equal(s.trend.length, 60);
      const last = Date.parse(s.trend[59].minute);
      assert.equal(last % MINUTE, 0, "a minute's start");
      assert.ok(last >= Math.floor(before / MINUTE) * MINUTE && last <= after, s.trend[59].minute);
      for (let i = 1; i < 60; i++) assert.equal(Date.parse(s.trend[i].minute) - Date.parse(s.trend[i - 1].minute), MINUTE);
      assert.deepEqual(Object.keys(s.trend[0]), ["minute", "claims", "replays", "in_use", "reused", "takeovers", "fenced_out", "swept", "evicted"]);
      // Everything happened within the hour: the trend adds up to the counters.
      for (const name of ["claims", "replays", "in_use", "reused", "takeovers", "fenced_out", "swept", "evicted"]) {
        assert.equal(total(s.trend, name), s[name], name);
      }
      assert.deepEqual([s.claims, s.replays, s.reused], [5, 6, 1]);
      assert.deepEqual(s.limits, { max_keys: 5000, max_db_bytes: 1048576 });
      // Written with the counters: once nothing is pending, a restart keeps it.
      await eventually(async () => (await stats(gw)).unwritten_counts === 0, { ms: 30_000 });
      shown = (await stats(gw)).trend;
    } finally { await gw.dispose(); }
    const again = await startGateway(opts);
    try {
      const s = await stats(again);
      assert.deepEqual([s.claims, s.replays, s.reused], [5, 6, 1]);
      const byMinute = (trend) => Object.fromEntries(trend.filter((m) => m.claims + m.replays + m.reused > 0).map((m) => [m.minute, m]));
      assert.deepEqual(byMinute(s.trend), byMinute(shown));
    } finally { await again.dispose(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
