# Sourced by every script: where the pinned tools live and which toolchain
# builds the Worker. Safe to source repeatedly.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Installed tools are cached per user, outside the clone, so a fresh clone
# on a warm machine does not rebuild them.
TOOLS="${IDEMPOTENCY_LEDGER_TOOLS:-$HOME/.cache/idempotency-ledger/tools}"
export PATH="$ROOT/node_modules/.bin:$TOOLS/bin:$HOME/.cargo/bin:$PATH"
# setup.sh records the toolchain it chose (the Debian route links one).
if [ -z "${RUSTUP_TOOLCHAIN:-}" ] && [ -f "$TOOLS/toolchain" ]; then
  RUSTUP_TOOLCHAIN="$(cat "$TOOLS/toolchain")"
  export RUSTUP_TOOLCHAIN
fi
# worker-build finds each helper through {NAME}_BIN before downloading it.
export WASM_BINDGEN_BIN="$TOOLS/bin/wasm-bindgen"
export WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt"
export ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild"
export WRANGLER_SEND_METRICS=false
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
