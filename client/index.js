// @ts-check
// idempotency-ledger for JavaScript Workers: typed calls to a TenantLedger
// Durable Object over RPC v1, plus Idempotency-Key helpers and middleware.
// Runs on Workers (and Node >= 20): uses only fetch, Headers, Response,
// crypto.subtle and crypto.randomUUID. Types: ./index.d.ts, emitted by
// `npm run check:types` (tsc -p client) from the JSDoc of these modules.
//
// One module per seam, as the Rust side:
//   key.js          the Idempotency-Key field, minting and sending keys
//   fingerprint.js  the request fingerprint
//   rpc.js          LedgerClient over RPC v1 and the protocol's types
//   problems.js     the problem catalog (docs/problems.json) and its rendering
//   stored.js       stored responses: capture and replay
//   answer.js       the answer to a refused claim
//   waiting.js      Prefer: wait=N
//   shards.js       TENANT_SHARDS: placement, the routing rule, TenantLedgers
//   defaults.js     the middleware's defaults (the gateway's)
//   settle.js       completion and release retried as the gateway retries them
//   sources.js      the middleware's ledger option: client, binding, namespace
//   request.js      a protected request's key and bounded body (middleware and ledger.js)
//   contract.js     the middleware contract (withIdempotency; ./hono.js)
//   ledger.js       idempotency-ledger/ledger, not re-exported here: it loads the wasm
export { DEFAULTS } from "./defaults.js";
export * from "./key.js";
export * from "./fingerprint.js";
export * from "./rpc.js";
export * from "./problems.js";
export * from "./stored.js";
export * from "./answer.js";
export * from "./waiting.js";
export * from "./shards.js";
export * from "./settle.js";
export * from "./contract.js";
