// Tenants kept in a jurisdiction (TENANT_JURISDICTIONS): every object of
// such a tenant is created through `namespace.jurisdiction(J)`, and a
// change of a tenant's jurisdiction is refused before any key runs.
// Local workerd refuses `jurisdiction(J)` outright, so the routing is
// driven through a stand-in (tests/e2e/workers/jurisdiction-entry.mjs) that
// records the jurisdiction asked for each name and answers with a namespace
// of its own per jurisdiction: real TenantLedger objects, distinct from the
// unrestricted ones of the same name, as on the platform.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, startOrigin, read, json, slug, ROOT, ACME, GLOBEX, sha256hex, GATEWAY_MODULES, CLIENT_MODULES } from "./harness.mjs";
import { fingerprint, shardOf, shardObjectName } from "../../client/index.js";

const ENTRY = { type: "ESModule", path: `${ROOT}tests/e2e/workers/jurisdiction-entry.mjs` };
/** The gateway over the stand-in: TenantLedger unrestricted, TenantLedgerEu / TenantLedgerUs the jurisdictions' namespaces. */
const standIn = {
  modules: [ENTRY, ...GATEWAY_MODULES],
  durableObjects: {
    TENANT_LEDGER: { className: "TenantLedger", useSQLite: true },
    TENANT_LEDGER_EU: { className: "TenantLedgerEu", useSQLite: true },
    TENANT_LEDGER_US: { className: "TenantLedgerUs", useSQLite: true },
  },
};

/** An operator's token for acme: evicting a key through the gateway needs one. */
const OPERATOR = "Bearer operator-token-acme";
const OPERATOR_TOKENS = JSON.stringify({ [sha256hex("operator-token-acme")]: "acme" });

const post = (key, auth = ACME) => ({
  method: "POST",
  headers: { authorization: auth, "content-type": "text/plain", "idempotency-key": key },
  body: `charge ${key}`,
});

/** An origin that answers each key's run with its own body and counts runs per key. */
async function countingOrigin() {
  const runs = new Map();
  const origin = await startOrigin(async (req) => {
    const key = req.headers["idempotency-key"];
    runs.set(key, (runs.get(key) ?? 0) + 1);
    return { status: 201, headers: { "content-type": "text/plain" }, body: `ran ${key} #${runs.get(key)}` };
  });
  return { origin, runs };
}

/** The record of `key` in the object `name` of the namespace bound as `binding`, or null. */
async function lookupIn(gw, binding, name, key) {
  const ns = await gw.mf.getDurableObjectNamespace(binding);
  const r = await ns.get(ns.idFromName(name)).fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key }) });
  return (await r.json()).record;
}

test("a tenant kept in a jurisdiction: each of its shards and its registry is created through jurisdiction(J); other tenants are not", async () => {
  const { origin, runs } = await countingOrigin();
  const gw = await startGateway({
    vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": 4}', TENANT_JURISDICTIONS: '{"acme": "eu"}', OPERATOR_TOKENS },
    gateway: standIn,
  });
  try {
    const keys = Array.from({ length: 16 }, (_, i) => `eu-${i}`);
    for (const key of keys) assert.equal((await read(await gw.request("/charges", post(key)))).status, 201, key);
    for (const key of keys.slice(0, 4)) {
      const replay = await read(await gw.request("/charges", post(key)));
      assert.equal(replay.headers["idempotent-replayed"], "true", key);
      assert.equal(replay.text, `ran ${key} #1`);
    }
    assert.equal((await read(await gw.request("/charges", post("other-1", GLOBEX)))).status, 201);
    for (const key of keys) assert.equal(runs.get(key), 1, `${key} ran once`);

    // Every key is in its shard of the eu namespace, none in an unrestricted object.
    for (const key of keys) {
      const home = shardObjectName("acme", await shardOf(key, 4), 4);
      assert.equal((await lookupIn(gw, "TENANT_LEDGER_EU", home, key))?.state, "completed", key);
      assert.equal(await lookupIn(gw, "TENANT_LEDGER", home, key), null, `${key} is not in the unrestricted ${home}`);
    }
    // Reads find them there too.
    const stats = (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }))).json;
    assert.equal(stats.completed, 16);
    const intro = await read(await gw.request("/v1/idempotency-keys/eu-3", { headers: { authorization: ACME } }));
    assert.equal(intro.status, 200);
    // An eviction reaches the key's shard in eu (recorded below: only ever through "eu").
    const gone = await json(await gw.request("/v1/idempotency-keys/eu-3", { method: "DELETE", headers: { authorization: OPERATOR } }));
    assert.equal(gone.status, 200, JSON.stringify(gone.json));
    assert.equal(gone.json.state, "completed");
    const euHome = shardObjectName("acme", await shardOf("eu-3", 4), 4);
    assert.equal(await lookupIn(gw, "TENANT_LEDGER_EU", euHome, "eu-3"), null, "evicted from its shard in eu");

    const asked = await (await gw.request("/__names")).json();
    const of = (name) => new Set(asked.filter((a) => a.name === name).map((a) => a.jurisdiction));
    // Each shard, only ever through "eu"; the registry through "eu" (its one
    // unrestricted use: the check of where the tenant's keys live, which
    // holds no key).
    for (let i = 0; i < 4; i++) assert.deepEqual([...of(`acme/shard-${i}-of-4`)], ["eu"], `shard ${i}`);
    assert.ok(of("acme").has("eu"), "the registry is in eu");
    assert.equal(await lookupIn(gw, "TENANT_LEDGER", "acme", "eu-0"), null);
    // Another tenant is never routed through a jurisdiction.
    assert.deepEqual([...of("globex")], [null]);
  } finally { await gw.dispose(); await origin.close(); }
});

test("a changed jurisdiction is refused with 500 misconfigured naming TENANT_JURISDICTIONS, and no key runs: added to a tenant with keys, removed, or changed", async () => {
  const { origin, runs } = await countingOrigin();
  const dir = mkdtempSync(join(tmpdir(), "jurisdictions-"));
  const start = (jurisdictions) =>
    startGateway({
      vars: { ORIGIN_URL: origin.url, ...(jurisdictions ? { TENANT_JURISDICTIONS: jurisdictions } : {}) },
      gateway: standIn,
      shared: { resourcePersistencePath: dir },
    });
  /** Runs `fn` against a gateway started with `jurisdictions`, then stops it. */
  const under = async (jurisdictions, fn) => {
    const gw = await start(jurisdictions);
    try { return await fn(gw); } finally { await gw.dispose(); }
  };
  const refused = async (gw, key, auth = ACME) => {
    const r = await json(await gw.request("/charges", post(key, auth)));
    assert.equal(r.status, 500, `${key}: ${JSON.stringify(r.json)}`);
    assert.equal(slug(r.json), "misconfigured");
    assert.match(r.json.detail, /TENANT_JURISDICTIONS/);
  };
  try {
    // globex has unrestricted keys; acme is new and goes to eu.
    await under(null, async (gw) => {
      assert.equal((await read(await gw.request("/charges", post("g-1", GLOBEX)))).status, 201);
    });
    await under('{"acme": "eu"}', async (gw) => {
      assert.equal((await read(await gw.request("/charges", post("a-1")))).status, 201);
    });
    assert.equal(runs.get("a-1"), 1);

    // Adding a jurisdiction to a tenant that has unrestricted keys.
    await under('{"acme": "eu", "globex": "eu"}', async (gw) => {
      await refused(gw, "g-2", GLOBEX);
      await refused(gw, "g-1", GLOBEX); // not run again from an empty ledger
      const why = gw.events("idempotency.misconfigured").map((e) => e.error).join("\n");
      assert.match(why, /keys outside any jurisdiction/);
      assert.match(why, /docs\/migrating\.md/);
      // The tenant already in eu is served.
      const replay = await read(await gw.request("/charges", post("a-1")));
      assert.equal(replay.headers["idempotent-replayed"], "true");
    });
    // Removing a tenant's jurisdiction.
    await under(null, async (gw) => {
      await refused(gw, "a-2");
      await refused(gw, "a-1");
      assert.match(gw.events("idempotency.misconfigured").map((e) => e.error).join("\n"), /live in jurisdiction "eu".*no longer names it/);
      assert.equal((await read(await gw.request("/charges", post("g-1", GLOBEX)))).status, 201);
    });
    // Changing it.
    await under('{"acme": "us"}', async (gw) => {
      await refused(gw, "a-3");
      await refused(gw, "a-1");
      assert.match(gw.events("idempotency.misconfigured").map((e) => e.error).join("\n"), /live in jurisdiction "eu".*names "us"/);
    });
    for (const key of ["a-2", "a-3", "g-2"]) assert.equal(runs.get(key), undefined, `${key} never ran`);
    assert.equal(runs.get("a-1"), 1);
    assert.equal(runs.get("g-1"), 1);

    // Restored: the tenant's keys are where they were.
    await under('{"acme": "eu"}', async (gw) => {
      const replay = await read(await gw.request("/charges", post("a-1")));
      assert.equal(replay.headers["idempotent-replayed"], "true");
      assert.equal(replay.text, "ran a-1 #1");
      // A caller that does not route by the jurisdiction reaches the
      // unrestricted object: refused there, never served.
      const ns = await gw.mf.getDurableObjectNamespace("TENANT_LEDGER");
      const fp = await fingerprint({ method: "POST", target: "/x", headers: new Headers(), fingerprintHeaders: [], body: new Uint8Array() });
      const r = await json(await ns.get(ns.idFromName("acme")).fetch("https://l/rpc/v1/claim", {
        method: "POST",
        body: JSON.stringify({ key: "a-4", fingerprint: fp }),
      }));
      assert.equal(r.status, 500, JSON.stringify(r.json));
      assert.equal(slug(r.json), "misconfigured");
      assert.match(gw.events("idempotency.misconfigured").map((e) => e.error).join("\n"), /not in the tenant's jurisdiction "eu"/);
    });
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("a sharded tenant's jurisdiction removed: each shard's first keyed call is refused by its registry, naming TENANT_JURISDICTIONS, and nothing runs", async () => {
  const { origin, runs } = await countingOrigin();
  const dir = mkdtempSync(join(tmpdir(), "jurisdictions-sharded-"));
  const start = (vars) => startGateway({ vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": 2}', ...vars }, gateway: standIn, shared: { resourcePersistencePath: dir } });
  try {
    const before = await start({ TENANT_JURISDICTIONS: '{"acme": "eu"}' });
    try {
      for (const key of ["s-1", "s-2", "s-3"]) assert.equal((await read(await before.request("/charges", post(key)))).status, 201);
    } finally { await before.dispose(); }
    const after = await start({});
    try {
      for (const key of ["s-1", "s-4", "s-5", "s-6"]) {
        const r = await json(await after.request("/charges", post(key)));
        assert.equal(r.status, 500, `${key}: ${JSON.stringify(r.json)}`);
        assert.equal(slug(r.json), "misconfigured");
        assert.match(r.json.detail, /TENANT_JURISDICTIONS/, key);
      }
      assert.match(after.events("idempotency.misconfigured").map((e) => e.error).join("\n"), /live in jurisdiction "eu".*no longer names it/);
    } finally { await after.dispose(); }
    for (const key of ["s-4", "s-5", "s-6"]) assert.equal(runs.get(key), undefined, `${key} never ran`);
    assert.equal(runs.get("s-1"), 1);
  } finally { await origin.close(); rmSync(dir, { recursive: true, force: true }); }
});

test("without a runtime that keeps jurisdictions (local workerd), a tenant kept in one is refused with 500 misconfigured, never served unrestricted", async () => {
  const { origin, runs } = await countingOrigin();
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, TENANT_JURISDICTIONS: '{"acme": "eu"}' } });
  try {
    const r = await json(await gw.request("/charges", post("local-1")));
    assert.equal(r.status, 500);
    assert.equal(slug(r.json), "misconfigured");
    assert.match(r.json.detail, /TENANT_JURISDICTIONS/);
    assert.equal(runs.get("local-1"), undefined);
    assert.match(gw.events("idempotency.misconfigured").map((e) => e.error).join("\n"), /not implemented in workerd/);
    // Other tenants are served.
    assert.equal((await read(await gw.request("/charges", post("local-2", GLOBEX)))).status, 201);
  } finally { await gw.dispose(); await origin.close(); }
});

test("the package's jurisdiction option — withIdempotency, ledgerStore, LedgerClient.forTenant, Workflows once — and LedgerService reach the tenant's objects in its jurisdiction; without it they are refused, never served unrestricted", async () => {
  const app = {
    name: "app",
    modulesRoot: ROOT,
    modules: [
      { type: "ESModule", path: `${ROOT}tests/e2e/workers/jurisdiction-app.mjs` },
      ...CLIENT_MODULES,
    ],
    compatibilityDate: "2026-11-01",
    durableObjects: {
      LEDGER: { className: "TenantLedger", scriptName: "gateway" },
      LEDGER_EU: { className: "TenantLedgerEu", scriptName: "gateway" },
    },
    serviceBindings: { SERVICE: { name: "gateway", entrypoint: "LedgerService" } },
  };
  const gw = await startGateway({ vars: { TENANT_JURISDICTIONS: '{"acme": "eu"}' }, gateway: standIn, workers: [app] });
  try {
    const worker = await gw.mf.getWorker("app");
    const call = (path, key, headers = {}) =>
      worker.fetch(`https://app${path}`, { method: "POST", headers: { "idempotency-key": key, "content-type": "text/plain", ...headers }, body: key });
    const eu = { "x-jurisdiction": "eu" };

    // withIdempotency: runs once, replays, and the record is in the eu object.
    const first = await read(await call("/wrapped", "mw-1", eu));
    assert.equal(first.status, 201, first.text);
    const again = await read(await call("/wrapped", "mw-1", eu));
    assert.equal(again.headers["idempotent-replayed"], "true");
    // ledgerStore, LedgerClient.forTenant, LedgerService: each claims in the eu object.
    const store = await json(await call("/store", "store-1", eu));
    assert.equal(store.json.ok, true, store.text);
    assert.equal((await json(await call("/client", "client-1", eu))).json.outcome, "claimed");
    assert.equal((await json(await call("/service", "service-1"))).json.outcome, "claimed");
    for (const key of ["mw-1", "store-1", "client-1", "service-1"]) {
      assert.ok(await lookupIn(gw, "TENANT_LEDGER_EU", "acme", key), `${key} is in the eu object`);
      assert.equal(await lookupIn(gw, "TENANT_LEDGER", "acme", key), null, `${key} is not in the unrestricted object`);
    }
    const { asked, runs } = await (await worker.fetch("https://app/asked")).json();
    assert.ok(asked.length >= 3 && asked.every((j) => j === "eu"), JSON.stringify(asked));
    assert.equal(runs, 1);

    // Without the option, the same tenant reaches its unrestricted object: refused there, nothing runs.
    const bare = await read(await call("/wrapped", "mw-2"));
    assert.ok(bare.status >= 500, `${bare.status} ${bare.text}`);
    const client = await json(await call("/client", "client-2"));
    assert.equal(client.status, 500, client.text);
    assert.equal(client.json.problem.type.split("/").pop(), "misconfigured");
    // On a runtime that keeps no jurisdictions (the real local binding): 500 misconfigured, nothing runs.
    const local = await json(await call("/wrapped?real=1", "mw-3", eu));
    assert.equal(local.status, 500, local.text);
    assert.equal(local.json.type.split("/").pop(), "misconfigured");
    assert.match(local.json.detail, /TENANT_JURISDICTIONS/);
    assert.equal((await (await worker.fetch("https://app/asked")).json()).runs, 1, "no handler ran again");
    for (const key of ["mw-2", "mw-3"]) assert.equal(await lookupIn(gw, "TENANT_LEDGER", "acme", key), null, key);

    // Workflows `once` with `jurisdiction`: the effect runs once, in the eu object; without it, refused and nothing runs.
    for (let i = 0; i < 2; i++) {
      const wf = await json(await call("/workflow", "wf-1", eu));
      assert.deepEqual(wf.json, { ran: 2 }, wf.text);
    }
    assert.equal((await lookupIn(gw, "TENANT_LEDGER_EU", "acme", "wf-1"))?.state, "completed");
    assert.equal(await lookupIn(gw, "TENANT_LEDGER", "acme", "wf-1"), null);
    const unrouted = await json(await call("/workflow", "wf-2"));
    assert.equal(unrouted.status, 500, unrouted.text);
    assert.equal((await (await worker.fetch("https://app/asked")).json()).runs, 2, "the unrouted workflow ran nothing");
    assert.equal(await lookupIn(gw, "TENANT_LEDGER", "acme", "wf-2"), null);
  } finally { await gw.dispose(); }
});
