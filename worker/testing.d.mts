// Types of idempotency-ledger/worker/testing (./testing.mjs, Node only).
export interface LedgerWorkerOptions {
  /** The Worker's name, as other Workers' script_name / service name it. Default "idempotency-ledger". */
  name?: string;
  /** Default "2026-11-01" (the package's). Lower it to what your test runtime's workerd supports. */
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
