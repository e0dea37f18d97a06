// Types of ./wasm.mjs: the class src/embedded.rs exports (wasm-bindgen).
// Its inputs and outputs are JSON text; client/ledger.js is the typed API.
export declare class EmbeddedLedger {
  /** Migrates the ledger's tables in the object's database; throws a TypeError on invalid options. */
  constructor(ctx: unknown, optionsJson: string);
  /** `{key, fingerprint}` JSON in, the RPC v1 `execute` outcome JSON out (a `ran` without its response). */
  execute(callJson: string, run: () => [number, string[], Uint8Array]): string;
  /** As `execute`, the fingerprint computed by the core from the request's parts; headers `[name, value | null, …]`. */
  executeRequest(key: string, method: string, url: string, headers: (string | null)[], body: Uint8Array,
    run: () => [number, string[], Uint8Array]): string;
  lookup(key: string): string;
  sweep(batch: number): string;
  stats(): string;
  nextSweepAt(): string;
  free(): void;
}
