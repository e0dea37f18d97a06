// Types of idempotency-ledger/worker/testing (./testing.mjs, Node only).
// Hand-written; checked against ./testing.mjs by
// `tsc -p worker/tsconfig.testing.json` (npm run check:types; the
// assertions at the end of testing.mjs).
export interface LedgerWorkerOptions {
  /** The Worker's name, as other Workers' script_name / service name it. Default "idempotency-ledger". */
  name?: string;
  /** Default "2026-08-15": within what @cloudflare/vitest-pool-workers 0.23.0's workerd supports (up to 2026-08-22). */
  compatibilityDate?: string;
  /** Variables over the packaged defaults (docs/configuration.md), e.g. { API_TOKENS, LOG_LEVEL: "warn" }. */
  vars?: Record<string, string>;
}

/** The packaged ledger Worker as Miniflare WorkerOptions (an auxiliary Worker in vitest-pool-workers). */
export declare function ledgerWorker(options?: LedgerWorkerOptions): {
  name: string;
  compatibilityDate: string;
  modulesRoot: string;
  modules: { type: "ESModule" | "CompiledWasm"; path: string }[];
  bindings: Record<string, string>;
  durableObjects: { TENANT_LEDGER: { className: "TenantLedger"; useSQLite: true } };
};
