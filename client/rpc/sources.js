// @ts-check
// The middleware's `ledger` option: where one request's ledger comes from,
// resolved per request into one tenant's claim / complete / release
// (../middleware/claim.js and ../middleware/settlement.js call nothing else). A source is a `LedgerClient` (one
// object), a `LedgerService` service binding (JS RPC, tenant first), a
// TenantLedger Durable Object namespace (routed with TENANT_SHARDS by
// `TenantLedgers`, the gateway's rule), or a callback of the request
// returning one of these. A binding or a namespace needs the `tenant`
// option, checked as the gateway checks tenants.
//
// What must stay true here:
// - Whatever can be known when the middleware is made is checked then (a
//   TypeError naming the option); nothing given is ever silently ignored.
// - At request time a wrong tenant, source or TENANT_SHARDS is
//   `misconfigured` (the caller answers 500, nothing runs) — and so is a
//   `ledger` callback that throws or gives no ledger (a missing binding):
//   the server's configuration, not an outage, so never a reason for
//   FAILURE_POLICY=open to run a request unprotected.
import { LedgerClient, LedgerError } from "./client.js";
import { TENANT_RULE, TenantLedgers, isTenantId, parseTenantShards } from "./shards.js";
import { inJurisdiction, jurisdictionProblem } from "../rules/tenant.js";
/**
 * @import { LedgerNamespace, ClaimCall, CompleteCall, ReleaseCall,
 *   ClaimOutcome, CompleteOutcome, ReleaseOutcome, WaitedAnswer } from "./client.js"
 * @import { ShardLayout } from "./shards.js"
 */

/**
 * One tenant's ledger, as the middleware uses it: `LedgerClient`'s claim,
 * complete and release (a `LedgerClient` is one).
 * @typedef {object} TenantLedgerCalls
 * @property {(call: ClaimCall) => Promise<ClaimOutcome & WaitedAnswer>} claim
 * @property {(call: CompleteCall) => Promise<CompleteOutcome>} complete
 * @property {(call: ReleaseCall) => Promise<ReleaseOutcome>} release
 */

/**
 * A ledger that takes the tenant first: a `LedgerService` service binding
 * (or a `TenantLedgers`). Needs the `tenant` option. The answers are typed
 * `unknown` on purpose: a binding typed by `wrangler types`
 * (`Service<LedgerService>`) answers through the RPC stub types, which
 * turn the outcomes' tuples into plain arrays; the middleware checks every
 * answer's outcome itself.
 * @typedef {object} LedgerServiceCalls
 * @property {(tenant: string, call: ClaimCall) => Promise<unknown>} claim
 * @property {(tenant: string, call: CompleteCall) => Promise<unknown>} complete
 * @property {(tenant: string, call: ReleaseCall) => Promise<unknown>} release
 */

/**
 * What the `ledger` option gives: a `LedgerClient` (or any object with its
 * claim / complete / release, used as one tenant's ledger when no `tenant`
 * is given), a `LedgerService` binding, or a TenantLedger namespace (both
 * with `tenant`).
 * @typedef {LedgerClient | TenantLedgerCalls | LedgerServiceCalls | LedgerNamespace} LedgerSource
 */

/**
 * TENANT_SHARDS as the `tenantShards` option takes it: the raw JSON, or `parseTenantShards`' map.
 * @typedef {string | Map<string, ShardLayout>} TenantShardsValue
 */

/**
 * What a source comes to for one request.
 * @typedef {{ ledger: TenantLedgerCalls; tenant: string | null }
 *   | { misconfigured: string; variable?: string }} Resolved
 */


/**
 * The kind of a ledger source, or null for anything else. A service
 * binding (a `Fetcher`) answers every property name with an RPC method,
 * so it is recognised by its tag before any shape test.
 * @param {unknown} source
 * @returns {"client" | "binding" | "service" | "calls" | "namespace" | null}
 */
function kindOf(source) {
  if (source instanceof LedgerClient) return "client";
  if (source === null || typeof source !== "object") return null;
  if (Object.prototype.toString.call(source) === "[object Fetcher]") return "binding";
  if (source instanceof TenantLedgers) return "service";
  const s = /** @type {Record<string, unknown>} */ (source);
  if (["claim", "complete", "release"].every((m) => typeof s[m] === "function")) return "calls";
  if (typeof s.idFromName === "function" && typeof s.get === "function") return "namespace";
  return null;
}

/** @param {"client" | "binding" | "service" | "calls" | "namespace"} kind @param {boolean} withTenant */
const takesTenant = (kind, withTenant) => kind === "binding" || kind === "service" || kind === "namespace" || (kind === "calls" && withTenant);

/**
 * What is wrong with a source of this kind beside the `tenant` and
 * `tenantShards` options, or null: the one rule, a TypeError when the
 * middleware is made, `misconfigured` when a function gives the source.
 * @param {"client" | "binding" | "service" | "calls" | "namespace"} kind
 * @param {boolean} withTenant
 * @param {boolean} withShards
 * @returns {string | null}
 */
function mismatch(kind, withTenant, withShards, withJurisdiction = false) {
  if (kind === "client" && withTenant) return "options.tenant is for a LedgerService binding or a namespace; a LedgerClient is already one tenant's object";
  if (takesTenant(kind, withTenant) && !withTenant) return "a LedgerService binding or a TenantLedger namespace needs options.tenant";
  if (withShards && kind !== "namespace") return "options.tenantShards routes a TenantLedger namespace; a LedgerService binding routes with its own TENANT_SHARDS";
  if (withJurisdiction && kind !== "namespace") {
    return "options.jurisdiction routes a TenantLedger namespace; a LedgerService binding routes with its own TENANT_JURISDICTIONS, and a LedgerClient is already one object (LedgerClient.forTenant(namespace, tenant, { jurisdiction }))";
  }
  return null;
}

/**
 * The namespace of one request's tenant: `namespace.jurisdiction(J)` for the `jurisdiction` option (a value, or
 * a function asked per request; null or undefined from it: unrestricted), or `{ misconfigured, variable }` —
 * a bad value, a function that throws, or a runtime that keeps no jurisdictions (local workerd) — never the
 * unrestricted namespace for a jurisdiction asked.
 * @template {unknown[]} A
 * @param {LedgerNamespace} namespace
 * @param {unknown} jurisdiction
 * @param {A} args
 * @returns {Promise<LedgerNamespace | { misconfigured: string; variable: string }>}
 */
async function namespaceIn(namespace, jurisdiction, args) {
  let j = jurisdiction;
  try {
    if (typeof jurisdiction === "function") j = await jurisdiction(...args);
    if (j !== undefined && j !== null && jurisdictionProblem(j) !== null) {
      return { misconfigured: `options.jurisdiction gave ${jurisdictionProblem(j)}`, variable: "TENANT_JURISDICTIONS" };
    }
    return inJurisdiction(namespace, /** @type {string | null | undefined} */ (j));
  } catch (e) {
    // Its message may carry internals: logged, never answered.
    console.error(JSON.stringify({ event: "idempotency.jurisdiction_failed", error: e instanceof Error ? e.message : String(e) }));
    return { misconfigured: "the tenant's jurisdiction could not be used (the error is in the Worker's log, idempotency.jurisdiction_failed)", variable: "TENANT_JURISDICTIONS" };
  }
}

/**
 * A JS RPC rejection as a `LedgerError` (JS RPC carries an error's message,
 * not its properties): `ledger refused <op> (<status>)` keeps its status
 * (and a closing `(retry-after: <seconds>)` its retryAfter), anything else
 * is an answer that never came (status null).
 * @param {unknown} error
 * @param {string} op
 */
function remoteError(error, op) {
  if (error instanceof LedgerError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const status = /^ledger refused \w+ \((\d{3})\)/.exec(message)?.[1];
  const retryAfter = status === undefined ? undefined : /\(retry-after: (\d{1,9})\)$/.exec(message)?.[1];
  return new LedgerError(`ledger service ${op} failed: ${message}`, {
    status: status === undefined ? null : Number(status),
    retryAfter: retryAfter === undefined ? null : Number(retryAfter),
    cause: error,
  });
}

/**
 * One tenant's calls over a tenant-first ledger; a service binding's
 * rejections become `LedgerError`s (the middleware's 503 and retry rules).
 * @param {LedgerServiceCalls} service
 * @param {string} tenant
 * @param {boolean} remote
 * @returns {TenantLedgerCalls}
 */
function boundTo(service, tenant, remote) {
  /**
   * @template T
   * @param {"claim" | "complete" | "release"} op
   * @param {() => Promise<T>} call
   * @returns {Promise<T>}
   */
  const run = async (op, call) => {
    if (!remote) return call();
    try { return await call(); } catch (e) { throw remoteError(e, op); }
  };
  return {
    // The answers are checked where they are used (../middleware/claim.js: outcomes it does not know are no answer).
    claim: (call) => run("claim", () => /** @type {Promise<ClaimOutcome & WaitedAnswer>} */ (service.claim(tenant, call))),
    complete: (call) => run("complete", () => /** @type {Promise<CompleteOutcome>} */ (service.complete(tenant, call))),
    release: (call) => run("release", () => /** @type {Promise<ReleaseOutcome>} */ (service.release(tenant, call))),
  };
}

/**
 * The `tenantShards` option: a value checked and parsed once (a TypeError
 * naming what is wrong), or a function asked per request, its answer
 * parsed (the last one kept) — `{ misconfigured, variable }` when it
 * throws or gives no valid TENANT_SHARDS. Undefined: every tenant is one object.
 * @template {unknown[]} A
 * @param {TenantShardsValue | ((...args: A) => unknown) | undefined} tenantShards
 * @returns {(args: A) => Promise<Map<string, ShardLayout> | undefined | { misconfigured: string; variable: string }>}
 */
function shardLayouts(tenantShards) {
  /** @type {Map<string, ShardLayout> | undefined} */
  let layouts;
  if (tenantShards !== undefined && typeof tenantShards !== "function") {
    if (tenantShards instanceof Map) layouts = tenantShards;
    else if (typeof tenantShards === "string") {
      try { layouts = parseTenantShards(tenantShards); } catch (e) { throw new TypeError(`idempotency middleware: options.tenantShards: ${/** @type {Error} */ (e).message}`); }
    } else throw new TypeError("idempotency middleware: options.tenantShards must be TENANT_SHARDS (a JSON string), its parsed map, or a function returning one");
  }
  /** The last raw TENANT_SHARDS a callback gave and its parse (variables do not change within an isolate). */
  let parsed = /** @type {{ raw: unknown; layouts: Map<string, ShardLayout> } | null} */ (null);
  /**
   * @param {A} args
   * @returns {Promise<Map<string, ShardLayout> | undefined | { misconfigured: string; variable: string }>}
   */
  return async (args) => {
    if (typeof tenantShards !== "function") return layouts;
    let raw;
    try {
      raw = await tenantShards(...args);
    } catch (e) {
      console.error(JSON.stringify({ event: "idempotency.tenant_shards_failed", error: e instanceof Error ? e.message : String(e) }));
      return { misconfigured: "options.tenantShards threw (the error is in the Worker's log, idempotency.tenant_shards_failed)", variable: "TENANT_SHARDS" };
    }
    if (raw instanceof Map) return raw;
    const last = parsed;
    if (last !== null && last.raw === raw) return last.layouts;
    try {
      const fresh = parseTenantShards(/** @type {string | null | undefined} */ (raw));
      parsed = { raw, layouts: fresh };
      return fresh;
    } catch (e) {
      return { misconfigured: /** @type {Error} */ (e).message, variable: "TENANT_SHARDS" };
    }
  };
}

/**
 * The `ledger`, `tenant`, `tenantShards` and `jurisdiction` options, checked once (a
 * TypeError naming what is wrong); `resolve(args)` gives one request's ledger.
 * @template {unknown[]} A
 * @param {{ ledger?: unknown; tenant?: unknown; tenantShards?: unknown; jurisdiction?: unknown }} options
 * @returns {{ resolve: (args: A) => Promise<Resolved> }}
 */
export function ledgerSource({ ledger, tenant, tenantShards, jurisdiction }) {
  if (ledger === undefined || ledger === null) throw new TypeError("idempotency middleware needs options.ledger: a LedgerClient, a LedgerService binding, a TenantLedger namespace, or a function returning one");
  if (tenant !== undefined && typeof tenant !== "function" && !isTenantId(tenant)) {
    throw new TypeError(`idempotency middleware: options.tenant must be ${TENANT_RULE}, or a function returning one`);
  }
  if (jurisdiction !== undefined && typeof jurisdiction !== "function" && jurisdictionProblem(jurisdiction) !== null) {
    throw new TypeError(`idempotency middleware: options.jurisdiction: ${jurisdictionProblem(jurisdiction)}, or a function returning one`);
  }
  const withJurisdiction = jurisdiction !== undefined;
  const layoutsFor = shardLayouts(/** @type {TenantShardsValue | ((...args: A) => unknown) | undefined} */ (tenantShards));
  const withTenant = tenant !== undefined;
  if (typeof ledger !== "function") {
    const kind = kindOf(ledger);
    if (kind === null) throw new TypeError("idempotency middleware: options.ledger must be a LedgerClient, a LedgerService binding, a TenantLedger namespace, or a function returning one");
    const wrong = mismatch(kind, withTenant, tenantShards !== undefined, withJurisdiction);
    if (wrong !== null) throw new TypeError(`idempotency middleware: ${wrong}`);
  }

  return {
    async resolve(args) {
      let source = ledger;
      if (typeof ledger === "function") {
        try {
          source = await ledger(...args);
        } catch (e) {
          // Its message may carry internals: logged, never answered.
          console.error(JSON.stringify({ event: "idempotency.ledger_failed", error: e instanceof Error ? e.message : String(e) }));
          return { misconfigured: "options.ledger threw (the error is in the Worker's log, idempotency.ledger_failed)" };
        }
        if (source === undefined || source === null) return { misconfigured: "options.ledger gave no ledger (a binding missing from the Worker's configuration?)" };
      }
      const kind = kindOf(source);
      if (kind === null) return { misconfigured: "options.ledger gave something that is not a LedgerClient, a LedgerService binding or a TenantLedger namespace" };
      const wrong = mismatch(kind, withTenant, tenantShards !== undefined, withJurisdiction);
      if (wrong !== null) return { misconfigured: `options.ledger gave a source that does not fit: ${wrong}` };
      if (!takesTenant(kind, withTenant)) return { ledger: /** @type {TenantLedgerCalls} */ (source), tenant: null };
      let name = tenant;
      if (typeof tenant === "function") {
        try {
          name = await tenant(...args);
        } catch (e) {
          // Its message may carry internals (a store's error): logged, never answered.
          console.error(JSON.stringify({ event: "idempotency.tenant_failed", error: e instanceof Error ? e.message : String(e) }));
          return { misconfigured: "options.tenant threw (the error is in the Worker's log, idempotency.tenant_failed)" };
        }
      }
      if (!isTenantId(name)) return { misconfigured: `the idempotency middleware's tenant must be ${TENANT_RULE}` };
      if (kind === "namespace") {
        const routed = await layoutsFor(args);
        if (routed !== undefined && !(routed instanceof Map)) return routed;
        const objects = await namespaceIn(/** @type {LedgerNamespace} */ (source), jurisdiction, args);
        if ("misconfigured" in objects) return objects;
        return { ledger: boundTo(new TenantLedgers(objects, routed ?? null), name, false), tenant: name };
      }
      return { ledger: boundTo(/** @type {LedgerServiceCalls} */ (source), name, kind === "binding"), tenant: name };
    },
  };
}
