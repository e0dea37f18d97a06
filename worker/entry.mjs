// @ts-check
// The deployed script's entry module: the Rust gateway and TenantLedger
// (built by worker-build into build/) plus LedgerService, a JS RPC
// entrypoint over the same RPC v1.
//
// Why a JS layer: worker-build 0.8.7's generated shim exports exactly the
// `#[event(fetch)]` handler (a WorkerEntrypoint with `fetch`) and the Durable
// Object classes; workers-rs has no way to declare further entrypoint
// classes or RPC methods from Rust. So LedgerService is a thin JS class that
// turns each RPC method into the fetch RPC v1 call the Rust object already
// serves (the same validation, the same outcomes, nothing decided here).
//
// A service binding is trusted: whoever holds it may act for any tenant
// (as with a Durable Object binding). The tenant argument is checked for
// shape only (1–256 bytes of UTF-8, no control characters), exactly as the
// gateway's tenants, and named to objects by the same rule (client/rules/tenant.js).
//
// Sharded tenants (TENANT_SHARDS) are routed by the package's TenantLedgers
// (client/rpc/shards.js), the gateway's one rule: a key lives in one object of
// the current layout; while resharding, every keyed call goes first to the
// key's object in the previous layout, and its 421 idempotency-key-moved
// sends the call to the key's object in the current layout.
//
// The operator console (/console, ./console.mjs) is answered here, before
// the Rust gateway: static files that need no wasm — when the Rust rule
// (`consoleServed`, Rust gateway::console: CONSOLE, CONSOLE_HOST, proxy
// mode) says this request's host and mode serve it; otherwise the path is
// the gateway's like any other (in proxy mode, the origin's).
//
// The default export is a handler object, not worker-build's entrypoint
// class. What we learned reading build/index.js (worker-build 0.8.7's
// shim): the class is wrapped in a Proxy whose `construct` and method
// `get` traps re-instantiate the wasm module after a critical error (a
// panic sets `globalThis.__worker_init_state.criticalError`), at the
// price of a WorkerEntrypoint, two Proxies and an async wrapper per
// request (~5 % of a cached replay's CPU, docs/development.md "CPU per
// request"). The handler calls the class's own `fetch` (it reads only
// `this.env` and `this.ctx`) and takes the proxied path only once that
// flag is up, so a panicked module is still re-instantiated first.
import { WorkerEntrypoint } from "cloudflare:workers";
import RustGateway, { TenantLedger as RustTenantLedger } from "../build/index.js";
import { TenantLedgers, parseTenantShards } from "../client/index.js";
import { parseTenantJurisdictions } from "../client/rules/tenant.js";
import { consoleResponse, isConsoleUrl } from "./console.mjs";

const rustFetch = RustGateway.prototype.fetch;
const consoleServed = RustGateway.prototype.consoleServed;
const serveRead = RustTenantLedger.prototype.serveRead;

/**
 * Rethrows `error`, first marking the module for re-instantiation if it is a trap (as the shim does).
 * @param {unknown} error
 * @returns {never}
 */
function markCritical(error) {
  const state = globalThis.__worker_init_state;
  if (error instanceof WebAssembly.RuntimeError && state) state.criticalError = true;
  throw error;
}

/**
 * The TenantLedger Durable Object class: the Rust object (worker-build's
 * class, through its proxy, so a panicked module is re-instantiated when
 * the object is next built or called), with the request body read here:
 * one native `await`, then `serveRead`, which answers at once when the
 * call needs nothing asynchronous (Rust platform::eager) — instead of
 * the Rust `fetch`'s promise plumbing for the body and the answer.
 */
export class TenantLedger {
  #ledger;

  constructor(ctx, env) {
    this.#ledger = new RustTenantLedger(ctx, env);
  }

  async fetch(request) {
    /** @type {Uint8Array | null} */
    let body = null; // unreadable: the object answers it, as its Rust fetch does (400)
    try {
      body = new Uint8Array(await request.arrayBuffer());
    } catch {}
    if (globalThis.__worker_init_state?.criticalError) return this.#ledger.serveRead(request, body);
    try {
      return await serveRead.call(this.#ledger, request, body);
    } catch (error) {
      return markCritical(error);
    }
  }

  alarm(info) {
    return this.#ledger.alarm(info);
  }
}

/**
 * The gateway's answer to `request` (docs/contract.md §2), or the
 * console's files under /console; also from inside another fetch handler
 * (a Worker that routes some paths to the gateway).
 * @param {Request} request
 * @param {import("./entry.d.mts").LedgerEnv} env
 * @param {ExecutionContext} ctx
 * @returns {Promise<Response>}
 */
export function fetchGateway(request, env, ctx) {
  const state = globalThis.__worker_init_state;
  if (isConsoleUrl(request.url)) {
    // A panicked module is re-instantiated first (the shim's proxy does it on construct).
    if (state?.criticalError) new RustGateway(ctx, env);
    if (servesConsole(env, request.url)) return Promise.resolve(consoleResponse(request));
  }
  if (state?.criticalError) return new RustGateway(ctx, env).fetch(request);
  // As the shim's proxy does: a trap (WebAssembly.RuntimeError) marks the
  // module for re-instantiation on the next request.
  try {
    return rustFetch.call({ env, ctx }, request).then(undefined, markCritical);
  } catch (error) {
    return markCritical(error);
  }
}

/** Whether the console answers `url` here (the Rust rule); a trap leaves it to the gateway, which re-instantiates. */
function servesConsole(env, url) {
  try {
    return consoleServed(env, url);
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError && globalThis.__worker_init_state) globalThis.__worker_init_state.criticalError = true;
    return false;
  }
}

/** The gateway Worker: `export { default } from "idempotency-ledger/worker"`. */
export default { fetch: fetchGateway };

/** @type {ReturnType<typeof parseTenantShards> | null} */
let shardMap = null; // parsed once per isolate (variables never change within one)
/** @type {ReturnType<typeof parseTenantJurisdictions> | null} */
let jurisdictionMap = null;

/** A variable's text: a TOML table (`TENANT_SHARDS = { acme = 8 }`) arrives as an object, read as its JSON text, as the Rust gateway reads it. */
const variableText = (raw) => (raw !== null && typeof raw === "object" ? JSON.stringify(raw) : raw);

/** JS RPC over RPC v1: `env.LEDGER.claim("acme", { key, fingerprint })`. */
export class LedgerService extends WorkerEntrypoint {
  get #ledgers() {
    shardMap ??= parseTenantShards(variableText(this.env.TENANT_SHARDS));
    // TENANT_JURISDICTIONS: each such tenant's objects in its jurisdiction, as the gateway's.
    jurisdictionMap ??= parseTenantJurisdictions(variableText(this.env.TENANT_JURISDICTIONS));
    return new TenantLedgers(this.env.TENANT_LEDGER, shardMap, jurisdictionMap);
  }

  /** RPC v1 `claim` (with `wait_ms`, the answer carries `waited_ms` if it waited). */
  async claim(tenant, call) { return this.#ledgers.claim(tenant, call); }
  /** RPC v1 `complete`. */
  async complete(tenant, call) { return this.#ledgers.complete(tenant, call); }
  /** RPC v1 `release`. */
  async release(tenant, call) { return this.#ledgers.release(tenant, call); }
  /** RPC v1 `lookup`: the record, or null. */
  async lookup(tenant, key) { return this.#ledgers.lookup(tenant, key); }
  /** RPC v1 `evict`: remove the key's record (its previous layout's object first while resharding). */
  async evict(tenant, key) { return this.#ledgers.evict(tenant, key); }
  /** RPC v1 `list`: one page of the tenant's keys (merged over a sharded tenant's objects). */
  async list(tenant, call) { return this.#ledgers.list(tenant, call); }
  /** RPC v1 `stats` (summed over a sharded tenant's objects). */
  async stats(tenant) { return this.#ledgers.stats(tenant); }
  /** RPC v1 `execute`: claim + the embedded orders app + complete, one transaction (unsharded tenants). */
  async execute(tenant, call) { return this.#ledgers.execute(tenant, call); }
}

// The declarations of this module (./entry.d.mts, hand-written: the types a
// TypeScript Worker sees) checked against the code by `tsc -p worker` (in
// `npm run check:types`): an export missing or of another shape fails it.
// What it proves: every export and every LedgerService call the
// declarations name exists here, and each answers what they declare (the
// answers come typed from ../client/); fetchGateway's and TenantLedger's
// signatures. Not proved: arguments this file leaves untyped (any), and
// what the Rust build answers (build/index.js is untyped glue).
/**
 * @template {true} T
 * @typedef {T} Holds
 */
/**
 * @template A, B
 * @typedef {[A] extends [B] ? ([B] extends [A] ? true : false) : false} Same
 */
/** @typedef {Omit<import("./entry.d.mts").LedgerService, keyof WorkerEntrypoint>} DeclaredCalls */
/** @typedef {Holds<Exclude<keyof DeclaredCalls, keyof LedgerService> extends never ? true : false>} EveryDeclaredCallIsHere */
/** @typedef {Holds<{ [K in keyof DeclaredCalls]: Same<ReturnType<LedgerService[K & keyof LedgerService]>, ReturnType<DeclaredCalls[K]>> }[keyof DeclaredCalls]>} EachCallAnswersItsDeclaredType */
/** @typedef {Holds<Same<Parameters<typeof fetchGateway>, Parameters<typeof import("./entry.d.mts").fetchGateway>>>} FetchGatewayTakesItsDeclaredArguments */
/** @typedef {Holds<Same<ReturnType<typeof fetchGateway>, ReturnType<typeof import("./entry.d.mts").fetchGateway>>>} FetchGatewayAnswersAResponse */
/** @typedef {Holds<TenantLedger extends Pick<import("./entry.d.mts").TenantLedger, "fetch" | "alarm"> ? true : false>} TenantLedgerServesFetchAndAlarm */
