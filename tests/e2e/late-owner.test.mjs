// A late owner's settlement names the grant it settles (its lease token),
// so it never settles another grant of the same generation — replayed
// against real objects from the counterexample of issue 44, item 1: a JS
// owner holds a key at the tenant's single object; the tenant is resharded
// (`{"shards": 2, "previous": 1}`); the key's record is evicted from the
// previous layout; a second owner claims it at its shard, granted the same
// generation 1. Sent through `LedgerService` (the JS `TenantLedgers`
// routing: previous layout first, on 421 the current one), the first
// owner's late `release` and `complete` reach the shard and must be fenced
// out there, never release the second owner's live claim nor store the
// first owner's answer over it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, eventually, rpcCaller } from "./harness.mjs";
import { fingerprint, shardOf, shardObjectName } from "../../client/index.js";

test("a late owner's release and complete, presenting their lease token, are fenced out by another object's grant of the same generation", async () => {
  const dir = mkdtempSync(join(tmpdir(), "late-owner-"));
  // A retired object evicts an in-flight record once its lease and ORIGIN_TIMEOUT_SECONDS have
  // passed (the gateway's own owners are bounded by it; a JS owner is not: this one outlives both).
  const start = (vars) => startGateway({ vars: { ORIGIN_TIMEOUT_SECONDS: "1", ...vars }, shared: { resourcePersistencePath: dir }, workers: [rpcCaller()] });
  const rpcOf = async (gw) => {
    const worker = await gw.mf.getWorker("rpc-caller");
    return async (op, ...args) => (await worker.fetch("https://c/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
  };
  const fp = await fingerprint({ method: "POST", target: "/charges", headers: {}, body: new TextEncoder().encode("card=4242") });
  const answer = (text) => ({ status: 201, headers: [["content-type", "text/plain"]], body: Buffer.from(text).toString("base64") });
  const keys = ["pay-release", "pay-complete"];
  try {
    // A (the first owner) claims both keys on the unsharded tenant, under a 2 s lease.
    const before = await start({});
    /** @type {Record<string, { generation: number; lease: string }>} */
    const a = {};
    try {
      const rpc = await rpcOf(before);
      for (const key of keys) {
        const granted = await rpc("claim", "acme", { key, fingerprint: fp, lease_seconds: 2 });
        assert.equal(granted.outcome, "claimed", JSON.stringify(granted));
        assert.equal(granted.generation, 1);
        assert.match(granted.lease, /^[0-9a-f]{32}$/);
        a[key] = granted;
      }
    } finally { await before.dispose(); }

    // The tenant is resharded; A's lease ends and the operator evicts the keys.
    const after = await start({ TENANT_SHARDS: '{"acme": {"shards": 2, "previous": 1}}' });
    try {
      const rpc = await rpcOf(after);
      for (const key of keys) {
        await eventually(async () => (await rpc("evict", "acme", key)).outcome === "evicted", { ms: 30_000 });
      }
      // B claims each key at its shard: generation 1 again, under its own token and a 60 s lease.
      /** @type {Record<string, { generation: number; lease: string }>} */
      const b = {};
      for (const key of keys) {
        const granted = await rpc("claim", "acme", { key, fingerprint: fp, lease_seconds: 60 });
        assert.equal(granted.outcome, "claimed", JSON.stringify(granted));
        assert.equal(granted.generation, 1, "the shard grants the same generation the evicted record had");
        assert.notEqual(granted.lease, a[key].lease);
        b[key] = granted;
        const home = shardObjectName("acme", await shardOf(key, 2), 2);
        const stub = (await after.mf.getDurableObjectNamespace("TENANT_LEDGER"));
        const at = await (await stub.get(stub.idFromName(home)).fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key }) })).json();
        assert.equal(at.record?.state, "in_flight", `${key} is B's, at its shard`);
      }

      // A's late release: fenced out by B's grant, which stands.
      const released = await rpc("release", "acme", { key: "pay-release", generation: 1, lease: a["pay-release"].lease });
      assert.deepEqual(released, { outcome: "fenced_out", current: { state: "in_flight", generation: 1 } });
      const third = await rpc("claim", "acme", { key: "pay-release", fingerprint: fp });
      assert.equal(third.outcome, "in_flight", `a third owner must not run beside B: ${JSON.stringify(third)}`);

      // A's late completion: fenced out; the key is still B's to complete.
      const completed = await rpc("complete", "acme", { key: "pay-complete", generation: 1, lease: a["pay-complete"].lease, response: answer("A's charge") });
      assert.equal(completed.outcome, "fenced_out", JSON.stringify(completed));
      const meanwhile = await rpc("claim", "acme", { key: "pay-complete", fingerprint: fp });
      assert.equal(meanwhile.outcome, "in_flight", `no answer of A's is replayed while B runs: ${JSON.stringify(meanwhile)}`);

      // B settles with its own token; its answer is the one replayed.
      assert.deepEqual(await rpc("complete", "acme", { key: "pay-complete", generation: 1, lease: b["pay-complete"].lease, response: answer("B's charge") }), { outcome: "stored" });
      const replay = await rpc("claim", "acme", { key: "pay-complete", fingerprint: fp });
      assert.equal(replay.outcome, "completed");
      assert.equal(Buffer.from(replay.response.body, "base64").toString(), "B's charge");
      assert.deepEqual(await rpc("release", "acme", { key: "pay-release", generation: 1, lease: b["pay-release"].lease }), { outcome: "released" });
    } finally { await after.dispose(); }
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
