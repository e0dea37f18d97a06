// X-Should-Retry: false (docs/contract.md §2.5): every replay — from the
// object, from the isolate's replay cache, a tombstone's — and every
// refusal no retry can change (422, 400 key missing / invalid, 413) says
// so, for SDKs that retry a 5xx (or anything) by default; a first answer
// and the refusals a retry can change (409, 429, 503) do not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startOrigin, deferred, orderInit, json, slug, ACME } from "./harness.mjs";

const SHOULD_RETRY = "x-should-retry";

test("embedded: a first answer carries no X-Should-Retry; the object's replay, the cached replay, 422, 400 and 413 carry X-Should-Retry: false", async () => {
  const gw = await startGateway({ vars: { MAX_REQUEST_BODY_BYTES: "1024" } });
  try {
    const first = await json(await gw.request("/v1/orders", orderInit({ key: "sr-1" })));
    assert.equal(first.status, 201);
    assert.equal(first.headers[SHOULD_RETRY], undefined);
    const replay = await json(await gw.request("/v1/orders", orderInit({ key: "sr-1" })));
    assert.equal(replay.headers["idempotent-replayed"], "true");
    assert.equal(replay.headers[SHOULD_RETRY], "false", "the object's replay");
    const cached = await json(await gw.request("/v1/orders", orderInit({ key: "sr-1" })));
    assert.equal(cached.headers["idempotent-replayed"], "true");
    assert.equal(cached.headers[SHOULD_RETRY], "false", "the replay cache's");
    const stats = await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: ACME } }));
    assert.equal(stats.json.replays, 2);
    const reused = await json(await gw.request("/v1/orders", orderInit({ key: "sr-1", body: '{"sku":"SKU-1","quantity":3}' })));
    assert.equal(reused.status, 422);
    assert.equal(reused.headers[SHOULD_RETRY], "false");
    const missing = await json(await gw.request("/v1/orders", orderInit({})));
    assert.equal(slug(missing.json), "idempotency-key-missing");
    assert.equal(missing.headers[SHOULD_RETRY], "false");
    const invalid = await json(await gw.request("/v1/orders", orderInit({ key: "two, keys" })));
    assert.equal(slug(invalid.json), "idempotency-key-invalid");
    assert.equal(invalid.headers[SHOULD_RETRY], "false");
    const large = await json(await gw.request("/v1/orders", orderInit({ key: "sr-big", body: "x".repeat(2048) })));
    assert.equal(large.status, 413);
    assert.equal(large.headers[SHOULD_RETRY], "false");
  } finally { await gw.dispose(); }
});

test("proxy mode: 409 in flight and 429 ledger full carry no X-Should-Retry (a retry can change them); the tombstone's replay is final", async () => {
  const hold = deferred();
  const origin = await startOrigin(async (req) => {
    if (req.url === "/slow") await hold.promise;
    return { status: 200, headers: { "content-type": "text/plain" }, body: req.url === "/big" ? "b".repeat(4096) : "ok" };
  });
  const gw = await startGateway({ vars: { ORIGIN_URL: origin.url, MAX_KEYS_PER_TENANT: "2", MAX_STORED_BODY_BYTES: "1024" } });
  const post = (path, key) => ({ method: "POST", headers: { authorization: ACME, "idempotency-key": key, "content-type": "text/plain" }, body: "x" });
  try {
    const slow = gw.request("/slow", post("/slow", "sr-slow"));
    await origin.waitForRequests(1);
    const busy = await json(await gw.request("/slow", post("/slow", "sr-slow")));
    assert.equal(busy.status, 409);
    assert.equal(busy.headers[SHOULD_RETRY], undefined);
    const big = await gw.request("/big", post("/big", "sr-big"));
    assert.equal(big.status, 200);
    await big.arrayBuffer();
    const tombstone = await json(await gw.request("/big", post("/big", "sr-big")));
    assert.equal(slug(tombstone.json), "idempotency-response-not-retained");
    assert.equal(tombstone.headers[SHOULD_RETRY], "false");
    const full = await json(await gw.request("/x", post("/x", "sr-third")));
    assert.equal(full.status, 429);
    assert.equal(full.headers[SHOULD_RETRY], undefined);
    hold.resolve();
    await (await slow).arrayBuffer();
  } finally { hold.resolve(); await gw.dispose(); await origin.close(); }
});

test("503 store unavailable carries no X-Should-Retry", async () => {
  const broken = {
    name: "broken", modules: true,
    durableObjects: { TENANT_LEDGER: { className: "TenantLedger", useSQLite: true } },
    script: `export class TenantLedger { constructor() {} async fetch() { throw new Error("ledger storage failure"); } }
             export default { fetch() { return new Response("unused"); } }`,
  };
  const gw = await startGateway({
    workers: [broken],
    gateway: { durableObjects: { TENANT_LEDGER: { className: "TenantLedger", scriptName: "broken" } } },
  });
  try {
    const r = await json(await gw.request("/v1/orders", orderInit({ key: "sr-down" })));
    assert.equal(r.status, 503);
    assert.equal(r.headers[SHOULD_RETRY], undefined);
  } finally { await gw.dispose(); }
});
