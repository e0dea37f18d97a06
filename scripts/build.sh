#!/usr/bin/env bash
# Builds the Worker into build/ (worker-build: cargo → wasm-bindgen → wasm-opt → esbuild).
# Also wrangler's [build] command, so `wrangler dev` and `wrangler deploy` use it.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh > /dev/null
worker-build --release
