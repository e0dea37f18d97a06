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
//   options.js      the middleware's options, checked, and its hooks
//   claim.js        the middleware's claim and its refusals
//   capture.js      the route's response: shouldStore and its bounded capture
//   settlement.js   the route's one run and the key's settlement
//   contract.js     the middleware contract (withIdempotency; ./hono.js)
//   ledger.js       idempotency-ledger/ledger, not re-exported here: it loads the wasm
//   consumer.js     one unit of work run once per key outside HTTP (runOnce, forwardOnce)
//   queues.js       idempotency-ledger/queues, the Queue consumer (docs/consumers.md)
//
// The root export is what docs/clients.md, docs/typescript.md and
// docs/sharding.md document for users, and nothing else (tests/node/
// exports.test.mjs lists it): the modules' other exports are theirs, for
// the package's own modules.
export { LedgerClient, LedgerError } from "./rpc.js";
export { TenantLedgers, parseTenantShards, shardOf, shardObjectName } from "./shards.js";
export { fingerprint } from "./fingerprint.js";
export {
  IdempotencyKeyError, parseIdempotencyKey, generateIdempotencyKey, deriveIdempotencyKey,
  withIdempotencyKey, applyIdempotencyKey,
} from "./key.js";
export { captureResponse, captureBounded, replayResponse } from "./stored.js";
export { refusalResponse } from "./answer.js";
export { settle, landedEarlier, SETTLE_RETRY_DELAYS_MS } from "./settle.js";
export { withIdempotency, idempotencyContract } from "./contract.js";

// The types of that API (the declarations tsc emits from these modules).
/**
 * @typedef {import("./key.js").IdempotencyKeyErrorCode} IdempotencyKeyErrorCode
 * @typedef {import("./key.js").HeaderSource} HeaderSource
 * @typedef {import("./fingerprint.js").FingerprintComponent} FingerprintComponent
 * @typedef {import("./fingerprint.js").Fingerprint} Fingerprint
 * @typedef {import("./fingerprint.js").FingerprintInput} FingerprintInput
 * @typedef {import("./rpc.js").ClaimCall} ClaimCall
 * @typedef {import("./rpc.js").WaitedAnswer} WaitedAnswer
 * @typedef {import("./rpc.js").ClaimOutcome} ClaimOutcome
 * @typedef {import("./rpc.js").ClaimRefusal} ClaimRefusal
 * @typedef {import("./rpc.js").CompleteCall} CompleteCall
 * @typedef {import("./rpc.js").RecordState} RecordState
 * @typedef {import("./rpc.js").CompleteOutcome} CompleteOutcome
 * @typedef {import("./rpc.js").ReleaseCall} ReleaseCall
 * @typedef {import("./rpc.js").ReleaseOutcome} ReleaseOutcome
 * @typedef {import("./rpc.js").EvictOutcome} EvictOutcome
 * @typedef {import("./rpc.js").RecordView} RecordView
 * @typedef {import("./rpc.js").LedgerStats} LedgerStats
 * @typedef {import("./rpc.js").TrendMinute} TrendMinute
 * @typedef {import("./rpc.js").ListCall} ListCall
 * @typedef {import("./rpc.js").ListPage} ListPage
 * @typedef {import("./rpc.js").ListPosition} ListPosition
 * @typedef {import("./rpc.js").ListedRecord} ListedRecord
 * @typedef {import("./rpc.js").ReplayedCall} ReplayedCall
 * @typedef {import("./rpc.js").AppRequest} AppRequest
 * @typedef {import("./rpc.js").ExecuteCall} ExecuteCall
 * @typedef {import("./rpc.js").ExecuteOutcome} ExecuteOutcome
 * @typedef {import("./rpc.js").LedgerStub} LedgerStub
 * @typedef {import("./rpc.js").LedgerNamespace} LedgerNamespace
 * @typedef {import("./rpc.js").LedgerServiceRpc} LedgerServiceRpc
 * @typedef {import("./problems.js").Problem} Problem
 * @typedef {import("./problems.js").ProblemSlug} ProblemSlug
 * @typedef {import("./stored.js").StoredResponse} StoredResponse
 * @typedef {import("./stored.js").CaptureOptions} CaptureOptions
 * @typedef {import("./stored.js").BoundedCapture} BoundedCapture
 * @typedef {import("./shards.js").ShardLayout} ShardLayout
 * @typedef {import("./shards.js").KeyHomes} KeyHomes
 * @typedef {import("./contract.js").IdempotencyLedgerSource} IdempotencyLedgerSource
 * @typedef {import("./contract.js").LedgerServiceCalls} LedgerServiceCalls
 * @typedef {import("./contract.js").OneTenantLedger} OneTenantLedger
 * @typedef {import("./contract.js").ReplayedEvent} ReplayedEvent
 * @typedef {import("./contract.js").ConflictEvent} ConflictEvent
 * @typedef {import("./contract.js").StoredEvent} StoredEvent
 * @typedef {import("./contract.js").SettlementFailure} SettlementFailure
 * @typedef {import("./contract.js").RouteResult} RouteResult
 * @typedef {import("./contract.js").IdempotencyInfo} IdempotencyInfo
 */
/**
 * @template T
 * @typedef {import("./settle.js").Settled<T>} Settled
 */
/**
 * @template {unknown[]} A
 * @template T
 * @typedef {import("./contract.js").PerRequest<A, T>} PerRequest
 */
/**
 * @template {unknown[]} A
 * @typedef {import("./contract.js").IdempotencyOptions<A>} IdempotencyOptions
 */
/**
 * @template {unknown[]} A
 * @typedef {import("./contract.js").ContractRun<A>} ContractRun
 */
/**
 * @template {unknown[]} A
 * @typedef {import("./contract.js").IdempotencyContract<A>} IdempotencyContract
 */
