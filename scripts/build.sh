#!/usr/bin/env bash
# Builds the package's two wasm modules:
#   build/         the gateway Worker and TenantLedger (worker-build: cargo →
#                  wasm-bindgen → wasm-opt → esbuild), default features;
#   build/ledger/  the slim wasm of idempotency-ledger/ledger: the ledger core,
#                  the store and EmbeddedLedger alone (`--no-default-features
#                  --features js-ledger`, no workers-rs), made the way
#                  worker-build makes the first: cargo, the pinned wasm-bindgen
#                  (--target module, whose `import source` of the .wasm becomes
#                  a plain import, as worker-build rewrites it: Workers' module
#                  bundling hands it a WebAssembly.Module), esbuild over
#                  scripts/ledger-shim.mjs, wasm-opt -Oz --strip-debug.
# Also wrangler's [build] command, so `wrangler dev` and `wrangler deploy` use it.
# Skips each build when its output is newer than every Rust input
# (wasm-opt alone takes most of a minute on 2 cores);
# IDEMPOTENCY_LEDGER_REBUILD=1 forces both.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh > /dev/null
# IDEMPOTENCY_LEDGER_KEEP_NAMES=1 keeps the wasm name section (for CPU
# profiles: bench/profile.mjs, bench/embedded.mjs); .variant records which
# build is there.
variant="names=${IDEMPOTENCY_LEDGER_KEEP_NAMES:-0}"
# The wasm-opt features of worker-build 0.8.7 (rustc's wasm32 defaults and
# the exception handling of wasm-bindgen's catch wrappers), never more.
WASM_FEATURES=(--enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int
  --enable-bulk-memory --enable-multivalue --enable-reference-types --enable-exception-handling)

# Is $1 (a build's wasm) there, of this variant, and newer than every
# input ($2…: the Rust inputs and the files compiled in are common to both)?
up_to_date() {
  local out="$1" dir
  dir="$(dirname "$out")"
  shift
  [ -z "${IDEMPOTENCY_LEDGER_REBUILD:-}" ] && [ -s "$out" ] && [ -s "$dir/index.js" ] \
    && [ "$(cat "$dir/.variant" 2>/dev/null)" = "$variant" ] \
    && [ -z "$(find src build.rs docs/problems.json Cargo.toml Cargo.lock scripts/build.sh "$@" -newer "$out" -print -quit)" ]
}

build_gateway() {
  local out=build/index_bg.wasm
  if up_to_date "$out" docs/openapi.json; then
    echo "[build] build/ is up to date"
    return
  fi
  rm -f build/.variant
  worker-build --release
  if [ "$variant" = "names=0" ]; then
    # worker-build keeps the wasm name section (`--debuginfo`) for stack traces;
    # panics are logged with their message and location (idempotency.panic)
    # without it, and it is a fifth of the bundle. Strip it (and the producers
    # section).
    wasm-opt "$out" --strip-debug --strip-producers "${WASM_FEATURES[@]}" -o "$out"
  fi
  echo "$variant" > build/.variant
}

build_ledger() {
  local out=build/ledger/index_bg.wasm tmp=build/ledger/.tmp
  if up_to_date "$out" scripts/ledger-shim.mjs; then
    echo "[build] build/ledger/ is up to date"
    return
  fi
  echo "[build] the slim wasm of idempotency-ledger/ledger (build/ledger/)"
  # Its own profile (Cargo.toml: profile.ledger, the release settings), so
  # its module never overwrites the gateway's in target/…/release.
  # WASM_BINDGEN_USE_JS_SYS as worker-build sets it for the same crates.
  WASM_BINDGEN_USE_JS_SYS=1 cargo build --quiet --lib --profile ledger --target wasm32-unknown-unknown \
    --no-default-features --features js-ledger
  rm -rf "$tmp" build/ledger/.variant && mkdir -p "$tmp"
  # The flags worker-build 0.8.7 gives wasm-bindgen for its module target
  # (the reset function re-initialises the instance after a trap).
  "$WASM_BINDGEN_BIN" target/wasm32-unknown-unknown/ledger/idempotency_ledger.wasm \
    --out-dir "$tmp" --out-name bindgen --target module --no-typescript \
    --experimental-reset-state-function --force-enable-abort-handler
  sed -e 's|^import source wasmModule from "./bindgen_bg.wasm";|import wasmModule from "./index_bg.wasm";|' \
    "$tmp/bindgen.js" > "$tmp/bindgen.mjs"
  grep -q '^import wasmModule from "./index_bg.wasm";' "$tmp/bindgen.mjs" \
    || { echo "[build] wasm-bindgen's module no longer imports its wasm as expected" >&2; exit 1; }
  mv "$tmp/bindgen.mjs" "$tmp/bindgen.js"
  cp scripts/ledger-shim.mjs "$tmp/shim.mjs"
  esbuild "$tmp/shim.mjs" --bundle --format=esm --minify --log-level=warning \
    --external:./index_bg.wasm --outfile=build/ledger/index.js
  local strip=(--strip-debug --strip-producers)
  [ "$variant" = "names=1" ] && strip=(--debuginfo)
  wasm-opt "$tmp/bindgen_bg.wasm" -Oz --converge "${strip[@]}" "${WASM_FEATURES[@]}" -o "$out"
  rm -rf "$tmp"
  echo "$variant" > build/ledger/.variant
}

# The JS package's copies of the rules both languages share (client/generated/,
# committed): scripts/generate.mjs writes them from their homes, as build.rs
# compiles the same files into the crate. Rewritten when a home (or the
# generator) is newer than a copy, so editing a home is enough; a hand edit
# of a copy is left for tests/node/generated.test.mjs to refuse.
generate_js() {
  local homes=(docs/problems.json src/config/defaults.json src/ledger/outcome/trended.json src/protocol/limits.json scripts/generate.mjs)
  local copy
  for copy in client/generated/problems.js client/generated/defaults.js client/generated/trended.js client/generated/limits.js worker/console/browser/trended.js; do
    if [ ! -s "$copy" ] || [ -n "$(find "${homes[@]}" -newer "$copy" -print -quit)" ]; then
      echo "[build] client/generated/ from the shared rules' homes"
      node scripts/generate.mjs
      return
    fi
  done
}

generate_js
build_gateway
build_ledger
# The slim wasm's JS is untyped (wasm-bindgen with --no-typescript, its
# class behind the shim's Proxy): say so to tsc, which would otherwise read
# and type-check the minified glue that client/ledger/wasm.js imports. That
# module declares the class's shape; not shipped (package.json's files).
echo "export declare const EmbeddedLedger: unknown; // scripts/build.sh: untyped; client/ledger/wasm.js declares its shape" \
  > build/ledger/index.d.ts
# The console's browser modules, embedded as strings the Worker serves
# (worker/console/files.mjs; tests/node/console.test.mjs pins the copy).
node scripts/console-files.mjs
# worker-build writes build/.gitignore as `*`, which also hides build/ledger/
# from npm pack (package.json's files name the four files one by one). npm
# reads a .npmignore instead of the .gitignore beside it; git still ignores
# all of build/.
echo "# scripts/build.sh: npm reads this instead of worker-build's .gitignore (*)" > build/.npmignore
