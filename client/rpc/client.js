// @ts-check
// Typed calls to one TenantLedger Durable Object over RPC v1 (its fetch;
// docs/rpc-v1.md), and the types of that protocol.
import { TENANT_RULE, inJurisdiction, isObjectName, isTenantId, tenantObjectName } from "../rules/tenant.js";
import { LedgerError, retryAfterSeconds } from "./error.js";
import { LOST_ANSWER_RETRY_DELAYS_MS } from "../generated/limits.js";

export { LedgerError, retryAfterSeconds };
/** @import { Fingerprint } from "../rules/fingerprint.js" */
/** @import { StoredResponse } from "../rules/stored.js" */

export const RPC_V1_PREFIX = "/rpc/v1/";
/** The object's answer header naming how long a claim waited (ms). */
export const WAITED_HEADER = "ledger-waited-ms";
/** A keyed call's header: its caller asked the previous layout (of this many objects) first (Rust rpc). */
export const PREVIOUS_ASKED_HEADER = "ledger-previous-asked";
// Delays before a claim that names its attempt, or an execute, whose answer
// was lost is sent again (src/protocol/limits.json, as the Rust client's).
export { LOST_ANSWER_RETRY_DELAYS_MS };

/**
 * @typedef {object} ClaimCall
 * @property {string} key
 * @property {Fingerprint} fingerprint
 * @property {number} [lease_seconds] Defaults to the object's LEASE_SECONDS. 1..31536000.
 * @property {number} [retention_seconds] Defaults to the object's RETENTION_SECONDS. 1..31536000.
 * @property {number} [wait_ms] If the key is in flight under a live lease, wait up to this many ms for
 *   its outcome (replay, or the key released / its lease ended: claimed) instead of answering
 *   `in_flight` at once. 0..3600000, bounded by the object's IN_FLIGHT_WAIT_MAX_SECONDS and the lease. Default 0.
 * @property {string} [attempt] Names this claim attempt (1–64 of A-Z a-z 0-9 - _): a fresh random id
 *   per attempt (`crypto.randomUUID()`), never a client's input. If the answer is lost on the way
 *   back, the same call is answered the same grant while its lease is live; `LedgerClient.claim`
 *   sends such a claim again by itself unless it waits. Objects older than this field refuse it
 *   (400 invalid-rpc).
 */

/**
 * Present on a claim's answer when the object parked it: how long, in ms.
 * @typedef {object} WaitedAnswer
 * @property {number} [waited_ms]
 */

/**
 * @typedef {{ outcome: "claimed"; generation: number; takeover: boolean; lease?: string }
 *   | { outcome: "in_flight"; generation: number; retry_after_ms: number }
 *   | { outcome: "completed"; generation: number; response: StoredResponse; expires_at?: number }
 *   | { outcome: "mismatch"; differs: string[] }
 *   | { outcome: "ledger_full"; retry_after_ms: number }} ClaimOutcome
 * A claim's answer. `claimed.lease`: the token naming this grant across every object (present on
 * every grant of an object with lease tokens); pass it to `complete` / `release` with the
 * generation, so the settlement can never settle another object's grant of the same generation.
 * `completed.expires_at`: epoch ms (the object's clock) when the record leaves its retention
 * window; the answer cannot change before.
 */

/** @typedef {Exclude<ClaimOutcome, { outcome: "claimed" }>} ClaimRefusal A claim's answer other than `claimed`. */

/**
 * @typedef {object} CompleteCall
 * @property {string} key
 * @property {number} generation
 * @property {string} [lease] The claim's `lease` token: the completion is guarded by it (absent:
 *   by the generation alone, as before tokens).
 * @property {StoredResponse} response
 * @property {number} [retention_seconds] Defaults to the object's RETENTION_SECONDS.
 */

/**
 * Where a refused completion or release found the record.
 * @typedef {object} RecordState
 * @property {"in_flight" | "completed" | "released"} state
 * @property {number} generation
 */

/** @typedef {{ outcome: "stored" } | { outcome: "fenced_out"; current: RecordState | null }} CompleteOutcome */

/**
 * @typedef {object} ReleaseCall
 * @property {string} key
 * @property {number} generation
 * @property {string} [lease] The claim's `lease` token, as `CompleteCall.lease`.
 */

/** @typedef {{ outcome: "released" } | { outcome: "fenced_out"; current: RecordState | null }} ReleaseOutcome */
/**
 * What `evict` came to (docs/contract.md §2.11): `evicted` with the record as it stood when it was
 * removed (the next claim of the key runs again, above its generation); `in_flight` while an owner's
 * lease is live (nothing changed; try after `retry_after_ms`); `not_found` (nothing changed).
 * @typedef {{ outcome: "evicted"; record: RecordView }
 *   | { outcome: "in_flight"; generation: number; retry_after_ms: number }
 *   | { outcome: "not_found" }} EvictOutcome
 */

/**
 * @typedef {object} RecordView
 * @property {string} key
 * @property {"in_flight" | "completed" | "released"} state
 * @property {number} generation
 * @property {string} created_at RFC 3339, UTC
 * @property {string} expires_at
 * @property {string | null} lease_expires_at
 * @property {number | null} response_status
 * @property {boolean | null} retained false marks a tombstone
 * @property {number} replays
 */

/**
 * A place in a listing's walk: a record's `sweep_at` (epoch ms, the object's clock) and its key.
 * @typedef {object} ListPosition
 * @property {number} sweep_at
 * @property {string} key
 */

/**
 * @typedef {object} ListCall
 * @property {"in_flight" | "completed" | "released"} [state] Only records in this state (default: every state).
 *   `in_flight` walks oldest first (the stuck ones first); every other listing newest first, by `sweep_at`.
 * @property {number} [limit] Most keys on the page, 1..100 (default 20).
 * @property {ListPosition} [after] Start after this position: the previous page's `next`, with the same `state`.
 */

/**
 * A listed key: what `lookup` shows of it, and its `sweep_at` (its place in the walk, with its key).
 * @typedef {RecordView & { sweep_at: number }} ListedRecord
 */

/**
 * One page of a listing. A page scans at most 4 × `limit` records, so a filtered page may hold fewer
 * than `limit` keys (even none) while `next` is not null; `next: null` means nothing is left.
 * Pass `next` as `after` (with the same `state`) for the next page.
 * @typedef {object} ListPage
 * @property {ListedRecord[]} keys
 * @property {ListPosition | null} next
 */

/**
 * @typedef {object} LedgerStats
 * @property {number} records
 * @property {number} in_flight
 * @property {number} completed
 * @property {number} released
 * @property {number} claims
 * @property {number} replays
 * @property {number} in_use
 * @property {number} reused
 * @property {number} takeovers
 * @property {number} fenced_out
 * @property {number} swept
 * @property {number} complete_failed Completions a gateway gave up on after its retries.
 * @property {number} waited Claims that met a live lease and waited for its outcome.
 * @property {number} waited_replayed Waiters answered with the replay of the run they waited for.
 * @property {number} waited_timed_out Waiters whose budget ran out (409).
 * @property {number} quota_tombstones Completions stored as tombstones because the byte quota (MAX_DB_BYTES_PER_OBJECT) had no room for their body.
 * @property {number} [evicted] Records removed by an eviction (absent from objects older than it).
 * @property {number} waiting Requests parked on in-flight keys right now (this object instance).
 * @property {number} db_bytes The object's SQLite database size in bytes (summed for a sharded tenant).
 * @property {number} unwritten_counts Counts kept in memory, not yet written: what a restart of the object right now would lose.
 * @property {number} sql_rows_written SQLite rows the object instance has written since it started (billed rows).
 * @property {number} sql_rows_read SQLite rows the object instance has read since it started.
 * @property {string | null} next_sweep_at
 * @property {TrendMinute[]} trend The last hour minute by minute: 60 entries, oldest first, the last the
 *   current minute (summed minute by minute for a sharded tenant).
 */

/**
 * One minute of the trend (its counts: src/ledger/outcome/trended.json).
 * @typedef {import("../generated/trended.js").TrendMinute} TrendMinute
 */

/**
 * @typedef {object} ReplayedCall
 * @property {{ key: string; generation: number; count: number }[]} replays At most 1,000 entries;
 *   `count` 1..1,000,000; `generation` the one that completed.
 * @property {number} [complete_failed] Completions you gave up on (added to `stats.complete_failed`); 0..1,000,000.
 */

/**
 * The request `execute` runs on the embedded orders application.
 * @typedef {object} AppRequest
 * @property {string} method Uppercase method.
 * @property {string} target Path plus query, starting with "/".
 * @property {string} body Base64 body bytes.
 */

/**
 * @typedef {object} ExecuteCall
 * @property {string} key
 * @property {Fingerprint} fingerprint
 * @property {AppRequest} request
 * @property {number} [wait_ms] As `ClaimCall.wait_ms`.
 */

/**
 * `ran.retained` false: the response was too large to keep (a tombstone).
 * @typedef {{ outcome: "ran"; generation: number; takeover: boolean; retained: boolean;
 *     response: { status: number; headers: [string, string][]; body: string } }
 *   | ClaimRefusal} ExecuteOutcome
 */

/**
 * Anything with a Durable Object stub's fetch.
 * @typedef {object} LedgerStub
 * @property {(input: string, init?: RequestInit) => Promise<Response>} fetch
 */

/**
 * A Durable Object namespace binding of the TenantLedger class (or anything shaped like one).
 * @typedef {object} LedgerNamespace
 * @property {(name: string) => unknown} idFromName
 * @property {(id: any) => LedgerStub} get
 * @property {(jurisdiction: any) => LedgerNamespace} [jurisdiction] The namespace of the objects kept in a
 *   jurisdiction (`eu`, `fedramp`, `fedramp-high`, `us`), for tenants TENANT_JURISDICTIONS names.
 */

/**
 * The JS RPC entrypoint `LedgerService` of the deployed script, as another
 * Worker sees it through a service binding:
 * `services = [{ binding = "LEDGER", service = "idempotency-ledger", entrypoint = "LedgerService" }]`.
 * Every method is RPC v1 with the tenant as first argument (1–256 bytes of
 * UTF-8 without control characters; anything else throws a TypeError). A refusal by the object
 * (a bad call) rejects with an Error whose message starts
 * `ledger refused <op> (<status>)`, and ends `(retry-after: <seconds>)`
 * when the object sent a `Retry-After` (an upgrading object's `503`).
 * @typedef {object} LedgerServiceRpc
 * @property {(tenant: string, call: ClaimCall) => Promise<ClaimOutcome & WaitedAnswer>} claim
 * @property {(tenant: string, call: CompleteCall) => Promise<CompleteOutcome>} complete
 * @property {(tenant: string, call: ReleaseCall) => Promise<ReleaseOutcome>} release
 * @property {(tenant: string, key: string) => Promise<RecordView | null>} lookup
 * @property {(tenant: string, key: string) => Promise<EvictOutcome>} evict
 * @property {(tenant: string, call?: ListCall) => Promise<ListPage>} list
 * @property {(tenant: string) => Promise<LedgerStats>} stats
 * @property {(tenant: string, call: ExecuteCall) => Promise<ExecuteOutcome & WaitedAnswer>} execute
 */

/** Typed RPC v1 calls to one tenant's TenantLedger. */
export class LedgerClient {
  /**
   * The TenantLedger object's stub.
   * @readonly
   * @type {LedgerStub}
   */
  stub;

  /** @param {LedgerStub} stub a DurableObjectStub of the TenantLedger class */
  constructor(stub) {
    this.stub = stub;
  }

  /**
   * The object of `tenant` in a namespace bound with script_name. `tenant` is a tenant id, always (a
   * TypeError otherwise), named by the one rule the gateway uses (`tenantObjectName`: a v1.3 id as it is,
   * any other escaped). An id spelled like another tenant's object name (`~user%40example.com`,
   * `acme/shard-1-of-2`) is a TypeError: before v1.5 forTenant took it as that object, and a caller
   * written then must not silently reach another object now; the tenant with such an id is reached
   * through `TenantLedgers`. To name one object yourself, use {@link LedgerClient.forObject}.
   * One client is one object, so this is an unsharded tenant's ledger: a tenant that TENANT_SHARDS
   * spreads over several objects has no single object to name. For a sharded tenant use `TenantLedgers`
   * (./shards.js: `new TenantLedgers(env.LEDGER, env.TENANT_SHARDS).claim(tenant, call)`), or give the
   * middleware the namespace with `tenant` and `tenantShards`.
   * A tenant that TENANT_JURISDICTIONS keeps in a jurisdiction needs `{ jurisdiction }` (the same value):
   * its object is then `namespace.jurisdiction(J)`'s; a bad value is a TypeError, and a runtime that keeps
   * no jurisdictions (local workerd) throws — never the unrestricted object instead.
   * @param {LedgerNamespace} namespace
   * @param {string} tenant
   * @param {{ jurisdiction?: string | null }} [options]
   * @returns {LedgerClient}
   */
  static forTenant(namespace, tenant, options = {}) {
    if (!isTenantId(tenant)) throw new TypeError(`LedgerClient.forTenant needs a tenant id (${TENANT_RULE}); name an object with LedgerClient.forObject`);
    const name = tenantObjectName(tenant);
    // Before v1.5 forTenant took such an id as the object it spells: refused, never silently another object.
    if (name !== tenant && isObjectName(tenant)) {
      throw new TypeError(`LedgerClient.forTenant: ${JSON.stringify(tenant)} is spelled like an object's name, which forTenant took as that object before v1.5; to reach that object use LedgerClient.forObject, and for the tenant with this id TenantLedgers (its object is ${JSON.stringify(name)})`);
    }
    return LedgerClient.#named("forTenant", namespace, name, options);
  }

  /**
   * The object named `name`, one of a tenant's objects as the one rule spells it: `shardObjectName(tenant,
   * i, N)` for shard `i` of `N`, `shardObjectName(tenant, 0, 1)` for its single object. Any other name is a
   * TypeError (no tenant's objects are named `acme/shard-01-of-2` or `~x`). `jurisdiction` as in `forTenant`.
   * @param {LedgerNamespace} namespace
   * @param {string} name
   * @param {{ jurisdiction?: string | null }} [options]
   * @returns {LedgerClient}
   */
  static forObject(namespace, name, options = {}) {
    if (!isObjectName(name)) throw new TypeError(`LedgerClient.forObject needs a tenant's object name, as shardObjectName spells it (got ${JSON.stringify(name) ?? String(name)})`);
    return LedgerClient.#named("forObject", namespace, name, options);
  }

  /** @param {string} who @param {LedgerNamespace} namespace @param {string} name @param {{ jurisdiction?: string | null }} options */
  static #named(who, namespace, name, options) {
    const unknown = Object.keys(options ?? {}).find((k) => k !== "jurisdiction");
    if (unknown !== undefined) throw new TypeError(`LedgerClient.${who}: unknown option ${JSON.stringify(unknown)} (known: jurisdiction)`);
    const objects = inJurisdiction(namespace, options?.jurisdiction);
    return new LedgerClient(objects.get(objects.idFromName(name)));
  }

  /**
   * @param {string} route
   * @param {unknown} payload
   * @returns {Promise<any>}
   */
  async #call(route, payload) {
    let res;
    try {
      res = await this.stub.fetch(`https://tenant-ledger${RPC_V1_PREFIX}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
    } catch (cause) {
      throw new LedgerError(`ledger unreachable: ${/** @type {Error} */ (cause)?.message ?? cause}`, { cause });
    }
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
    if (res.status !== 200) {
      const retryAfter = retryAfterSeconds(res.headers.get("retry-after"));
      // The message also carries it: a LedgerService binding passes only the message on.
      const hint = retryAfter === null ? "" : ` (retry-after: ${retryAfter})`;
      throw new LedgerError(`ledger refused ${route} (${res.status}): ${body?.detail ?? text}${hint}`, { status: res.status, problem: body, retryAfter });
    }
    // A claim or execute that was parked on an in-flight key says how long.
    const waited = res.headers.get(WAITED_HEADER);
    if (waited !== null && body && typeof body === "object") body.waited_ms = Number(waited);
    return body;
  }

  /**
   * Sends `route` again while its answer is lost — the stub's fetch threw, so the object may have
   * applied it — twice at most (`LOST_ANSWER_RETRY_DELAYS_MS`), as the Rust client does. Only for
   * calls the object answers the same when repeated. A repeat's failure is never "certainly not
   * reached": the error given up with is the first lost answer's.
   * @param {string} route
   * @param {unknown} payload
   */
  async #repeating(route, payload) {
    /** @type {LedgerError | undefined} */
    let lost;
    for (let tries = 0; ; tries++) {
      try {
        return await this.#call(route, payload);
      } catch (error) {
        if (!(error instanceof LedgerError)) throw error;
        const unanswered = error.status === null
          && /** @type {{ overloaded?: unknown } | null | undefined} */ (error.cause)?.overloaded !== true;
        if (tries === 0 && !unanswered) throw error;
        lost ??= error;
        if (error.status !== null) throw error; // the object answered
        if (!unanswered || tries >= LOST_ANSWER_RETRY_DELAYS_MS.length) throw lost;
        await new Promise((resolve) => setTimeout(resolve, LOST_ANSWER_RETRY_DELAYS_MS[tries]));
      }
    }
  }

  /**
   * A claim that names its `attempt` and does not wait (`wait_ms`) is sent again while its answer
   * is lost (see `ClaimCall.attempt`).
   * @param {ClaimCall} call
   * @returns {Promise<ClaimOutcome & WaitedAnswer>}
   */
  claim(call) {
    const repeat = typeof call?.attempt === "string" && !(Number(call.wait_ms) > 0);
    return repeat ? this.#repeating("claim", call) : this.#call("claim", call);
  }
  /** @param {CompleteCall} call @returns {Promise<CompleteOutcome>} */
  complete(call) { return this.#call("complete", call); }
  /** @param {ReleaseCall} call @returns {Promise<ReleaseOutcome>} */
  release(call) { return this.#call("release", call); }
  /** @param {string} key @returns {Promise<RecordView | null>} */
  async lookup(key) { return (await this.#call("lookup", { key })).record; }
  /**
   * Removes the key's record so its next claim runs again (docs/contract.md §2.11).
   * @param {string} key @returns {Promise<EvictOutcome>}
   */
  evict(key) { return this.#call("evict", { key }); }
  /**
   * One page of the object's keys; pass its `next` as `after` for the next page.
   * @param {ListCall} [call]
   * @returns {Promise<ListPage>}
   */
  list(call = {}) { return this.#call("list", call); }
  /** @returns {Promise<LedgerStats>} */
  stats() { return this.#call("stats", {}); }
  /**
   * Counts replays you answered from your own cache, so `stats` stays exact.
   * @param {ReplayedCall} call
   * @returns {Promise<{ outcome: "counted" }>}
   */
  replayed(call) { return this.#call("replayed", call); }
  /**
   * Claim + the embedded orders app + complete, in one transaction (the gateway's own TenantLedger).
   * Sent again while its answer is lost, unless it waits: a run that committed answers with its replay.
   * @param {ExecuteCall} call
   * @returns {Promise<ExecuteOutcome & WaitedAnswer>}
   */
  execute(call) { return Number(call?.wait_ms) > 0 ? this.#call("execute", call) : this.#repeating("execute", call); }
}
