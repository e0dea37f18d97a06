// The gateway's replay cache (REPLAY_CACHE_BYTES, on by default, so every
// other suite runs with it too): what it may never do, and that the replays
// it answers still reach `stats` exactly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startGateway, orderInit, read, json, slug, orders, ACME, GLOBEX, eventually } from "./harness.mjs";

const stats = async (gw, auth = ACME) =>
  (await json(await gw.request("/v1/idempotency/stats", { headers: { authorization: auth } }))).json;
const record = async (gw, key, auth = ACME) =>
  (await json(await gw.request(`/v1/idempotency-keys/${encodeURIComponent(key)}`, { headers: { authorization: auth } }))).json;

test("replays answered by the gateway are byte-identical and stats.replays is exact", async () => {
  const gw = await startGateway();
  try {
    const first = await read(await gw.request("/v1/orders", orderInit({ key: "cached-1" })));
    assert.equal(first.status, 201);
    const n = 40; // past the 32 that makes the gateway write its counts after a response
    for (let i = 0; i < n; i++) {
      const again = await read(await gw.request("/v1/orders", orderInit({ key: "cached-1" })));
      assert.equal(again.status, 201);
      assert.ok(again.body.equals(first.body), `replay ${i}: byte-identical`);
      assert.equal(again.headers.location, first.headers.location);
      assert.equal(again.headers["idempotent-replayed"], "true");
    }
    assert.equal((await stats(gw)).replays, n, "every replay counted once");
    assert.equal((await record(gw, "cached-1")).replays, n);
    assert.equal((await orders(gw)).length, 1);
    // Counting is idempotent across reads: nothing is counted twice.
    assert.equal((await stats(gw)).replays, n);
  } finally { await gw.dispose(); }
});

test("a cached key never answers another tenant or a different request", async () => {
  const gw = await startGateway();
  try {
    const first = await json(await gw.request("/v1/orders", orderInit({ key: "shared-key" })));
    for (let i = 0; i < 3; i++) {
      const again = await read(await gw.request("/v1/orders", orderInit({ key: "shared-key" })));
      assert.equal(again.headers["idempotent-replayed"], "true");
    }
    const other = await json(await gw.request("/v1/orders", orderInit({ key: "shared-key", auth: GLOBEX })));
    assert.equal(other.status, 201);
    assert.equal(other.headers["idempotent-replayed"], undefined, "globex's first use of the key runs");
    assert.equal((await orders(gw, GLOBEX)).length, 1);
    const changed = await json(await gw.request("/v1/orders", orderInit({ key: "shared-key", body: '{"sku":"SKU-9","quantity":1}' })));
    assert.equal(changed.status, 422);
    assert.equal(slug(changed.json), "idempotency-key-reused");
    assert.deepEqual(changed.json.differs, ["body"]);
    assert.equal((await stats(gw)).reused, 1, "the mismatch reached the object");
    assert.equal((await orders(gw)).length, 1);
    assert.notEqual(first.json.id, undefined);
  } finally { await gw.dispose(); }
});

test("a cached record is never replayed once it has expired", async () => {
  const gw = await startGateway({ vars: { RETENTION_SECONDS: "4", LEASE_SECONDS: "2", ORIGIN_TIMEOUT_SECONDS: "1" } });
  try {
    const first = await json(await gw.request("/v1/orders", orderInit({ key: "short-lived" })));
    assert.equal(first.status, 201);
    const expiresAt = Date.parse((await record(gw, "short-lived")).expires_at);
    let fresh;
    await eventually(async () => {
      const sentAt = Date.now();
      const r = await json(await gw.request("/v1/orders", orderInit({ key: "short-lived" })));
      assert.equal(r.status, 201);
      if (r.headers["idempotent-replayed"] === "true") {
        assert.ok(sentAt < expiresAt, `replayed a record ${sentAt - expiresAt} ms after it expired`);
        return false;
      }
      fresh = r;
      return true;
    }, { ms: 60_000, every: 100 });
    assert.notEqual(fresh.json.id, first.json.id, "after expiry the key is a new operation");
    assert.equal((await orders(gw)).length, 2);
  } finally { await gw.dispose(); }
});

test("REPLAY_CACHE_BYTES=0 still replays, from the object", async () => {
  const gw = await startGateway({ vars: { REPLAY_CACHE_BYTES: "0" } });
  try {
    await gw.request("/v1/orders", orderInit({ key: "uncached" }));
    for (let i = 0; i < 3; i++) {
      const r = await json(await gw.request("/v1/orders", orderInit({ key: "uncached" })));
      assert.equal(r.headers["idempotent-replayed"], "true");
    }
    assert.equal((await stats(gw)).replays, 3);
  } finally { await gw.dispose(); }
});
