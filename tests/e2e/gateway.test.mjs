// The gateway's wire contract with the embedded orders app (docs/contract.md §2), run on
// the built Worker in workerd with real SQLite-backed Durable Objects.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, orderInit, read, json, slug, orders, ACME, GLOBEX } from "./harness.mjs";

let gw;
before(async () => { gw = await startGateway(); });
after(async () => { await gw?.dispose(); });

test("health answers without auth", async () => {
  const r = await json(await gw.request("/health"));
  assert.equal(r.status, 200);
  assert.equal(r.json.status, "ok");
});

test("GET /openapi.json serves docs/openapi.json without auth", async () => {
  const { readFileSync } = await import("node:fs");
  const r = await read(await gw.request("/openapi.json"));
  assert.equal(r.status, 200);
  assert.equal(r.headers["content-type"], "application/json");
  assert.ok(r.body.equals(readFileSync(new URL("../../docs/openapi.json", import.meta.url))), "byte for byte the reviewed file");
  assert.equal(JSON.parse(r.text).openapi, "3.1.0");
  const posted = await read(await gw.request("/openapi.json", { method: "POST", headers: { authorization: ACME } }));
  assert.notEqual(posted.status, 200, "only GET and HEAD serve the document");
});

test("the first request creates an order: 201 with Location", async () => {
  const r = await json(await gw.request("/v1/orders", orderInit({ key: "first-201" })));
  assert.equal(r.status, 201);
  assert.match(r.json.id, /^ord_/);
  assert.equal(r.headers.location, `/v1/orders/${r.json.id}`);
  assert.deepEqual([r.json.sku, r.json.quantity], ["SKU-1", 2]);
  assert.equal(r.headers["idempotent-replayed"], undefined);
  const got = await json(await gw.request(r.headers.location, { headers: { authorization: ACME } }));
  assert.equal(got.status, 200);
  assert.deepEqual(got.json, r.json);
});

test("a replay returns identical status, headers and body bytes, marked replayed", async () => {
  const first = await read(await gw.request("/v1/orders", orderInit({ key: "replay-1" })));
  const before = (await orders(gw)).length;
  for (let i = 0; i < 3; i++) {
    const again = await read(await gw.request("/v1/orders", orderInit({ key: "replay-1" })));
    assert.equal(again.status, first.status);
    assert.ok(again.body.equals(first.body), "byte-identical body");
    assert.equal(again.headers["content-type"], first.headers["content-type"]);
    assert.equal(again.headers.location, first.headers.location);
    assert.equal(again.headers["idempotent-replayed"], "true");
  }
  assert.equal((await orders(gw)).length, before, "no new order");
  const rec = await json(await gw.request("/v1/idempotency-keys/replay-1", { headers: { authorization: ACME } }));
  assert.equal(rec.json.replays, 3);
});

test("bare and quoted forms of a key name the same record", async () => {
  const a = await read(await gw.request("/v1/orders", orderInit({ key: "form-1" })));
  const b = await read(await gw.request("/v1/orders", orderInit({ key: '"form-1";p=1' })));
  assert.equal(b.headers["idempotent-replayed"], "true");
  assert.ok(a.body.equals(b.body));
});

test("a protected request without a key is refused and creates nothing", async () => {
  const before = (await orders(gw)).length;
  const r = await json(await gw.request("/v1/orders", orderInit({})));
  assert.equal(r.status, 400);
  assert.equal(r.headers["content-type"], "application/problem+json");
  assert.equal(slug(r.json), "idempotency-key-missing");
  assert.equal(r.json.status, 400);
  assert.ok(r.json.title && r.json.detail);
  assert.equal((await orders(gw)).length, before);
});

test("invalid keys are refused with idempotency-key-invalid and create nothing", async () => {
  const before = (await orders(gw)).length;
  const bad = ['"unterminated', '"bad\\escape"', '""', "k".repeat(256), "a, b", '"a", "b"', "caf\u00e9"];
  for (const key of bad) {
    const r = await json(await gw.request("/v1/orders", orderInit({ key })));
    assert.equal(r.status, 400, `key ${JSON.stringify(key)}`);
    assert.equal(slug(r.json), "idempotency-key-invalid", `key ${JSON.stringify(key)}`);
  }
  // Two field lines: the runtime merges them; the gateway refuses the result.
  const headers = new Headers({ authorization: ACME, "content-type": "application/json" });
  headers.append("idempotency-key", "one");
  headers.append("idempotency-key", "two");
  const dup = await json(await gw.request("/v1/orders", { method: "POST", headers, body: "{}" }));
  assert.equal(dup.status, 400);
  assert.equal(slug(dup.json), "idempotency-key-invalid");
  assert.equal((await orders(gw)).length, before);
});

test("a missing or unknown token is 401 with WWW-Authenticate: Bearer", async () => {
  for (const auth of [undefined, "Bearer nope", "Basic ZGV2", "Bearer "]) {
    const init = orderInit({ key: "auth-1", auth });
    if (auth === undefined) delete init.headers.authorization;
    const r = await json(await gw.request("/v1/orders", init));
    assert.equal(r.status, 401, String(auth));
    assert.equal(slug(r.json), "unauthorized");
    assert.equal(r.headers["www-authenticate"], "Bearer");
  }
});

test("a client cannot switch tenants with X-Tenant-Id", async () => {
  const globexBefore = (await orders(gw, GLOBEX)).length;
  const r = await json(await gw.request("/v1/orders", orderInit({ key: "switch-1", headers: { "x-tenant-id": "globex" }, body: '{"sku":"STEAL","quantity":1}' })));
  assert.equal(r.status, 201);
  assert.ok((await orders(gw, ACME)).some((o) => o.id === r.json.id && o.sku === "STEAL"));
  assert.equal((await orders(gw, GLOBEX)).length, globexBefore);
  assert.ok(!(await orders(gw, GLOBEX)).some((o) => o.sku === "STEAL"));
});

test("the same key with a different body is 422 naming body", async () => {
  await gw.request("/v1/orders", orderInit({ key: "reuse-1" }));
  const r = await json(await gw.request("/v1/orders", orderInit({ key: "reuse-1", body: '{"sku":"SKU-1","quantity":3}' })));
  assert.equal(r.status, 422);
  assert.equal(slug(r.json), "idempotency-key-reused");
  assert.deepEqual(r.json.differs, ["body"]);
  const ct = await json(await gw.request("/v1/orders", orderInit({ key: "reuse-1", headers: { "content-type": "text/plain" } })));
  assert.deepEqual(ct.json.differs, ["header:content-type"]);
  const tgt = await json(await gw.request("/v1/orders?x=1", orderInit({ key: "reuse-1" })));
  assert.deepEqual(tgt.json.differs, ["target"]);
});

test("tenants are isolated: the same key in two tenants makes two orders", async () => {
  const a = await json(await gw.request("/v1/orders", orderInit({ key: "shared-key", auth: ACME, body: '{"sku":"ACME-ONLY","quantity":1}' })));
  const g = await json(await gw.request("/v1/orders", orderInit({ key: "shared-key", auth: GLOBEX, body: '{"sku":"GLOBEX-ONLY","quantity":1}' })));
  assert.equal(a.status, 201);
  assert.equal(g.status, 201, "globex's first use of the key is not a replay of acme's");
  assert.equal(g.headers["idempotent-replayed"], undefined);
  assert.ok((await orders(gw, ACME)).some((o) => o.sku === "ACME-ONLY"));
  assert.ok(!(await orders(gw, ACME)).some((o) => o.sku === "GLOBEX-ONLY"));
  assert.ok((await orders(gw, GLOBEX)).some((o) => o.sku === "GLOBEX-ONLY"));
  const lookup = await json(await gw.request("/v1/idempotency-keys/shared-key", { headers: { authorization: GLOBEX } }));
  assert.equal(lookup.json.generation, 1);
});

test("32 concurrent requests with one key yield exactly one order", async () => {
  const before = (await orders(gw)).length;
  const body = '{"sku":"CONCURRENT","quantity":7}';
  const results = await Promise.all(
    Array.from({ length: 32 }, () => gw.request("/v1/orders", orderInit({ key: "concurrent-1", body })).then(read)),
  );
  const fresh = results.filter((r) => r.status === 201 && r.headers["idempotent-replayed"] === undefined);
  assert.equal(fresh.length, 1, "exactly one request ran the application");
  for (const r of results) {
    assert.ok(r.status === 201 || r.status === 409, `status ${r.status}`);
    if (r.status === 201) assert.ok(r.body.equals(fresh[0].body), "every 201 carries the same order");
  }
  const after = await orders(gw);
  assert.equal(after.length, before + 1);
  assert.equal(after.filter((o) => o.sku === "CONCURRENT").length, 1);
});

test("an invalid order is a stored 400 invalid-order, replayed like any answer", async () => {
  const first = await json(await gw.request("/v1/orders", orderInit({ key: "bad-order", body: '{"sku":"","quantity":0}' })));
  assert.equal(first.status, 400);
  assert.equal(slug(first.json), "invalid-order");
  const again = await read(await gw.request("/v1/orders", orderInit({ key: "bad-order", body: '{"sku":"","quantity":0}' })));
  assert.equal(again.status, 400);
  assert.equal(again.headers["idempotent-replayed"], "true");
});

test("unprotected methods pass through without a key", async () => {
  const r = await json(await gw.request("/v1/orders", { headers: { authorization: ACME } }));
  assert.equal(r.status, 200);
  assert.ok(Array.isArray(r.json.orders));
  const missing = await json(await gw.request("/v1/orders/ord_99999999", { headers: { authorization: ACME } }));
  assert.equal(missing.status, 404);
});
