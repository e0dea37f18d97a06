// worker/entry.mjs's default export: a handler object that calls the Rust
// gateway's fetch directly, and after a critical error (a panicked wasm
// module) goes once through worker-build's proxied class, which
// re-instantiates the module — so a panic never leaves the isolate broken;
// and its TenantLedger class, which does the same for calls to the object.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GATEWAY_MODULES, ROOT, orderInit, startGateway } from "./harness.mjs";

const ENTRY = { type: "ESModule", path: `${ROOT}tests/e2e/workers/critical-entry.mjs` };

test("after a critical error the next request re-instantiates the wasm module, and every request is still answered", async () => {
  const gw = await startGateway({ vars: { LOG_LEVEL: "warn" }, gateway: { modules: [ENTRY, ...GATEWAY_MODULES] } });
  try {
    const state = async () => (await gw.request("/__state")).json();
    assert.equal((await gw.request("/v1/orders", orderInit({ key: "entry-1" }))).status, 201);
    const before = await state();
    assert.equal(before.criticalError, false);
    // Many requests on the direct path: the module is never re-instantiated.
    for (let i = 0; i < 5; i++) assert.equal((await gw.request("/v1/orders", orderInit({ key: "entry-1" }))).headers.get("idempotent-replayed"), "true");
    assert.equal((await state()).instanceId, before.instanceId);
    assert.equal((await gw.request("/__critical")).status, 204);
    const fresh = await gw.request("/v1/orders", orderInit({ key: "entry-2" }));
    assert.equal(fresh.status, 201);
    const after = await state();
    assert.equal(after.criticalError, false, "the flag was cleared by the re-instantiation");
    assert.ok(after.instanceId > before.instanceId, `the module was instantiated anew (${before.instanceId} → ${after.instanceId})`);
    // The ledger survived it (its state is in SQLite): the first key replays.
    const replay = await gw.request("/v1/orders", orderInit({ key: "entry-1" }));
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal((await gw.request("/health")).status, 200);
  } finally { await gw.dispose(); }
});

test("the TenantLedger class: a call that reaches the object while the module is marked critical re-instantiates it first, and the ledger answers from its SQLite", async () => {
  const gw = await startGateway({ vars: { LOG_LEVEL: "warn" }, gateway: { modules: [ENTRY, ...GATEWAY_MODULES] } });
  try {
    const state = async () => (await gw.request("/__state")).json();
    assert.equal((await gw.request("/v1/orders", orderInit({ key: "object-1" }))).status, 201);
    const direct = await gw.request("/__object-stats");
    assert.equal(direct.status, 200);
    assert.equal((await direct.json()).records, 1);
    const before = await state();
    assert.equal(before.criticalError, false);
    assert.equal((await gw.request("/__critical")).status, 204);
    // Straight to the object: only its class sees the flag.
    const after = await gw.request("/__object-stats");
    assert.equal(after.status, 200);
    const stats = await after.json();
    assert.equal(stats.records, 1, "the new instance reads the same ledger");
    const now = await state();
    assert.equal(now.criticalError, false, "the object's call cleared the flag by re-instantiating");
    assert.ok(now.instanceId > before.instanceId, `instantiated anew (${before.instanceId} → ${now.instanceId})`);
    // The next calls take the direct path again and still answer.
    assert.equal((await gw.request("/__object-stats")).status, 200);
    const replay = await gw.request("/v1/orders", orderInit({ key: "object-1" }));
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
  } finally { await gw.dispose(); }
});

// Deterministic, as billed rows are (docs/development.md "CPU per
// request"): 6 microtasks and 10 closure registrations per fresh key
// before the object's body was read in JS and its call polled at once
// (src/platform/eager.rs) and the client's fetch and answer chained in one
// promise; the gateway's own three awaits remain.
test("a fresh key costs at most 3 microtasks and 5 closure registrations of wasm-bindgen plumbing", async () => {
  const PLUMBING = { type: "ESModule", path: `${ROOT}tests/e2e/workers/plumbing-entry.mjs` };
  const gw = await startGateway({ vars: { LOG_LEVEL: "warn" }, gateway: { modules: [PLUMBING, ...GATEWAY_MODULES] } });
  try {
    // The object's first call checks its alarm (it waits): not counted.
    for (let i = 0; i < 3; i++) assert.equal((await gw.request("/v1/orders", orderInit({ key: `warm-${i}` }))).status, 201);
    await gw.request("/__plumbing");
    const N = 10;
    for (let i = 0; i < N; i++) assert.equal((await gw.request("/v1/orders", orderInit({ key: `plumbing-${i}` }))).status, 201);
    const seen = await (await gw.request("/__plumbing")).json();
    assert.ok(seen.microtasks > 0, "the counter sees the gateway's own plumbing");
    assert.ok(seen.microtasks / N <= 3, `microtasks per fresh key: ${seen.microtasks / N}`);
    assert.ok(seen.finalizers / N <= 5, `closure registrations per fresh key: ${seen.finalizers / N}`);
  } finally { await gw.dispose(); }
});
