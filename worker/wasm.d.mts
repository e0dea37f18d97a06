// Types of ./wasm.mjs: the class src/embedded/mod.rs exports (wasm-bindgen).
// Its inputs and outputs are JSON text; client/ledger/ledger.js is the typed API.
export declare class EmbeddedLedger {
  /** Migrates the ledger's tables in the object's database and recounts a small one; throws a TypeError on invalid options. */
  constructor(ctx: unknown, optionsJson: string);
  /** The same object's ledger (its store and counts) under other options. */
  withOptions(optionsJson: string): EmbeddedLedger;
  /** `{key, fingerprint}` JSON in, the RPC v1 `execute` outcome JSON out (a `ran` without its response). */
  execute(callJson: string, run: () => [number, string[], Uint8Array]): string;
  /** As `execute`, the fingerprint computed by the core from the request's parts; headers `[name, value | null, …]`. */
  executeRequest(key: string, method: string, url: string, headers: (string | null)[], body: Uint8Array,
    run: () => [number, string[], Uint8Array]): string;
  lookup(key: string): string;
  /** `{deleted, batch_full, next_expires_at, next_alarm_at}` JSON. */
  sweep(batch: number): string;
  stats(): string;
  nextSweepAt(): string;
  /** Where the alarm must be at the latest (epoch ms on the sweep grid) JSON, or `null`. */
  alarmAt(): string;
  readonly sweepIntervalMs: number;
  /** Counts kept in memory, not yet written? */
  hasPending(): boolean;
  /** Writes the counts kept in memory. */
  flush(): void;
  readonly flushAfterMs: number;
  free(): void;
}
