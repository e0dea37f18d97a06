// Types of idempotency-ledger/worker (./entry.mjs): the built gateway
// Worker, its TenantLedger Durable Object and the LedgerService JS RPC
// entrypoint, for a TypeScript Worker that runs them itself:
//   export { TenantLedger, LedgerService } from "idempotency-ledger/worker";
//   export { default } from "idempotency-ledger/worker";
// Needs the Workers runtime types (@cloudflare/workers-types, or the
// runtime types `wrangler types` writes) for "cloudflare:workers".
// Hand-written; checked against ./entry.mjs by `tsc -p worker` (npm run
// check:types; the assertions at the end of entry.mjs).
import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";
import type {
  ClaimCall, ClaimOutcome, WaitedAnswer, CompleteCall, CompleteOutcome, ReleaseCall, ReleaseOutcome,
  RecordView, LedgerStats, ExecuteCall, ExecuteOutcome, ListCall, ListPage, EvictOutcome,
} from "../client/rpc/client.js";

/** The bindings the gateway and LedgerService read (docs/configuration.md). */
export interface LedgerEnv {
  TENANT_LEDGER: DurableObjectNamespace;
}

/** One tenant's ledger (RPC v1 over fetch, docs/rpc-v1.md). Bind it with `new_sqlite_classes`. */
export declare class TenantLedger extends DurableObject<LedgerEnv> {
  fetch(request: Request): Promise<Response>;
  alarm(): Promise<void>;
}

/** JS RPC over RPC v1: `env.LEDGER.claim("acme", { key, fingerprint })`. */
export declare class LedgerService extends WorkerEntrypoint<LedgerEnv> {
  claim(tenant: string, call: ClaimCall): Promise<ClaimOutcome & WaitedAnswer>;
  complete(tenant: string, call: CompleteCall): Promise<CompleteOutcome>;
  release(tenant: string, call: ReleaseCall): Promise<ReleaseOutcome>;
  lookup(tenant: string, key: string): Promise<RecordView | null>;
  evict(tenant: string, key: string): Promise<EvictOutcome>;
  list(tenant: string, call?: ListCall): Promise<ListPage>;
  stats(tenant: string): Promise<LedgerStats>;
  execute(tenant: string, call: ExecuteCall): Promise<ExecuteOutcome & WaitedAnswer>;
}

/**
 * The gateway Worker's handler (authenticates, derives the tenant, protects
 * the origin: docs/contract.md; and the console under /console). Re-export
 * it as your Worker's default (`export { default } from "idempotency-ledger/worker"`),
 * or call it from your own fetch handler with `fetchGateway`.
 */
declare const gateway: ExportedHandler<LedgerEnv> & {
  fetch(request: Request, env: LedgerEnv, ctx: ExecutionContext): Promise<Response>;
};
export default gateway;

/** The gateway's answer to `request`, from inside your own fetch handler. */
export declare function fetchGateway(request: Request, env: LedgerEnv, ctx: ExecutionContext): Promise<Response>;
