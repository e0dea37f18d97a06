// @ts-check
// The slim wasm of idempotency-ledger/ledger, for ./object-ledger.js:
// build/ledger/index.js + index_bg.wasm, built by scripts/build.sh from
// `--no-default-features --features js-ledger` (the ledger core, its store
// and the EmbeddedLedger class the Rust module `embedded` exports; no gateway, no
// workers-rs). Workers only: the .wasm import needs Workers' module rules.
//
// Role: the one place the package loads the wasm core, and the shape its
// users rely on. Inputs and outputs are JSON text; ./ledger.js is the
// typed API.
//
// What is checked, and what cannot be. The built module is untyped: its
// class is wasm-bindgen's (run with --no-typescript) behind the Proxy of
// scripts/ledger-shim.mjs, and scripts/build.sh declares its export
// `unknown` (build/ledger/index.d.ts) so tsc never reads the minified glue.
// So the class is only known at run time: the `EmbeddedLedger` typedef
// below is this module's claim about it, and tests/e2e
// (embedded-ledger.test.mjs, js-surfaces-model-ledger.test.mjs) exercise
// every method through ./ledger.js. What tsc checks (`npm run check:types`,
// tsc -p client, strict): every use of the core in ./object-ledger.js and
// ./ledger.js against that typedef; a method it does not declare, other
// arguments, or an answer read as another type fails the check.
// What must stay true: the typedef changes with the #[wasm_bindgen] methods of the Rust
// module `embedded`, in the same commit.
import { EmbeddedLedger as Built } from "../../build/ledger/index.js";

/**
 * One ledger core over one object's SQLite (Rust `embedded`): the
 * object's store and counts, under one set of options.
 * @typedef {object} EmbeddedLedger
 * @property {(optionsJson: string) => EmbeddedLedger} withOptions The same object's ledger (its store and counts) under other options.
 * @property {(callJson: string, run: () => [number, string[], Uint8Array]) => string} execute `{key, fingerprint}` JSON in, the RPC v1 `execute` outcome JSON out (a `ran` without its response).
 * @property {(key: string, method: string, url: string, headers: (string | null)[], body: Uint8Array, run: () => [number, string[], Uint8Array]) => string} executeRequest As `execute`, the fingerprint computed by the core from the request's parts; headers `[name, value | null, …]`.
 * @property {(key: string) => string} lookup The record as RPC v1 `lookup` answers it (JSON), or `null`.
 * @property {(batch: number) => string} sweep `{deleted, batch_full, next_expires_at, next_alarm_at}` JSON.
 * @property {() => string} stats RPC v1 `stats` (JSON), read-only.
 * @property {() => string} nextSweepAt When the next record may expire (epoch ms), or `null` (JSON).
 * @property {() => string} alarmAt Where the alarm must be at the latest (epoch ms on the sweep grid) JSON, or `null`.
 * @property {number} sweepIntervalMs The sweep grid, in milliseconds (a getter).
 * @property {() => boolean} hasPending Counts kept in memory, not yet written?
 * @property {() => void} flush Writes the counts kept in memory.
 * @property {number} flushAfterMs How long counts may wait in memory before a flush (a getter).
 * @property {() => void} free Releases the core's wasm memory.
 */

/**
 * The class: `new EmbeddedLedger(ctx, optionsJson)` migrates the ledger's
 * tables in the object's database and recounts a small one; throws a
 * TypeError on invalid options.
 * @type {new (ctx: unknown, optionsJson: string) => EmbeddedLedger}
 */
export const EmbeddedLedger = /** @type {new (ctx: unknown, optionsJson: string) => EmbeddedLedger} */ (Built);
