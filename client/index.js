// @ts-check
// idempotency-ledger for JavaScript Workers: typed calls to a TenantLedger
// Durable Object over RPC v1, plus Idempotency-Key helpers and middleware.
// Runs on Workers (and Node >= 20): uses only fetch, Headers, Response,
// crypto.subtle and crypto.randomUUID. Types: ./index.d.ts, emitted by
// `npm run check:types` (tsc -p client) from the JSDoc of these modules.
//
// The modules live in rooms by audience (./README.md): rules/ (the
// gateway's rules: key, fingerprint, tenant, problems, stored responses,
// Prefer: wait, defaults), rpc/ (LedgerClient, TenantLedgers, settle, the
// ledger option's sources), middleware/ (withIdempotency, hono, store),
// ledger/ (idempotency-ledger/ledger, not re-exported here: it loads the
// wasm) and consumers/ (queues, workflows).
//
// The root export is what docs/clients.md, docs/typescript.md and
// docs/sharding.md document for users, and nothing else (tests/node/
// exports.test.mjs lists it): the modules' other exports are theirs, for
// the package's own modules.
export { LedgerClient, LedgerError } from "./rpc/client.js";
export { TenantLedgers, parseTenantShards, shardOf, shardObjectName } from "./rpc/shards.js";
export { fingerprint } from "./rules/fingerprint.js";
export {
  IdempotencyKeyError, parseIdempotencyKey, generateIdempotencyKey, deriveIdempotencyKey,
  withIdempotencyKey, applyIdempotencyKey,
} from "./rules/key.js";
export { captureResponse, captureBounded, replayResponse } from "./rules/stored.js";
export { refusalResponse } from "./rules/answer.js";
export { settle, landedEarlier, SETTLE_RETRY_DELAYS_MS } from "./rpc/settle.js";
export { withIdempotency, idempotencyContract } from "./middleware/contract.js";

// The types of that API (the declarations tsc emits from these modules).
/**
 * @typedef {import("./rules/key.js").IdempotencyKeyErrorCode} IdempotencyKeyErrorCode
 * @typedef {import("./rules/key.js").HeaderSource} HeaderSource
 * @typedef {import("./rules/fingerprint.js").FingerprintComponent} FingerprintComponent
 * @typedef {import("./rules/fingerprint.js").Fingerprint} Fingerprint
 * @typedef {import("./rules/fingerprint.js").FingerprintInput} FingerprintInput
 * @typedef {import("./rpc/client.js").ClaimCall} ClaimCall
 * @typedef {import("./rpc/client.js").WaitedAnswer} WaitedAnswer
 * @typedef {import("./rpc/client.js").ClaimOutcome} ClaimOutcome
 * @typedef {import("./rpc/client.js").ClaimRefusal} ClaimRefusal
 * @typedef {import("./rpc/client.js").CompleteCall} CompleteCall
 * @typedef {import("./rpc/client.js").RecordState} RecordState
 * @typedef {import("./rpc/client.js").CompleteOutcome} CompleteOutcome
 * @typedef {import("./rpc/client.js").ReleaseCall} ReleaseCall
 * @typedef {import("./rpc/client.js").ReleaseOutcome} ReleaseOutcome
 * @typedef {import("./rpc/client.js").EvictOutcome} EvictOutcome
 * @typedef {import("./rpc/client.js").RecordView} RecordView
 * @typedef {import("./rpc/client.js").LedgerStats} LedgerStats
 * @typedef {import("./rpc/client.js").TrendMinute} TrendMinute
 * @typedef {import("./rpc/client.js").ListCall} ListCall
 * @typedef {import("./rpc/client.js").ListPage} ListPage
 * @typedef {import("./rpc/client.js").ListPosition} ListPosition
 * @typedef {import("./rpc/client.js").ListedRecord} ListedRecord
 * @typedef {import("./rpc/client.js").ReplayedCall} ReplayedCall
 * @typedef {import("./rpc/client.js").AppRequest} AppRequest
 * @typedef {import("./rpc/client.js").ExecuteCall} ExecuteCall
 * @typedef {import("./rpc/client.js").ExecuteOutcome} ExecuteOutcome
 * @typedef {import("./rpc/client.js").LedgerStub} LedgerStub
 * @typedef {import("./rpc/client.js").LedgerNamespace} LedgerNamespace
 * @typedef {import("./rpc/client.js").LedgerServiceRpc} LedgerServiceRpc
 * @typedef {import("./rules/problems.js").Problem} Problem
 * @typedef {import("./rules/problems.js").ProblemSlug} ProblemSlug
 * @typedef {import("./rules/stored.js").StoredResponse} StoredResponse
 * @typedef {import("./rules/stored.js").CaptureOptions} CaptureOptions
 * @typedef {import("./rules/stored.js").BoundedCapture} BoundedCapture
 * @typedef {import("./rpc/shards.js").ShardLayout} ShardLayout
 * @typedef {import("./rpc/shards.js").KeyHomes} KeyHomes
 * @typedef {import("./middleware/contract.js").IdempotencyLedgerSource} IdempotencyLedgerSource
 * @typedef {import("./middleware/contract.js").LedgerServiceCalls} LedgerServiceCalls
 * @typedef {import("./middleware/contract.js").OneTenantLedger} OneTenantLedger
 * @typedef {import("./middleware/contract.js").ReplayedEvent} ReplayedEvent
 * @typedef {import("./middleware/contract.js").ConflictEvent} ConflictEvent
 * @typedef {import("./middleware/contract.js").StoredEvent} StoredEvent
 * @typedef {import("./middleware/contract.js").SettlementFailure} SettlementFailure
 * @typedef {import("./middleware/contract.js").RouteResult} RouteResult
 * @typedef {import("./middleware/contract.js").IdempotencyInfo} IdempotencyInfo
 */
/**
 * @template T
 * @typedef {import("./rpc/settle.js").Settled<T>} Settled
 */
/**
 * @template {unknown[]} A
 * @template T
 * @typedef {import("./middleware/contract.js").PerRequest<A, T>} PerRequest
 */
/**
 * @template {unknown[]} A
 * @typedef {import("./middleware/contract.js").IdempotencyOptions<A>} IdempotencyOptions
 */
/**
 * @template {unknown[]} A
 * @typedef {import("./middleware/contract.js").ContractRun<A>} ContractRun
 */
/**
 * @template {unknown[]} A
 * @typedef {import("./middleware/contract.js").IdempotencyContract<A>} IdempotencyContract
 */
