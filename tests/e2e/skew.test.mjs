// Callers and objects on different configurations (issue 44, item 2): the
// object that holds a key decides where it lives, never a caller's own
// TENANT_SHARDS. Apps (tests/e2e/workers/skewed-app.mjs: withIdempotency
// and TenantLedgers with their own TENANT_SHARDS) call the deployed
// TenantLedger while the ledger's Worker is redeployed over the same
// stored state with another layout, as an operator does; a real origin
// counts every run of every key.
//   1. The replay of the counterexample: a key completed before a
//      reshard is sent again by an app configured with the current layout
//      alone (`{"acme": 2}`): replayed, never run again.
//   2. A seeded model of skew: apps on every configuration (unsharded,
//      resharding with "previous", the current layout alone) send keys in
//      random order through a reshard of the ledger, some owners
//      outliving their lease, an eviction during the reshard: no key runs
//      twice while its record holds it, checked against the origin's count.
//      One seed in `npm test`; `SEEDS=n` for more (harness `seeds`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, startOrigin, rpcCaller, seeds, Rng, ROOT, CLIENT_MODULES } from "./harness.mjs";

const RESHARDED = '{"acme": {"shards": 2, "previous": 1}}';
const CURRENT_ONLY = '{"acme": 2}';

/** An app Worker with its own TENANT_SHARDS (`null`: unsharded), bound to the gateway's TenantLedger. */
function app(name, appShards, origin, extra = {}) {
  return {
    name,
    modulesRoot: ROOT,
    modules: [{ type: "ESModule", path: `${ROOT}tests/e2e/workers/skewed-app.mjs` }, ...CLIENT_MODULES],
    compatibilityDate: "2026-11-01",
    durableObjects: { LEDGER: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
    bindings: { ORIGIN_URL: origin.url, ...(appShards === null ? {} : { APP_TENANT_SHARDS: appShards }), ...extra },
  };
}

/** A real origin: every run of the apps' handlers, counted by key. */
async function countingOrigin() {
  const runs = new Map();
  const origin = await startOrigin(async (req) => {
    const key = req.headers["idempotency-key"];
    runs.set(key, (runs.get(key) ?? 0) + 1);
    return { status: 200, body: `ran ${key} #${runs.get(key)}` };
  });
  return { origin, runs };
}

const charge = (gw, appName, key, body = "card=4242") => gw.mf.getWorker(appName)
  .then((w) => w.fetch("https://app/charge", { method: "POST", headers: { "idempotency-key": key, "content-type": "text/plain" }, body }));

test("a key completed before a reshard is replayed to an app configured with the current layout alone, never run again", async () => {
  const dir = mkdtempSync(join(tmpdir(), "skew-"));
  const { origin, runs } = await countingOrigin();
  const apps = [app("app-unsharded", null, origin), app("app-current", CURRENT_ONLY, origin), app("app-resharded", RESHARDED, origin)];
  const start = (vars) => startGateway({ vars, shared: { resourcePersistencePath: dir }, workers: apps });
  try {
    const before = await start({});
    try {
      const first = await charge(before, "app-unsharded", "pay-1");
      assert.equal(first.status, 201, await first.clone().text());
      assert.equal(await first.text(), "ran pay-1 #1");
    } finally { await before.dispose(); }

    // The ledger's Worker is redeployed resharding acme; one app names the current layout alone.
    const after = await start({ TENANT_SHARDS: RESHARDED });
    try {
      const again = await charge(after, "app-current", "pay-1");
      assert.equal(again.headers.get("idempotent-replayed"), "true", "replayed from the previous layout");
      assert.equal(await again.text(), "ran pay-1 #1");
      const worker = await after.mf.getWorker("app-current");
      const claimed = await (await worker.fetch("https://app/raw/claim", { method: "POST", body: JSON.stringify({ key: "pay-1", body: "card=4242" }) })).json();
      assert.notEqual(claimed.outcome, "claimed", JSON.stringify(claimed));

      // A fresh key through the current layout alone runs once, at its shard; the
      // resharding app then replays it, and the unsharded (lagging) app is refused
      // by the retired object: loud, never a second run.
      const fresh = await charge(after, "app-current", "pay-2");
      assert.equal(fresh.status, 201, await fresh.clone().text());
      const replay = await charge(after, "app-resharded", "pay-2");
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      const lagging = await charge(after, "app-unsharded", "pay-2");
      assert.notEqual(lagging.status, 201, "a lagging caller is refused by the retired object, not served");
      assert.equal(runs.get("pay-1"), 1);
      assert.equal(runs.get("pay-2"), 1);
    } finally { await after.dispose(); }
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

for (const seed of seeds(4401)) {
  test(`skew model, seed ${seed}: apps on every configuration through a reshard, late owners and an eviction; no key runs twice while its record holds it`, async () => {
    const rng = new Rng(seed);
    const dir = mkdtempSync(join(tmpdir(), "skew-model-"));
    const { origin, runs } = await countingOrigin();
    const configs = { "app-unsharded": null, "app-resharded": RESHARDED, "app-current": CURRENT_ONLY };
    // A short lease for "hold" bodies: their owner sleeps past it (a late owner).
    const apps = Object.entries(configs).map(([name, shards]) => app(name, shards, origin, { APP_LEASE_SECONDS: "2", HOLD_MS: "3000" }));
    const keys = Array.from({ length: 10 }, (_, i) => `k-${seed}-${i}`);
    /** Keys whose record the test evicted (the operator's choice to run them again). */
    const evicted = new Set();
    const start = (vars) => startGateway({ vars: { ORIGIN_TIMEOUT_SECONDS: "1", ...vars }, shared: { resourcePersistencePath: dir }, workers: [...apps, rpcCaller()] });
    /** Sends `n` random requests, `concurrent` at a time, from apps `from`. */
    const traffic = async (gw, from, n, concurrent = 4) => {
      const pending = [];
      for (let i = 0; i < n; i++) {
        const key = rng.pick(keys);
        const body = rng.chance(1 / 6) ? "hold" : "card=4242";
        const appName = rng.pick(from);
        pending.push(charge(gw, appName, key, body).then((r) => r.text()).catch(() => null));
        if (pending.length >= concurrent) await Promise.all(pending.splice(0));
      }
      await Promise.all(pending);
    };
    try {
      // Before: the ledger unsharded; the apps' deploys land in seeded order, so
      // callers ahead of the ledger send their keys too.
      const before = await start({});
      try {
        await traffic(before, ["app-unsharded", ...(rng.chance(0.5) ? ["app-resharded"] : [])], 12);
      } finally { await before.dispose(); }
      // After: the ledger resharded; every app, on its own configuration, keeps sending.
      const after = await start({ TENANT_SHARDS: rng.chance(0.5) ? RESHARDED : CURRENT_ONLY });
      try {
        await traffic(after, Object.keys(configs), 16);
        // An eviction during the reshard (of a key whose lease has ended), then more traffic.
        const worker = await after.mf.getWorker("rpc-caller");
        const victim = rng.pick(keys);
        const out = await (await worker.fetch("https://c/", { method: "POST", body: JSON.stringify({ op: "evict", args: ["acme", victim] }) })).json();
        if (out.outcome === "evicted") evicted.add(victim);
        await traffic(after, Object.keys(configs), 16);
        // Late owners finish (HOLD_MS), then their settlements land or are fenced out.
        await new Promise((r) => setTimeout(r, 3_500));
      } finally { await after.dispose(); }
      for (const key of keys) {
        const n = runs.get(key) ?? 0;
        // A run after the key's lease ended unsettled (a late owner) is the contract's
        // takeover; two runs while one owner held a live lease, or after a completion
        // was stored, are not. An evicted key may run once more by the operator's choice.
        const allowed = 1 + (evicted.has(key) ? 1 : 0) + lateOwners(key);
        assert.ok(n <= allowed, `seed ${seed}: ${key} ran ${n} times (at most ${allowed})`);
      }
    } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }

    /** Runs a key may take over from owners that outlived their lease: one per "hold" run. */
    function lateOwners(key) {
      return origin.requests.filter((r) => r.headers["idempotency-key"] === key && r.body.toString() === "hold").length;
    }
  });
}
