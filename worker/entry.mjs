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
// Sharded tenants (TENANT_SHARDS) are routed exactly as the gateway routes
// them (contract::shards): a key lives in one object of the current layout;
// while resharding, the previous layout's object answers first for the keys
// it holds and refuses others with 421 idempotency-key-moved.
import { WorkerEntrypoint } from "cloudflare:workers";
import gateway, { TenantLedger } from "../build/index.js";
import { LedgerClient, LedgerError, isTenantId, parseTenantShards, shardOf, shardObjectName } from "../client/index.js";

export { TenantLedger };
export default gateway;

let shardMap = null; // parsed once per isolate (variables never change within one)

/** JS RPC over RPC v1: `env.LEDGER.claim("acme", { key, fingerprint })`. */
export class LedgerService extends WorkerEntrypoint {
  #layout(tenant) {
    if (!isTenantId(tenant)) {
      throw new TypeError("tenant must be 1-64 characters of A-Z a-z 0-9 . _ -");
    }
    shardMap ??= parseTenantShards(this.env.TENANT_SHARDS);
    return shardMap.get(tenant) ?? { shards: 1, previous: null };
  }

  #object(name) {
    return LedgerClient.forTenant(this.env.TENANT_LEDGER, name);
  }

  /** The key's object, and its object in the previous layout while resharding. */
  async #homes(tenant, key) {
    const layout = this.#layout(tenant);
    const home = this.#object(shardObjectName(tenant, await shardOf(String(key), layout.shards), layout.shards));
    const previous = layout.previous === null ? null
      : this.#object(shardObjectName(tenant, await shardOf(String(key), layout.previous), layout.previous));
    return { home, previous };
  }

  /** The object that holds `key` in flight at `generation` (where a run settles). */
  async #owner(tenant, call) {
    const { home, previous } = await this.#homes(tenant, call?.key);
    if (previous !== null) {
      const held = await previous.lookup(call.key);
      if (held !== null && held.generation === call.generation) return previous;
    }
    return home;
  }

  #unsharded(tenant, what) {
    const layout = this.#layout(tenant);
    if (layout.shards > 1 || layout.previous !== null) {
      throw new TypeError(`${what} is not available for a sharded tenant (its orders must commit with one ledger)`);
    }
    return this.#object(tenant);
  }

  /** RPC v1 `claim` (with `wait_ms`, the answer carries `waited_ms` if it waited). */
  async claim(tenant, call) {
    const { home, previous } = await this.#homes(tenant, call?.key);
    if (previous !== null) {
      try {
        return await previous.claim(call);
      } catch (e) {
        if (!(e instanceof LedgerError && e.status === 421)) throw e;
      }
    }
    return home.claim(call);
  }
  /** RPC v1 `complete`. */
  async complete(tenant, call) { return (await this.#owner(tenant, call)).complete(call); }
  /** RPC v1 `release`. */
  async release(tenant, call) { return (await this.#owner(tenant, call)).release(call); }
  /** RPC v1 `lookup`: the record, or null. */
  async lookup(tenant, key) {
    const { home, previous } = await this.#homes(tenant, key);
    return (previous === null ? null : await previous.lookup(key)) ?? home.lookup(key);
  }
  /** RPC v1 `stats` (summed over a sharded tenant's objects). */
  async stats(tenant) {
    const layout = this.#layout(tenant);
    const names = [];
    for (const n of [layout.shards, layout.previous]) {
      if (n !== null) for (let i = 0; i < n; i++) names.push(shardObjectName(tenant, i, n));
    }
    const all = await Promise.all(names.map((name) => this.#object(name).stats()));
    return all.reduce((sum, s) => {
      for (const [k, v] of Object.entries(s)) {
        if (typeof v === "number") sum[k] = (sum[k] ?? 0) + v;
        else if (k === "next_sweep_at") sum[k] = [sum[k], v].filter((x) => x).sort()[0] ?? null;
      }
      return sum;
    }, { next_sweep_at: null });
  }
  /** RPC v1 `execute`: claim + the embedded orders app + complete, one transaction (unsharded tenants). */
  execute(tenant, call) { return this.#unsharded(tenant, "execute").execute(call); }
}
