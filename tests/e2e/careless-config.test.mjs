// What a careless configuration or a crafted path must not do: token
// hashes that collide are refused as misconfigured, a ledger bound under
// another name or an `ORIGIN` that is not a service binding is refused
// (never a request run unprotected, never the embedded application), log
// hashes are keyed with LOG_HASH_KEY, and no percent-encoded or dotted
// path reaches the object's RPC routes through the application route —
// in workerd.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { startGateway, startOrigin, json, slug, eventually, ACME, DEMO_TOKENS, sha256hex } from "./harness.mjs";

test("API_TOKENS with a repeated or case-colliding hash is misconfigured", async () => {
  const acme = sha256hex("dev-token-acme");
  for (const raw of [`{"${acme}":"acme","${acme}":"globex"}`, `{"${acme}":"acme","${acme.toUpperCase()}":"globex"}`]) {
    const gw = await startGateway({ apiTokens: raw });
    try {
      const r = await json(await gw.request("/v1/orders", { method: "POST", headers: { authorization: ACME, "idempotency-key": "k" }, body: "{}" }));
      assert.equal(r.status, 500);
      assert.equal(slug(r.json), "misconfigured");
      assert.match(r.json.detail, /API_TOKENS/);
    } finally { await gw.dispose(); }
  }
  // The demo map itself is fine.
  assert.equal(Object.keys(DEMO_TOKENS).length, 2);
});

test("the ledger bound as TENANT_LEDGERS is 500 misconfigured naming TENANT_LEDGER under every FAILURE_POLICY: the origin never runs, a key never runs twice", async () => {
  const origin = await startOrigin(() => ({ status: 201, body: "charged" }));
  try {
    for (const policy of ["closed", "open"]) {
      const gw = await startGateway({
        vars: { ORIGIN_URL: origin.url, FAILURE_POLICY: policy },
        gateway: { durableObjects: { TENANT_LEDGERS: { className: "TenantLedger", useSQLite: true } } },
      });
      try {
        const charge = { method: "POST", headers: { authorization: ACME, "idempotency-key": `twice-${policy}` }, body: "amount=100" };
        for (const attempt of [1, 2]) {
          const r = await json(await gw.request("/charges", charge));
          assert.equal(r.status, 500, `${policy}, attempt ${attempt}: ${r.text}`);
          assert.equal(r.headers["content-type"], "application/problem+json");
          assert.equal(slug(r.json), "misconfigured");
          assert.match(r.json.detail, /\bTENANT_LEDGER\b/);
        }
        const stats = await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }));
        assert.equal(stats.status, 500, "a read is refused the same way");
        assert.equal(slug(stats.json), "misconfigured");
        // The log names the binding and what is bound instead; never "unprotected".
        await eventually(() => gw.events("idempotency.misconfigured").some((e) => e.variable === "TENANT_LEDGER" && /TENANT_LEDGERS/.test(e.error)));
        assert.equal(gw.events("idempotency.unprotected").length, 0);
      } finally { await gw.dispose(); }
    }
    assert.equal(origin.requests.length, 0, "the origin never ran");
  } finally { await origin.close(); }
});

test("ORIGIN set as a variable instead of a service binding is 500 misconfigured naming ORIGIN, never the embedded application", async () => {
  const gw = await startGateway({ vars: { ORIGIN: "https://app.example" } });
  try {
    const r = await json(await gw.request("/v1/orders", { method: "POST", headers: { authorization: ACME, "idempotency-key": "o-1" }, body: '{"sku":"A","quantity":1}' }));
    assert.equal(r.status, 500, r.text);
    assert.equal(slug(r.json), "misconfigured");
    assert.match(r.json.detail, /\bORIGIN\b/);
    await eventually(() => gw.events("idempotency.misconfigured").some((e) => e.variable === "ORIGIN" && /service binding/.test(e.error)));
  } finally { await gw.dispose(); }
});

test("no client path reaches the object's RPC routes through the application route", async () => {
  // POST is unprotected here, so it goes to the embedded app's route.
  const gw = await startGateway({ vars: { PROTECTED_METHODS: "PATCH" } });
  try {
    for (const path of ["/%2e%2e/rpc/v1/stats", "/..%2frpc%2fv1%2fstats", "/app/../rpc/v1/stats", "/%2E%2E/%2E%2E/rpc/v1/claim", "/rpc/v1/stats"]) {
      const r = await json(await gw.request(path, { method: "POST", headers: { authorization: ACME, "content-type": "application/json" }, body: "{}" }));
      assert.equal(r.status, 404, path);
      assert.equal(slug(r.json), "not-found", path);
      assert.equal(r.json.records, undefined, `${path} must not answer stats`);
    }
    // The application itself still answers through the same route.
    const created = await json(await gw.request("/v1/orders", { method: "POST", headers: { authorization: ACME }, body: '{"sku":"A","quantity":1}' }));
    assert.equal(created.status, 201);
  } finally { await gw.dispose(); }
});

test("with LOG_HASH_KEY log hashes are keyed HMACs, not plain SHA-256 prefixes", async () => {
  const key = "log-key-0123456789";
  const gw = await startGateway({ vars: { LOG_HASH_KEY: key } });
  try {
    await gw.request("/v1/orders", { method: "POST", headers: { authorization: ACME, "idempotency-key": "order-1" }, body: '{"sku":"A","quantity":1}' });
    await eventually(() => gw.events("idempotency.request").length === 1);
    const line = gw.events("idempotency.request")[0];
    assert.equal(line.key, createHmac("sha256", key).update("order-1").digest("hex").slice(0, 12));
    assert.equal(line.tenant, createHmac("sha256", key).update("acme").digest("hex").slice(0, 12));
    assert.notEqual(line.key, sha256hex("order-1").slice(0, 12));
  } finally { await gw.dispose(); }
});
