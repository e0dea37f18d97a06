// The alarm-driven bounded sweep (docs/contract.md §4) in workerd: records disappear by
// alarm only after their window, a backlog clears over several bounded
// alarms, and an object re-arms its alarm after a restart.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, orderInit, read, json, orders, eventually, ACME } from "./harness.mjs";

const stats = async (gw) => (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json;

test("expired records are swept by alarm; a swept key then runs as a new operation", async () => {
  const gw = await startGateway({ vars: { RETENTION_SECONDS: "5", LEASE_SECONDS: "2", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" } });
  try {
    const first = await json(await gw.request("/v1/orders", orderInit({ key: "sweep-1" })));
    assert.equal(first.status, 201);
    const s = await stats(gw);
    assert.equal(s.records, 1);
    assert.ok(s.next_sweep_at, "an expiry is scheduled");
    assert.equal((await gw.request("/v1/idempotency-keys/sweep-1", { headers: { authorization: ACME } })).status, 200,
      "inside its window the record is there");

    await eventually(async () => (await stats(gw)).records === 0, { ms: 60_000 });
    const after = await stats(gw);
    assert.equal(after.swept, 1);
    assert.equal(after.next_sweep_at, null);
    assert.equal((await gw.request("/v1/idempotency-keys/sweep-1", { headers: { authorization: ACME } })).status, 404);
    assert.ok(gw.events("idempotency.sweep").some((e) => e.deleted === 1));

    const again = await read(await gw.request("/v1/orders", orderInit({ key: "sweep-1" })));
    assert.equal(again.status, 201);
    assert.equal(again.headers["idempotent-replayed"], undefined, "a new operation, not a replay");
    assert.equal((await orders(gw)).length, 2);
  } finally { await gw.dispose(); }
});

test("claims arm the alarm once, not on every request", async () => {
  const gw = await startGateway();
  try {
    for (let i = 0; i < 20; i++) {
      assert.equal((await json(await gw.request("/v1/orders", orderInit({ key: `arm-${i}` })))).status, 201);
    }
    assert.equal(gw.events("idempotency.alarm_armed").length, 1);
    assert.ok((await stats(gw)).next_sweep_at);
  } finally { await gw.dispose(); }
});

test("a backlog of 3,000 expired records clears over several alarms, each within SWEEP_BATCH", async () => {
  const gw = await startGateway({ vars: { SWEEP_BATCH: "500", SWEEP_INTERVAL_SECONDS: "1" } });
  try {
    const ledger = await gw.ledger("backlog");
    const fingerprint = { digest: "", components: [{ name: "body", digest: "a".repeat(64) }] };
    // Mirror of Fingerprint::from_components for the one-component fingerprint.
    const { createHash } = await import("node:crypto");
    const len = (s) => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(s.length)); return b; };
    fingerprint.digest = createHash("sha256")
      .update(Buffer.concat([len("body"), Buffer.from("body"), len("a".repeat(64)), Buffer.from("a".repeat(64))]))
      .digest("hex");
    const claim = (i) => ledger.fetch("https://ledger/rpc/v1/claim", {
      method: "POST",
      body: JSON.stringify({ key: `backlog-${i}`, fingerprint, lease_seconds: 1, retention_seconds: 1 }),
    }).then((r) => r.json());
    for (let start = 0; start < 3000; start += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, (_, j) => claim(start + j)));
      assert.ok(batch.every((o) => o.outcome === "claimed"));
    }
    const statsOf = async () => (await (await ledger.fetch("https://ledger/rpc/v1/stats", { method: "POST", body: "{}" })).json());
    await eventually(async () => (await statsOf()).records === 0, { ms: 120_000, every: 500 });
    const s = await statsOf();
    assert.equal(s.swept, 3000);
    const sweeps = gw.events("idempotency.sweep").filter((e) => e.deleted > 0);
    assert.ok(sweeps.every((e) => e.deleted <= 500), `batches: ${sweeps.map((e) => e.deleted)}`);
    assert.ok(sweeps.length >= 6, `3,000 records need at least 6 alarms, saw ${sweeps.length}`);
    assert.equal(sweeps.reduce((n, e) => n + e.deleted, 0), 3000);
  } finally { await gw.dispose(); }
});

test("after a restart the object re-arms its alarm and the sweep still happens", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ledger-persist-"));
  try {
    const opts = { vars: { RETENTION_SECONDS: "2", LEASE_SECONDS: "1", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" }, shared: { resourcePersistencePath: dir } };
    const gw1 = await startGateway(opts);
    assert.equal((await json(await gw1.request("/v1/orders", orderInit({ key: "restart-1" })))).status, 201);
    await gw1.dispose();

    const gw2 = await startGateway(opts);
    try {
      // The first request to the restarted object checks (and if needed re-sets) its alarm.
      await eventually(async () => (await stats(gw2)).records === 0, { ms: 60_000 });
      assert.equal((await stats(gw2)).swept, 1);
      assert.equal((await orders(gw2)).length, 1, "the order itself persisted across the restart");
    } finally { await gw2.dispose(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test("a retention shortened across a restart moves the alarm earlier: new records are swept on time", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ledger-retention-"));
  try {
    const shared = { resourcePersistencePath: dir };
    // One record under the default retention arms the alarm a day out.
    const before = await startGateway({ shared });
    assert.equal((await json(await before.request("/v1/orders", orderInit({ key: "long-lived" })))).status, 201);
    await before.dispose();

    const after = await startGateway({ shared, vars: { RETENTION_SECONDS: "2", LEASE_SECONDS: "1", ORIGIN_TIMEOUT_SECONDS: "1", SWEEP_INTERVAL_SECONDS: "1" } });
    try {
      for (let i = 0; i < 40; i++) {
        assert.equal((await json(await after.request("/v1/orders", orderInit({ key: `short-${i}` })))).status, 201);
      }
      await eventually(async () => (await stats(after)).swept >= 40, { ms: 45_000, every: 500 });
      const s = await stats(after);
      assert.equal(s.records, 1, "only the day-long record is left");
      assert.equal((await json(await after.request("/v1/idempotency-keys/long-lived", { headers: { authorization: ACME } }))).status, 200);
    } finally { await after.dispose(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
