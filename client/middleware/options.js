// @ts-check
// The middleware's options (./contract.js): their types, their defaults
// (the gateway's, ../rules/defaults.js) and their check, made once when the
// middleware is made (a TypeError naming what is wrong); and the hooks,
// called so that one that throws never changes the answer.
import { DEFAULTS, MAX_BODY_CEILING, MAX_WAIT_SECONDS, MAX_WINDOW_SECONDS, STORED_BODY_CEILING } from "../rules/defaults.js";
import { checkOptions } from "../rules/check-options.js";
/** @import { OptionSpec } from "../rules/check-options.js" */
import { encoder, sha256hex } from "../rules/bytes.js";
import { ledgerSource } from "../rpc/sources.js";
/** @import { LedgerSource, TenantShardsValue, Resolved } from "../rpc/sources.js" */

/**
 * A value an option gives per request: `(...args) => T`, sync or async.
 * @template {unknown[]} A
 * @template T
 * @typedef {(...args: A) => T | Promise<T>} PerRequest
 */

/**
 * The middleware's options. `A` is what every callback and hook is given
 * after its own first argument: `[c]` (Hono's Context) for the Hono
 * middleware, `[request, env, ctx]` for `withIdempotency`.
 * @template {unknown[]} A
 * @typedef {object} IdempotencyOptions
 * @property {LedgerSource | PerRequest<A, LedgerSource | null | undefined>} ledger The ledger: a `LedgerClient`
 *   (one tenant's object), a `LedgerService` service binding or a TenantLedger Durable Object namespace (both
 *   with `tenant`), or a function returning one, e.g. `(c) => c.env.LEDGER`. A function that throws or
 *   returns nothing (a binding missing from the Worker's configuration) is the server's configuration error:
 *   `500 misconfigured` whatever `failurePolicy` says, and nothing runs; a thrown message is only logged
 *   (`idempotency.ledger_failed`), never answered.
 * @property {string | PerRequest<A, string | null | undefined>} [tenant] The tenant, for a binding or a
 *   namespace: 1–256 bytes of UTF-8 without control characters, e.g. `(c) => c.get("tenant")` or
 *   `` (c) => `api-key:${c.get("caller").id}` ``. Anything else at request time is
 *   `500 misconfigured` and nothing runs. Given with a `LedgerClient`: a TypeError (it is one tenant's object).
 * @property {TenantShardsValue | PerRequest<A, TenantShardsValue | null | undefined>} [tenantShards] TENANT_SHARDS, for
 *   a namespace: keys are placed and resharding followed as the gateway does (`TenantLedgers`). Invalid: a TypeError
 *   when the middleware is made, or `500 misconfigured` naming TENANT_SHARDS from a function. Default: every tenant
 *   is one object. With any other source: a TypeError (a `LedgerService` routes with its own TENANT_SHARDS).
 * @property {string | PerRequest<A, string | null | undefined>} [jurisdiction] The tenant's jurisdiction (`"eu"`,
 *   `"fedramp"`, `"fedramp-high"`, `"us"`), for a namespace: the value TENANT_JURISDICTIONS gives the tenant, so its
 *   objects are `namespace.jurisdiction(J)`'s, as the gateway's; null or undefined from a function: unrestricted.
 *   Invalid: a TypeError when the middleware is made, or `500 misconfigured` naming TENANT_JURISDICTIONS at
 *   request time, as is a runtime that keeps no jurisdictions (local workerd); nothing runs. With any other
 *   source: a TypeError (a `LedgerService` routes with its own TENANT_JURISDICTIONS).
 * @property {string | PerRequest<A, string | null | undefined>} [key] Where the key comes from: a header name
 *   (default `"Idempotency-Key"`, as IDEMPOTENCY_KEY_HEADER; its value parsed by the same rules), or a function
 *   returning the key itself (e.g. `(c) => c.req.header("x-job-id")`, or a key derived from a job id) or null for
 *   none. Whatever the source, the key is 1–255 printable ASCII characters, else `400 idempotency-key-invalid`;
 *   a function that throws or gives a non-string is `500 misconfigured`.
 * @property {false | PerRequest<[request: FingerprintRequest, ...args: A], string>} [fingerprint] What "the same
 *   request" means. Default: the gateway's fingerprint (method, target, `fingerprintHeaders`, raw body). `false`:
 *   keys alone are compared (any request with a used key gets its answer). A function: its string is the
 *   fingerprint (e.g. the body without a field that changes on every retry); a reuse with another string is
 *   `422` with `differs: ["fingerprint"]`; a function that throws or gives a non-string is `500 misconfigured`.
 * @property {readonly string[]} [protectedMethods] Default `["POST", "PATCH"]` (as PROTECTED_METHODS).
 * @property {boolean} [required] Default `true`: a protected request without a key gets
 *   `400 idempotency-key-missing` (as IDEMPOTENCY_REQUIRED).
 * @property {readonly string[]} [fingerprintHeaders] Default `["content-type"]` (as FINGERPRINT_HEADERS).
 * @property {readonly string[]} [storedHeaders] Default `["content-type", "location", "etag"]` (as STORED_RESPONSE_HEADERS).
 * @property {number} [maxStoredBodyBytes] Default 1 MiB (as MAX_STORED_BODY_BYTES). The route's body is read no further
 *   than this (+ 1 byte) before the key is completed: a body within it is stored and answered; a larger one completes
 *   the key as a tombstone at once (retries, even while it still streams, get `500
 *   idempotency-response-not-retained`) and then streams to its caller as it comes, memory bounded by this plus a chunk.
 * @property {number} [maxBodyBytes] The largest request body, default 1 MiB, at most 16 MiB (as MAX_REQUEST_BODY_BYTES):
 *   a larger `Content-Length`, or more bytes read, is `413 request-too-large`; nothing is claimed or run.
 * @property {number} [waitSeconds] Seconds a retry waits for an in-flight first run when it does not send
 *   `Prefer: wait=N` (as IN_FLIGHT_WAIT_SECONDS). Default 0.
 * @property {number} [maxWaitSeconds] The most any request waits (as IN_FLIGHT_WAIT_MAX_SECONDS). Default 10; 0..300.
 * @property {number} [leaseSeconds] The claim's lease, 1..31536000 (as LEASE_SECONDS). Default: the object's.
 * @property {number} [retentionSeconds] How long a completed key is replayed, 1..31536000, sent with the claim and
 *   the completion (as RETENTION_SECONDS). Default: the object's. Not shorter than `leaseSeconds` (else a TypeError)
 *   nor, when `leaseSeconds` is not given, than the object's own lease: otherwise the object refuses the claim and
 *   the middleware answers `500 misconfigured` (as any claim the object refuses with a 4xx: the middleware's own call).
 * @property {PerRequest<[response: Response, ...args: A], boolean>} [shouldStore] Whether the route's response is
 *   stored; `false` releases the key instead (the response is still returned; a retry runs again). Default: every
 *   response is stored, 5xx included (as RELEASE_ON_5XX=false). Read its status and headers, not its body. A
 *   `shouldStore` that throws counts as `false`.
 * @property {"closed" | "open"} [failurePolicy] Default `"closed"` (as FAILURE_POLICY): a claim that cannot reach
 *   the ledger is `503 idempotency-store-unavailable`. `"open"`: when the ledger was *certainly not reached* — the
 *   runtime refused the claim as `overloaded` before delivering it, and only then — the route runs unprotected
 *   (nothing claimed or stored) and an `idempotency.unprotected` warning is logged; any other failure may have
 *   reached the ledger and is `503` whatever the policy, as the gateway. A configuration error (a `ledger` function
 *   that throws or gives none, a wrong tenant, a claim the object refuses) is `500 misconfigured` under both.
 * @property {string} [problemBase] The base URI of every problem document's `type` (`type` is problemBase + slug),
 *   an absolute URL. Default: the catalog's base (`base` in docs/problems.json).
 * @property {PerRequest<[event: ReplayedEvent, ...args: A], void>} [onReplayed] Called once when a request is
 *   answered with a stored response.
 * @property {PerRequest<[event: ConflictEvent, ...args: A], void>} [onConflict] Called once when a claim is refused:
 *   the key is in flight (409), was used for a different request (422) or the ledger is full (429).
 * @property {PerRequest<[event: StoredEvent, ...args: A], void>} [onStored] Called once when the route's response
 *   has been stored (the completion landed).
 * @property {(failure: SettlementFailure) => void | Promise<void>} [onSettlementFailed] Called when a completion
 *   or a release still fails after its retries (the handler's response is returned, or its error rethrown,
 *   all the same). Default: one `console.error` JSON line, `{"event":"idempotency.complete_failed"` (or
 *   `release_failed`) `,"key":<12 hex of the key's SHA-256>,"error":<message>}`.
 *
 * A hook (`onReplayed`, `onConflict`, `onStored`, `onSettlementFailed`) is awaited; one that throws or
 * rejects is ignored: it never changes the answer.
 */

/**
 * What a `fingerprint` function is given: the request's method, target (path and query as received),
 * headers and body bytes (already read: the request's own body is consumed), with `text()` and `json()`.
 * @typedef {object} FingerprintRequest
 * @property {string} method
 * @property {string} target
 * @property {Headers} headers
 * @property {Uint8Array} body
 * @property {() => string} text
 * @property {() => unknown} json Throws on a body that is not JSON.
 */

/**
 * What `onReplayed` is given.
 * @typedef {object} ReplayedEvent
 * @property {string} key The request's Idempotency-Key (parsed).
 * @property {number} generation The generation that completed.
 * @property {number} status The status answered (a tombstone's replay: 500).
 */

/**
 * What `onConflict` is given.
 * @typedef {object} ConflictEvent
 * @property {string} key
 * @property {"in_flight" | "mismatch" | "ledger_full"} outcome The claim's refusal.
 * @property {number} status 409, 422 or 429.
 * @property {string[]} [differs] For a mismatch: what differed (`["body"]`, …).
 */

/**
 * What `onStored` is given.
 * @typedef {object} StoredEvent
 * @property {string} key
 * @property {number} generation
 * @property {number} status The stored response's status.
 * @property {boolean} retained false: the body was too large and the record is a tombstone.
 */

/**
 * A completion or release that failed after its retries: what `onSettlementFailed` is given.
 * @typedef {object} SettlementFailure
 * @property {"complete" | "release"} operation
 * @property {string} key The request's Idempotency-Key (parsed).
 * @property {number} generation The claim's generation.
 * @property {unknown} error The last attempt's error (a `LedgerError`, or an `Error` for an answer without a known outcome).
 */

/**
 * The options as checked: the defaults applied, the methods upper-cased,
 * the claim's windows in RPC form, the ledger a source to resolve per request.
 * @template {unknown[]} A
 * @typedef {object} CheckedOptions
 * @property {{ resolve: (args: A) => Promise<Resolved> }} source
 * @property {string | ((...args: A) => string | null | undefined | Promise<string | null | undefined>)} key
 *   The header the key is read from (lowercased), or the function that gives it.
 * @property {IdempotencyOptions<A>["fingerprint"]} fingerprint
 * @property {Set<string>} methods
 * @property {{ lease_seconds?: number; retention_seconds?: number }} windows
 * @property {boolean} required
 * @property {readonly string[]} fingerprintHeaders
 * @property {readonly string[]} storedHeaders
 * @property {number} maxStoredBodyBytes
 * @property {number} maxBodyBytes
 * @property {number} waitSeconds
 * @property {number} maxWaitSeconds
 * @property {number | undefined} leaseSeconds
 * @property {number | undefined} retentionSeconds
 * @property {IdempotencyOptions<A>["shouldStore"]} shouldStore
 * @property {"closed" | "open"} failurePolicy
 * @property {string | undefined} problemBase
 * @property {IdempotencyOptions<A>["onReplayed"]} onReplayed
 * @property {IdempotencyOptions<A>["onConflict"]} onConflict
 * @property {IdempotencyOptions<A>["onStored"]} onStored
 * @property {(failure: SettlementFailure) => void | Promise<void>} onSettlementFailed
 */

const WHO = "idempotency middleware";
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Every option of `withIdempotency` and the Hono middleware, checked by ../rules/check-options.js
 * (what a spec cannot say, below): any other name is a TypeError.
 * @type {Readonly<Record<string, OptionSpec>>}
 */
const SPEC = Object.freeze({
  ledger: { any: true }, tenant: { any: true }, tenantShards: { any: true }, jurisdiction: { any: true },
  key: { any: true, default: DEFAULTS.keyHeader }, fingerprint: { any: true },
  protectedMethods: { tokens: "method", default: DEFAULTS.protectedMethods },
  required: { boolean: true, default: DEFAULTS.required },
  fingerprintHeaders: { tokens: "header", default: DEFAULTS.fingerprintHeaders },
  storedHeaders: { tokens: "header", default: DEFAULTS.storedHeaders },
  maxStoredBodyBytes: { whole: [0, STORED_BODY_CEILING], default: DEFAULTS.maxStoredBodyBytes },
  maxBodyBytes: { whole: [0, MAX_BODY_CEILING], default: DEFAULTS.maxBodyBytes },
  waitSeconds: { whole: [0, MAX_WAIT_SECONDS], default: DEFAULTS.waitSeconds },
  maxWaitSeconds: { whole: [0, MAX_WAIT_SECONDS], default: DEFAULTS.maxWaitSeconds },
  leaseSeconds: { whole: [1, MAX_WINDOW_SECONDS] },
  retentionSeconds: { whole: [1, MAX_WINDOW_SECONDS] },
  shouldStore: { function: "" },
  failurePolicy: { oneOf: ["closed", "open"], default: DEFAULTS.failurePolicy },
  problemBase: { any: true },
  onReplayed: { function: "" }, onConflict: { function: "" }, onStored: { function: "" },
  onSettlementFailed: { function: "", default: logSettlementFailure },
});

/** Every option of `withIdempotency` and the Hono middleware: any other name is a TypeError. */
export const MIDDLEWARE_OPTIONS = Object.freeze(Object.keys(SPEC));

/**
 * The options with their defaults, checked (a TypeError naming what is wrong,
 * an unknown name included: ../rules/check-options.js).
 * @template {unknown[]} A
 * @param {IdempotencyOptions<A>} options
 * @returns {CheckedOptions<A>}
 */
export function checkedOptions(options) {
  const o = checkOptions(WHO, options, SPEC);
  const { ledger, tenant, tenantShards, jurisdiction, key, fingerprint, waitSeconds, maxWaitSeconds, leaseSeconds, retentionSeconds, problemBase } = o;
  if (typeof key !== "function" && !(typeof key === "string" && HEADER_NAME.test(key))) {
    throw new TypeError("idempotency middleware: key must be a header name or a function returning the key");
  }
  if (fingerprint !== undefined && fingerprint !== false && typeof fingerprint !== "function") {
    throw new TypeError("idempotency middleware: fingerprint must be false (compare keys alone) or a function returning a string");
  }
  if (waitSeconds > maxWaitSeconds) throw new TypeError("idempotency middleware: waitSeconds exceeds maxWaitSeconds");
  if (leaseSeconds !== undefined && retentionSeconds !== undefined && retentionSeconds < leaseSeconds) {
    throw new TypeError("idempotency middleware: retentionSeconds is shorter than leaseSeconds (a record must outlive its lease)");
  }
  if (problemBase !== undefined && !(typeof problemBase === "string" && URL.canParse(problemBase) && problemBase.endsWith("/"))) {
    throw new TypeError("idempotency middleware: problemBase must be an absolute URL ending in / (type = problemBase + slug)");
  }
  const windows = {
    ...(leaseSeconds === undefined ? {} : { lease_seconds: leaseSeconds }),
    ...(retentionSeconds === undefined ? {} : { retention_seconds: retentionSeconds }),
  };
  return /** @type {CheckedOptions<A>} */ ({
    ...o,
    source: ledgerSource({ ledger, tenant, tenantShards, jurisdiction }),
    key: typeof key === "string" ? key.toLowerCase() : key,
    methods: new Set(o.protectedMethods.map((/** @type {unknown} */ m) => String(m).toUpperCase())),
    windows,
  });
}

/** @param {string} key a short hash of the key for a log line (never the key itself) */
export async function shortHash(key) {
  return (await sha256hex(encoder.encode(key))).slice(0, 12);
}

/**
 * The default `onSettlementFailed`: the gateway's log line (the key as a
 * short hash, never the key itself).
 * @param {SettlementFailure} failure
 */
async function logSettlementFailure({ operation, key, error }) {
  const message = error instanceof Error ? error.message : String(error);
  console.error(JSON.stringify({ event: `idempotency.${operation}_failed`, key: await shortHash(key), error: message }));
}

/**
 * Calls a hook; one that throws or rejects costs the request nothing.
 * @template {unknown[]} P
 * @param {((...params: P) => unknown) | undefined} hook
 * @param {P} params
 */
export async function tell(hook, ...params) {
  if (hook === undefined) return;
  try { await hook(...params); } catch { /* a failing hook never changes the answer */ }
}

