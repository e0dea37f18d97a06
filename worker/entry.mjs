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
// shape only (1–64 of [A-Za-z0-9._-]), exactly as the gateway's tenants.
//
// Sharded tenants (TENANT_SHARDS) are routed by the package's TenantLedgers
// (client/shards.js), the gateway's one rule: a key lives in one object of
// the current layout; while resharding, every keyed call goes first to the
// key's object in the previous layout, and its 421 idempotency-key-moved
// sends the call to the key's object in the current layout.
import { WorkerEntrypoint } from "cloudflare:workers";
import gateway, { TenantLedger } from "../build/index.js";
import { TenantLedgers, parseTenantShards } from "../client/index.js";

export { TenantLedger };
export default gateway;

/**
 * The gateway's answer to `request` from inside another fetch handler (a
 * Worker that routes some paths to the gateway). worker-build's default
 * export is an entrypoint class, not a handler object: constructing it as
 * the runtime would (ctx, env) keeps its wasm re-initialisation guard.
 */
export function fetchGateway(request, env, ctx) {
  return new gateway(ctx, env).fetch(request);
}

let shardMap = null; // parsed once per isolate (variables never change within one)

/** JS RPC over RPC v1: `env.LEDGER.claim("acme", { key, fingerprint })`. */
export class LedgerService extends WorkerEntrypoint {
  get #ledgers() {
    shardMap ??= parseTenantShards(this.env.TENANT_SHARDS);
    return new TenantLedgers(this.env.TENANT_LEDGER, shardMap);
  }

  /** RPC v1 `claim` (with `wait_ms`, the answer carries `waited_ms` if it waited). */
  async claim(tenant, call) { return this.#ledgers.claim(tenant, call); }
  /** RPC v1 `complete`. */
  async complete(tenant, call) { return this.#ledgers.complete(tenant, call); }
  /** RPC v1 `release`. */
  async release(tenant, call) { return this.#ledgers.release(tenant, call); }
  /** RPC v1 `lookup`: the record, or null. */
  async lookup(tenant, key) { return this.#ledgers.lookup(tenant, key); }
  /** RPC v1 `list`: one page of the tenant's keys (merged over a sharded tenant's objects). */
  async list(tenant, call) { return this.#ledgers.list(tenant, call); }
  /** RPC v1 `stats` (summed over a sharded tenant's objects). */
  async stats(tenant) { return this.#ledgers.stats(tenant); }
  /** RPC v1 `execute`: claim + the embedded orders app + complete, one transaction (unsharded tenants). */
  async execute(tenant, call) { return this.#ledgers.execute(tenant, call); }
}
