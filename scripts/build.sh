#!/usr/bin/env bash
# Builds the Worker into build/ (worker-build: cargo → wasm-bindgen → wasm-opt → esbuild).
# Also wrangler's [build] command, so `wrangler dev` and `wrangler deploy` use it.
# Skips the build when build/ is newer than every Rust input (wasm-opt alone
# takes most of a minute on 2 cores; docs/openapi.json is compiled in too);
# IDEMPOTENCY_LEDGER_REBUILD=1 forces it.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh > /dev/null
out=build/index_bg.wasm
# IDEMPOTENCY_LEDGER_KEEP_NAMES=1 keeps the wasm name section (for CPU
# profiles: bench/profile.mjs); build/.variant records which build is there.
variant="names=${IDEMPOTENCY_LEDGER_KEEP_NAMES:-0}"
if [ -z "${IDEMPOTENCY_LEDGER_REBUILD:-}" ] && [ -s "$out" ] && [ -s build/index.js ] \
  && [ "$(cat build/.variant 2>/dev/null)" = "$variant" ] \
  && [ -z "$(find src docs/openapi.json Cargo.toml Cargo.lock scripts/build.sh -newer "$out" -print -quit)" ]; then
  echo "[build] build/ is up to date"
  exit 0
fi
rm -f build/.variant
worker-build --release
if [ "$variant" = "names=1" ]; then
  echo "$variant" > build/.variant
  exit 0
fi
# worker-build keeps the wasm name section (`--debuginfo`) for stack traces;
# panics are logged with their message and location (idempotency.panic)
# without it, and it is a fifth of the bundle. Strip it (and the producers
# section); the feature flags are worker-build's own.
wasm-opt build/index_bg.wasm --strip-debug --strip-producers \
  --enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int \
  --enable-bulk-memory --enable-multivalue --enable-reference-types \
  --enable-exception-handling -o build/index_bg.wasm
echo "$variant" > build/.variant
