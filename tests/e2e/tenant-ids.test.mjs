// Tenant ids of any shape (docs/contract.md §2.1): scope-style ids such as
// `api-key:123`, `org/team`, an email or a 200-byte id are tenants of the
// gateway (API_TOKENS), of the Hono middleware over the namespace, and of
// the LedgerService entrypoint — and all three name the same objects by
// the one rule (tests/fixtures/tenants.json), so a key written through one
// is found through the others. v1.3 ids keep their objects. A tenant id
// that looks like another tenant's object name (`~user%40example.com`,
// `acme/shard-1-of-2`) is a tenant like any other: its stats, keys, lookups
// and executes never reach the other tenant's objects.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startOrigin, read, json, sha256hex, rpcCaller, orderInit, DEMO_TOKENS, ACME, bundledWorkerModules } from "./harness.mjs";
import { LedgerClient, fingerprint, shardOf, shardObjectName } from "../../client/index.js";

const TENANTS = {
  "tok-api-key": "api-key:123",
  "tok-org-team": "org/team",
  "tok-email": "ops@example.com",
  "tok-long": `org:${"x".repeat(196)}`, // 200 bytes
  "tok-utf8": "ü".repeat(100), // 200 bytes of UTF-8
};

const parityApp = {
  name: "parity-app",
  modules: bundledWorkerModules("parity-app"),
  compatibilityDate: "2026-11-01",
  bindings: { TENANT_SHARDS: "{}" },
  durableObjects: { LEDGER_NS: { className: "TenantLedger", scriptName: "gateway", useSQLite: true } },
  serviceBindings: { LEDGER_SVC: { name: "gateway", entrypoint: "LedgerService" }, BROKEN: { name: "gateway", entrypoint: "LedgerService" } },
};

/** A tenant, and a tenant whose id is the first one's object name. */
const EMAIL = "user@example.com";
const LOOKALIKE = "~user%40example.com";
const SEAM_TOKENS = { "tok-email-owner": EMAIL, "tok-lookalike": LOOKALIKE };

let gw, app, caller;
before(async () => {
  const tokens = { ...DEMO_TOKENS };
  for (const [token, tenant] of Object.entries({ ...TENANTS, ...SEAM_TOKENS })) tokens[await sha256hex(token)] = tenant;
  gw = await startGateway({ apiTokens: JSON.stringify(tokens), workers: [parityApp, rpcCaller()] });
  app = await gw.mf.getWorker("parity-app");
  caller = await gw.mf.getWorker("rpc-caller");
});

/** `LedgerService[op](...args)` through a service binding of `worker` (rpcCaller): its answer, or `{ error }`. */
const service = async (worker, op, ...args) => (await worker.fetch("https://rpc/", { method: "POST", body: JSON.stringify({ op, args }) })).json();
/** The orders app's request as `execute` takes it, with the fingerprint the gateway gave `orderInit`'s. */
async function orderCall(key, fingerprintOf = { target: "/v1/orders", headers: { "content-type": "application/json" }, body: orderInit().body }) {
  const body = orderInit().body;
  const fp = await fingerprint({ method: "POST", target: fingerprintOf.target, headers: fingerprintOf.headers, body: new TextEncoder().encode(fingerprintOf.body) });
  return { key, fingerprint: fp, request: { method: "POST", target: "/v1/orders", body: Buffer.from(body).toString("base64") } };
}
/** Asserts `tenant` sees nothing of `key` (another tenant's) through LedgerService and its own object. */
async function seesNothing(worker, namespace, tenant, key) {
  const stats = await service(worker, "stats", tenant);
  assert.equal(stats.error, undefined, JSON.stringify(stats));
  assert.deepEqual([stats.records, stats.completed, stats.claims], [0, 0, 0], `${tenant}: stats of its own object`);
  assert.deepEqual(await service(worker, "list", tenant, {}), { keys: [], next: null }, `${tenant}: no keys`);
  assert.equal(await service(worker, "lookup", tenant, key), null, `${tenant}: LedgerService.lookup`);
  // forTenant refuses the lookalike id (before v1.5 it took it as the object it spells); the tenant's
  // own object, by the one rule, holds nothing of the other's.
  assert.throws(() => LedgerClient.forTenant(namespace, tenant), /spelled like an object's name/, `${tenant}: forTenant refuses it`);
  assert.equal(await LedgerClient.forObject(namespace, shardObjectName(tenant, 0, 1)).lookup(key), null, `${tenant}: its own object's lookup`);
}
after(async () => { await gw?.dispose(); });

test("the gateway serves scope-style tenants: orders run once and replay, each tenant in its own object", async () => {
  for (const [token, tenant] of Object.entries(TENANTS)) {
    const init = () => ({
      method: "POST", body: JSON.stringify({ sku: "SCOPE", quantity: 1 }),
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": "scoped-order" },
    });
    const first = await json(await gw.request("/v1/orders", init()));
    assert.equal(first.status, 201, `${tenant}: ${first.text}`);
    const replay = await json(await gw.request("/v1/orders", init()));
    assert.equal(replay.headers["idempotent-replayed"], "true", tenant);
    assert.equal(replay.text, first.text);
    const listed = await json(await gw.request("/v1/orders", { headers: { authorization: `Bearer ${token}` } }));
    assert.equal(listed.json.orders.length, 1, `${tenant}: one order, in its own object`);
  }
  // acme (a v1.3 id) is untouched by the others.
  const acme = await json(await gw.request("/v1/orders", { headers: { authorization: "Bearer dev-token-acme" } }));
  assert.equal(acme.json.orders.length, 0);
});

test("a Hono app with scope-style tenants is protected end to end, and the gateway and LedgerService find its keys in the same objects", async () => {
  for (const [token, tenant] of Object.entries(TENANTS)) {
    const post = () => app.fetch("https://parity/scoped/charge", {
      method: "POST", headers: { "content-type": "text/plain", "idempotency-key": "scoped-charge", "x-scope": encodeURIComponent(tenant) }, body: "5.00",
    }).then(read);
    const first = await post();
    assert.equal(first.status, 201, `${tenant}: ${first.text}`);
    const replay = await post();
    assert.equal(replay.headers["idempotent-replayed"], "true", tenant);
    assert.ok(replay.body.equals(first.body));
    // The gateway, as that tenant, sees the record the middleware completed.
    const seen = await json(await gw.request("/v1/idempotency-keys/scoped-charge", { headers: { authorization: `Bearer ${token}` } }));
    assert.equal(seen.status, 200, tenant);
    assert.equal(seen.json.state, "completed");
    const viaService = await (await app.fetch(`https://parity/service-lookup?tenant=${encodeURIComponent(tenant)}&key=scoped-charge`)).json();
    assert.equal(viaService.state, "completed", tenant);
  }
  assert.equal((await (await app.fetch("https://parity/runs/scoped")).json()).runs, Object.keys(TENANTS).length);
  // A tenant with a control character, or over 256 bytes, is the app's misconfiguration: nothing runs.
  for (const bad of ["a\u0001b", "y".repeat(257)]) {
    const r = await app.fetch("https://parity/scoped/charge", {
      method: "POST", headers: { "content-type": "text/plain", "idempotency-key": "bad-scope", "x-scope": encodeURIComponent(bad) }, body: "1",
    }).then(read);
    assert.equal(r.status, 500, JSON.stringify(bad));
    assert.equal(JSON.parse(r.text).type.split("/").pop(), "misconfigured");
  }
});

test("v1.3 tenant ids keep their objects: the object named by the id itself holds the key", async () => {
  const r = await json(await gw.request("/v1/orders", {
    method: "POST", body: JSON.stringify({ sku: "KEEP", quantity: 1 }),
    headers: { authorization: "Bearer dev-token-globex", "content-type": "application/json", "idempotency-key": "kept-object" },
  }));
  assert.equal(r.status, 201);
  const stub = await gw.ledger("globex");
  const found = await (await stub.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key: "kept-object" }) })).json();
  assert.equal(found.record.state, "completed");
  // And a scope-style tenant's object is the escaped name, never the raw id.
  const escaped = await gw.ledger("~api-key%3A123");
  const there = await (await escaped.fetch("https://l/rpc/v1/lookup", { method: "POST", body: JSON.stringify({ key: "scoped-order" }) })).json();
  assert.equal(there.record.state, "completed");
});

test("a tenant id equal to another tenant's object name (~user%40example.com) reads nothing of that tenant; its execute runs its own order", async () => {
  const owner = "Bearer tok-email-owner";
  // user@example.com completes an order and a key.
  for (const key of ["seam-order", "seam-second"]) {
    const r = await json(await gw.request("/v1/orders", orderInit({ key, auth: owner })));
    assert.equal(r.status, 201, r.text);
  }
  const ns = await gw.mf.getDurableObjectNamespace("TENANT_LEDGER");
  // Control: the owner's records are where the one rule names them.
  const own = await service(caller, "stats", EMAIL);
  assert.equal(own.completed, 2);
  assert.equal((await LedgerClient.forTenant(ns, EMAIL).lookup("seam-order"))?.state, "completed");
  // The gateway keeps the lookalike apart already (it escapes every id).
  assert.equal((await read(await gw.request("/v1/idempotency-keys/seam-order", { headers: { authorization: "Bearer tok-lookalike" } }))).status, 404);

  await seesNothing(caller, ns, LOOKALIKE, "seam-order");
  // The same order key, the same request: the lookalike's own order runs, never the owner's replayed.
  const ran = await service(caller, "execute", LOOKALIKE, await orderCall("seam-order"));
  assert.equal(ran.outcome, "ran", JSON.stringify(ran));
  assert.equal(ran.response.status, 201);
  const orders = async (auth) => (await json(await gw.request("/v1/orders", { headers: { authorization: auth } }))).json.orders.length;
  assert.equal(await orders("Bearer tok-lookalike"), 1, "the lookalike's order is in its own object");
  assert.equal(await orders(owner), 2, "the owner's orders are untouched");
  assert.equal((await service(caller, "stats", EMAIL)).completed, 2);
});

test("a tenant id equal to a sharded tenant's shard name (acme/shard-1-of-2) reads nothing of that shard; its execute runs its own", async () => {
  const origin = await startOrigin((req) => ({ status: 201, headers: { "content-type": "text/plain" }, body: `charged ${req.headers["idempotency-key"]}` }));
  const tokens = { ...DEMO_TOKENS, [await sha256hex("tok-shard-lookalike")]: "acme/shard-1-of-2" };
  const sharded = await startGateway({ vars: { ORIGIN_URL: origin.url, TENANT_SHARDS: '{"acme": 2}' }, apiTokens: JSON.stringify(tokens), workers: [rpcCaller()] });
  try {
    const rpc = await sharded.mf.getWorker("rpc-caller");
    const ns = await sharded.mf.getDurableObjectNamespace("TENANT_LEDGER");
    // acme completes keys until one lives in its shard 1.
    let key = null;
    for (let i = 0; key === null; i++) {
      assert.ok(i < 64, "some key lands in shard 1");
      const k = `shard-seam-${i}`;
      const r = await read(await sharded.request("/charges", { method: "POST", headers: { authorization: ACME, "content-type": "text/plain", "idempotency-key": k }, body: "5.00" }));
      assert.equal(r.status, 201, r.text);
      if ((await shardOf(k, 2)) === 1) key = k;
    }
    // Control: acme's own view has it.
    assert.equal((await service(rpc, "lookup", "acme", key))?.state, "completed");
    assert.ok((await service(rpc, "stats", "acme")).completed >= 1);

    await seesNothing(rpc, ns, "acme/shard-1-of-2", key);
    const charge = { target: "/charges", headers: { "content-type": "text/plain" }, body: "5.00" };
    const ran = await service(rpc, "execute", "acme/shard-1-of-2", await orderCall(key, charge));
    assert.equal(ran.outcome, "ran", JSON.stringify(ran));
    assert.equal((await service(rpc, "lookup", "acme", key))?.state, "completed", "acme's key is untouched");
    assert.equal(origin.requests.length, (await service(rpc, "stats", "acme")).completed, "the origin ran each of acme's keys once");
  } finally {
    await sharded.dispose();
    await origin.close();
  }
});
