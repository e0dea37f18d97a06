// @ts-check
// idempotency-ledger/store: the store contract of the seed package's
// middleware (`IdempotencyStore`: claim / complete / release, their shapes
// and `Result` values) over one tenant's TenantLedger object, so
// middleware written against that contract runs on this ledger unchanged
// (docs/migrating.md). What it maps:
//   - a record id is our key (the seed's ids are SHA-256 hex: valid keys);
//   - the request's fingerprint string (or null: keys alone) is one
//     fingerprint component of its own, so a different string is a
//     different request;
//   - a lease is the claim's grant as a string, `<generation>.<token>`
//     (the generation and the claim's lease token; `<generation>` alone
//     from an object older than tokens): `complete` and `release` are
//     fenced on both by the object (a superseded lease, or another
//     object's grant of the same generation, changes nothing);
//   - `leaseMs` and `expiresAt - now` become the claim's lease and
//     retention in whole seconds (rounded up; the object's clock runs
//     them, never the caller's `now`).
// Every answer is a `Result`: `{ ok: true, value }` or `{ ok: false, error }`
// with an `IdempotencyStoreError`; nothing here throws once the store is made.
import { MAX_WINDOW_SECONDS } from "../rules/defaults.js";
import { checkOptions } from "../rules/check-options.js";
/** @import { OptionSpec } from "../rules/check-options.js" */
import { oneComponent } from "../rules/fingerprint.js";
import { keyProblem } from "../rules/request.js";
import { ledgerSource } from "../rpc/sources.js";
/** @import { LedgerSource } from "../rpc/sources.js" */
/** @import { StoredResponse as LedgerResponse } from "../rules/stored.js" */

/**
 * A claim, as the seed's middleware makes it: all times epoch milliseconds.
 * @typedef {object} ClaimRequest
 * @property {string} id The record id (our key: 1–255 printable ASCII characters).
 * @property {string | null} fingerprint The request's fingerprint, or null to compare keys alone.
 * @property {number} now The caller's clock (informative: the object's own clock runs leases and expiry).
 * @property {number} leaseMs How long the claim holds before a retry may take it over.
 * @property {number} expiresAt When the record may be forgotten.
 */

/**
 * A stored response, plain JSON: status, lowercased header pairs (never set-cookie), the body as base64.
 * @typedef {object} StoredResponse
 * @property {number} status
 * @property {[string, string][]} headers
 * @property {string} body base64 ("" for no body)
 */

/**
 * @typedef {{ status: "claimed"; lease: string }
 *   | { status: "in-flight"; fingerprint: string | null }
 *   | { status: "completed"; fingerprint: string | null; response: StoredResponse }} ClaimOutcome
 */

/**
 * @template T
 * @typedef {{ ok: true; value: T } | { ok: false; error: IdempotencyStoreError }} Result
 */

/**
 * The store contract (the seed package's `IdempotencyStore`).
 * @typedef {object} IdempotencyStore
 * @property {(request: ClaimRequest) => Promise<Result<ClaimOutcome>>} claim
 * @property {(id: string, lease: string, response: StoredResponse, expiresAt: number) => Promise<Result<void>>} complete
 * @property {(id: string, lease: string) => Promise<Result<void>>} release
 */

/**
 * @typedef {object} LedgerStoreOptions
 * @property {LedgerSource} ledger A `LedgerClient` (one tenant's object), or a `LedgerService` binding or a
 *   TenantLedger Durable Object namespace with `tenant`.
 * @property {string} [tenant] The tenant, with a binding or a namespace.
 * @property {string | Map<string, import("../rpc/shards.js").ShardLayout>} [tenantShards] TENANT_SHARDS, with a namespace.
 * @property {string} [jurisdiction] The tenant's jurisdiction (`"eu"`, `"fedramp"`, `"fedramp-high"`, `"us"`: its
 *   TENANT_JURISDICTIONS value), with a namespace: its objects are `namespace.jurisdiction(J)`'s.
 */

/** The store could not answer: the ledger unreachable or refusing, or a call it cannot take. */
export class IdempotencyStoreError extends Error {
  /**
   * @param {string} message
   * @param {{ cause?: unknown }} [options]
   */
  constructor(message, options) {
    super(message, options);
    this.name = "IdempotencyStoreError";
  }
}

/** What a mismatched claim reports as the record's fingerprint: never equal to a request's. */
export const OTHER_FINGERPRINT = "idempotency-ledger:another-request";

/** @template T @param {T} value @returns {Result<T>} */
const ok = (value) => ({ ok: true, value });
/** @param {string} message @param {unknown} [cause] @returns {{ ok: false; error: IdempotencyStoreError }} */
const failed = (message, cause) => ({ ok: false, error: new IdempotencyStoreError(message, cause === undefined ? undefined : { cause }) });

/** Is `id` a key by the key's rules (../rules/request.js `keyProblem`: 1–255 printable ASCII)? @param {unknown} id */
const isKey = (id) => typeof id === "string" && keyProblem(id) === null;

/**
 * Whole seconds from milliseconds, rounded up, within the RPC's window bounds (or null).
 * @param {unknown} ms
 */
function seconds(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) return null;
  const s = Math.ceil(ms / 1000);
  return s <= MAX_WINDOW_SECONDS ? s : null;
}

/**
 * The request's fingerprint as one component: its string, or "keys alone"
 * (as the middleware's `fingerprint` option makes them).
 * @param {string | null} value
 */
const asFingerprint = (value) => (value === null ? oneComponent("keys-only", "") : oneComponent("fingerprint", value));

/** @param {LedgerResponse} r @returns {StoredResponse} */
const toSeed = (r) => ({ status: r.status, headers: r.headers, body: r.body ?? "" });

/** @param {unknown} r @returns {LedgerResponse | null} */
function fromSeed(r) {
  if (r === null || typeof r !== "object") return null;
  const { status, headers, body } = /** @type {Record<string, unknown>} */ (r);
  if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599) return null;
  if (!Array.isArray(headers) || !headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === "string" && typeof h[1] === "string")) return null;
  if (typeof body !== "string") return null;
  const pairs = /** @type {[string, string][]} */ (headers).map(([n, v]) => /** @type {[string, string]} */ ([n.toLowerCase(), v]));
  if (pairs.some(([n]) => n === "set-cookie")) return null;
  return { status, headers: pairs, body };
}

/**
 * The grant a lease this store gave names: `<generation>.<token>`, or `<generation>` alone.
 * @param {unknown} lease
 * @returns {{ generation: number; lease?: string } | null}
 */
function grantOf(lease) {
  const m = typeof lease === "string" ? /^([1-9][0-9]{0,15})(?:\.([0-9a-f]{32}))?$/.exec(lease) : null;
  if (m === null || !Number.isSafeInteger(Number(m[1]))) return null;
  return { generation: Number(m[1]), ...(m[2] === undefined ? {} : { lease: m[2] }) };
}

/**
 * The lease this store gives for a grant.
 * @param {{ generation: number; lease?: string }} claimed
 */
const leaseOf = ({ generation, lease }) => (typeof lease === "string" ? `${generation}.${lease}` : String(generation));

/** @param {unknown} e */
const messageOf = (e) => (e instanceof Error ? e.message : String(e));

/**
 * A claim on the tenant's ledger, answered as the seed's store answers it.
 * @param {() => Promise<import("../rpc/sources.js").TenantLedgerCalls | { ok: false; error: IdempotencyStoreError }>} resolve
 * @param {ClaimRequest} request
 * @returns {Promise<Result<ClaimOutcome>>}
 */
async function claimOn(resolve, request) {
  if (request === null || typeof request !== "object") return failed("claim needs a ClaimRequest");
  const { id, fingerprint, now, leaseMs, expiresAt } = request;
  if (!isKey(id)) return failed("claim: id must be 1-255 printable ASCII characters");
  if (fingerprint !== null && typeof fingerprint !== "string") return failed("claim: fingerprint must be a string or null");
  const lease = seconds(leaseMs);
  if (lease === null) return failed(`claim: leaseMs must be a positive number of at most ${MAX_WINDOW_SECONDS} s`);
  if (typeof now !== "number" || typeof expiresAt !== "number") return failed("claim: now and expiresAt must be epoch milliseconds");
  const retention = seconds(expiresAt - now);
  if (retention === null) return failed(`claim: expiresAt must be after now, by at most ${MAX_WINDOW_SECONDS} s`);
  const calls = await resolve();
  if ("ok" in calls) return calls;
  let answer;
  try {
    answer = await calls.claim({
      key: id,
      fingerprint: await asFingerprint(fingerprint),
      lease_seconds: lease,
      // A record outlives its lease (docs/contract.md §4).
      retention_seconds: Math.max(retention, lease),
    });
  } catch (e) {
    return failed(`claim failed: ${messageOf(e)}`, e);
  }
  switch (answer.outcome) {
    case "claimed": return ok({ status: "claimed", lease: leaseOf(answer) });
    case "in_flight": return ok({ status: "in-flight", fingerprint });
    case "completed": return ok({ status: "completed", fingerprint, response: toSeed(answer.response) });
    // The record was claimed with another fingerprint: the ledger keeps digests, not the string.
    case "mismatch": return ok({ status: "in-flight", fingerprint: OTHER_FINGERPRINT });
    case "ledger_full": return failed(`claim refused: the tenant's ledger is full (retry in ${answer.retry_after_ms} ms)`);
  }
  return failed(`claim: unexpected answer ${JSON.stringify(answer)}`);
}

/**
 * The options of `ledgerStore`, checked by ../rules/check-options.js (values, not functions: below).
 * @type {Readonly<Record<string, OptionSpec>>}
 */
const STORE_OPTIONS = Object.freeze({ ledger: { any: true }, tenant: { any: true }, tenantShards: { any: true }, jurisdiction: { any: true } });

/**
 * The seed's store contract over one tenant's TenantLedger object.
 * Invalid options throw a TypeError (an unknown name included); every
 * call after that answers a `Result`.
 * @param {LedgerStoreOptions} options
 * @returns {IdempotencyStore}
 */
export function ledgerStore(options) {
  const { ledger, tenant, tenantShards, jurisdiction } = checkOptions("idempotency-ledger/store", options, STORE_OPTIONS);
  if ([ledger, tenant, tenantShards, jurisdiction].some((v) => typeof v === "function")) {
    throw new TypeError("idempotency-ledger/store: ledger, tenant, tenantShards and jurisdiction are values here (make a store per request for per-request values)");
  }
  const source = ledgerSource({ ledger, tenant, tenantShards, jurisdiction });
  /** @returns {Promise<import("../rpc/sources.js").TenantLedgerCalls | { ok: false; error: IdempotencyStoreError }>} */
  const resolve = async () => {
    const resolved = await source.resolve([]);
    return "misconfigured" in resolved ? failed(`idempotency-ledger/store: ${resolved.misconfigured}`) : resolved.ledger;
  };

  return {
    claim: (request) => claimOn(resolve, request),

    async complete(id, lease, response, expiresAt) {
      if (!isKey(id)) return failed("complete: id must be 1-255 printable ASCII characters");
      const grant = grantOf(lease);
      if (grant === null) return failed("complete: lease is not one this store gave");
      const stored = fromSeed(response);
      if (stored === null) return failed("complete: response must be { status 200-599, headers: lowercased [name, value] pairs without set-cookie, body: base64 }");
      const retention = seconds(typeof expiresAt === "number" ? expiresAt - Date.now() : NaN) ?? 1;
      const calls = await resolve();
      if ("ok" in calls) return calls;
      try {
        // `fenced_out`: the lease was superseded (taken over, released, completed): nothing changed.
        await calls.complete({ key: id, ...grant, response: stored, retention_seconds: retention });
        return ok(undefined);
      } catch (e) {
        return failed(`complete failed: ${messageOf(e)}`, e);
      }
    },

    async release(id, lease) {
      if (!isKey(id)) return failed("release: id must be 1-255 printable ASCII characters");
      const grant = grantOf(lease);
      if (grant === null) return failed("release: lease is not one this store gave");
      const calls = await resolve();
      if ("ok" in calls) return calls;
      try {
        // `fenced_out` (a completed record, or a superseded lease): left alone.
        await calls.release({ key: id, ...grant });
        return ok(undefined);
      } catch (e) {
        return failed(`release failed: ${messageOf(e)}`, e);
      }
    },
  };
}
