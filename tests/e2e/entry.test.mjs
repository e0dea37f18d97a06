// worker/entry.mjs's default export: a handler object that calls the Rust
// gateway's fetch directly, and after a critical error (a panicked wasm
// module) goes once through worker-build's proxied class, which
// re-instantiates the module — so a panic never leaves the isolate broken.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GATEWAY_MODULES, ROOT, orderInit, startGateway } from "../workerd.mjs";

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
