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
import { WorkerEntrypoint } from "cloudflare:workers";
import gateway, { TenantLedger } from "../build/index.js";
import { LedgerClient } from "../client/index.js";

export { TenantLedger };
export default gateway;

const TENANT = /^[A-Za-z0-9._-]{1,64}$/;

/** JS RPC over RPC v1: `env.LEDGER.claim("acme", { key, fingerprint })`. */
export class LedgerService extends WorkerEntrypoint {
  #ledger(tenant) {
    if (typeof tenant !== "string" || !TENANT.test(tenant)) {
      throw new TypeError("tenant must be 1-64 characters of A-Z a-z 0-9 . _ -");
    }
    return LedgerClient.forTenant(this.env.TENANT_LEDGER, tenant);
  }

  /** RPC v1 `claim` (with `wait_ms`, the answer carries `waited_ms` if it waited). */
  claim(tenant, call) { return this.#ledger(tenant).claim(call); }
  /** RPC v1 `complete`. */
  complete(tenant, call) { return this.#ledger(tenant).complete(call); }
  /** RPC v1 `release`. */
  release(tenant, call) { return this.#ledger(tenant).release(call); }
  /** RPC v1 `lookup`: the record, or null. */
  lookup(tenant, key) { return this.#ledger(tenant).lookup(key); }
  /** RPC v1 `stats`. */
  stats(tenant) { return this.#ledger(tenant).stats(); }
  /** RPC v1 `execute`: claim + the embedded orders app + complete, one transaction. */
  execute(tenant, call) { return this.#ledger(tenant).execute(call); }
}
