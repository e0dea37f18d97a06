#!/usr/bin/env bash
# Builds the Rust benchmark floor into bench/floor-rs/build/ as
# scripts/build.sh builds the gateway: worker-build --release (cargo →
# wasm-bindgen → wasm-opt -Oz → esbuild) with the repo's pinned tools, then
# the name and producers sections stripped, so its size compares fairly.
# Its own target/ (never the root's). Skipped when build/ is newer than
# every input; IDEMPOTENCY_LEDGER_REBUILD=1 forces it. Also the floor's
# wrangler [build] command.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/env.sh"
cd "$HERE"
out=build/index_bg.wasm
if [ -z "${IDEMPOTENCY_LEDGER_REBUILD:-}" ] && [ -s "$out" ] && [ -s build/index.js ] \
  && [ -z "$(find src Cargo.toml Cargo.lock build.sh -newer "$out" -print -quit)" ]; then
  echo "[build] bench/floor-rs/build/ is up to date"
  exit 0
fi
# scripts/build.sh's wasm-opt features (worker-build 0.8.7's), never more.
WASM_FEATURES=(--enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int
  --enable-bulk-memory --enable-multivalue --enable-reference-types --enable-exception-handling)
rm -f "$out"
CARGO_TARGET_DIR="$HERE/target" worker-build --release
wasm-opt "$out" --strip-debug --strip-producers "${WASM_FEATURES[@]}" -o "$out"
