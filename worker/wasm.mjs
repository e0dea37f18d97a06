// The one wasm module the package ships (build/index.js + index_bg.wasm,
// built by scripts/build.sh): client/ledger.js takes the exported
// EmbeddedLedger (src/embedded.rs) from here. Types: ./wasm.d.mts.
export { EmbeddedLedger } from "../build/index.js";
