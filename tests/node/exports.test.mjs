// The package's public surface: each entry point exports exactly the names
// its docs document (docs/clients.md, docs/typescript.md, docs/sharding.md,
// docs/consumers.md),
// so an accidental export fails here. Node only; imported by the package's
// own name, as a user imports it. A name added here must be documented too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { registerHooks } from "node:module";

const ROOT_EXPORTS = [
  // The client and its placement of keys (clients.md, sharding.md "Placing keys yourself").
  "LedgerClient", "LedgerError", "TenantLedgers", "parseTenantShards", "shardOf", "shardObjectName",
  // The key and the fingerprint (clients.md).
  "IdempotencyKeyError", "parseIdempotencyKey", "generateIdempotencyKey", "deriveIdempotencyKey",
  "withIdempotencyKey", "applyIdempotencyKey", "fingerprint",
  // Stored responses and refusals, for code that claims itself (clients.md).
  "captureResponse", "captureBounded", "replayResponse", "refusalResponse",
  // Settlement retried as the gateway retries it (clients.md "When the ledger fails").
  "settle", "landedEarlier", "SETTLE_RETRY_DELAYS_MS",
  // The middleware (clients.md).
  "withIdempotency", "idempotencyContract",
];

const sorted = (names) => [...names].sort();

test("idempotency-ledger exports exactly its documented API", async () => {
  assert.deepEqual(sorted(Object.keys(await import("idempotency-ledger"))), sorted(ROOT_EXPORTS));
});

test("idempotency-ledger/hono exports exactly the Hono middleware", async () => {
  assert.deepEqual(sorted(Object.keys(await import("idempotency-ledger/hono"))), ["idempotency"]);
});

test("idempotency-ledger/store exports exactly the seed's store contract over the ledger", async () => {
  assert.deepEqual(sorted(Object.keys(await import("idempotency-ledger/store"))), ["IdempotencyStoreError", "OTHER_FINGERPRINT", "ledgerStore"]);
});

test("idempotency-ledger/queues exports exactly the Queue consumer", async () => {
  assert.deepEqual(sorted(Object.keys(await import("idempotency-ledger/queues"))), ["queueConsumer"]);
});

test("idempotency-ledger/workflows exports exactly once and onceScheduled", async () => {
  assert.deepEqual(sorted(Object.keys(await import("idempotency-ledger/workflows"))), ["once", "onceScheduled"]);
});

test("idempotency-ledger/ledger exports exactly Ledger", async () => {
  // The wasm core loads only on Workers (cloudflare:workers, a .wasm module):
  // stand in for the built module client/ledger/wasm.js loads, so Node can
  // read the module's exports.
  const hooks = registerHooks({
    resolve(specifier, context, next) {
      if (specifier === "../../build/ledger/index.js" && /\/client\/ledger\/wasm\.js$/.test(context.parentURL ?? "")) {
        return { url: "data:text/javascript,export class EmbeddedLedger {}", shortCircuit: true };
      }
      return next(specifier, context);
    },
  });
  try {
    assert.deepEqual(sorted(Object.keys(await import("idempotency-ledger/ledger"))), ["Ledger"]);
  } finally {
    hooks.deregister();
  }
});
