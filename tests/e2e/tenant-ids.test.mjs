// Tenant ids of any shape (docs/contract.md §2.1): scope-style ids such as
// `api-key:123`, `org/team`, an email or a 200-byte id are tenants of the
// gateway (API_TOKENS), of the Hono middleware over the namespace, and of
// the LedgerService entrypoint — and all three name the same objects by
// the one rule (tests/fixtures/tenants.json), so a key written through one
// is found through the others. v1.3 ids keep their objects.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, read, json, sha256hex, DEMO_TOKENS, bundledWorkerModules } from "./harness.mjs";

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

let gw, app;
before(async () => {
  const tokens = { ...DEMO_TOKENS };
  for (const [token, tenant] of Object.entries(TENANTS)) tokens[await sha256hex(token)] = tenant;
  gw = await startGateway({ apiTokens: JSON.stringify(tokens), workers: [parityApp] });
  app = await gw.mf.getWorker("parity-app");
});
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
