// The slim wasm of idempotency-ledger/ledger (build/ledger/index.js +
// index_bg.wasm, built by scripts/build.sh from `--no-default-features
// --features js-ledger`: the ledger core, its store and this class, no
// gateway, no workers-rs): client/ledger/ledger.js takes the exported
// EmbeddedLedger (src/embedded/mod.rs) from here. Types: ./wasm.d.mts.
export { EmbeddedLedger } from "../build/ledger/index.js";
