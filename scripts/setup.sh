#!/usr/bin/env bash
# Installs what a fresh machine lacks, and is quick when everything is there:
#   - npm packages (Node 22 for wrangler, wrangler/miniflare, binaryen's
#     wasm-opt, esbuild) into node_modules;
#   - the wasm32-unknown-unknown Rust target: `rustup target add` first, and
#     where that fails (no route to the rustup host) Debian's rustc-web with
#     std built for wasm32 once, linked as the `debian-system` toolchain;
#   - worker-build and wasm-bindgen-cli at pinned versions, cached in $TOOLS;
#   - with --with-browser (scripts/test.sh): a Chromium for the console's
#     browser test (tests/e2e/console.test.mjs), Debian's `chromium` package
#     when we are root with apt-get, or the one CHROMIUM names.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

WORKER_BUILD_VERSION=0.8.7
WASM_BINDGEN_VERSION="$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' Cargo.toml)"
mkdir -p "$TOOLS/bin"

say() { echo "[setup] $*"; }

# Portable helpers (no GNU-only tools: macOS has shasum, not sha256sum, and
# no `timeout` unless coreutils are installed).
sha256_of() {
  if command -v sha256sum > /dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}
with_timeout() {
  local seconds="$1"; shift
  if command -v timeout > /dev/null; then timeout "$seconds" "$@"
  elif command -v gtimeout > /dev/null; then gtimeout "$seconds" "$@"
  else "$@"
  fi
}

# 1. npm packages, reinstalled only when package-lock.json changes.
lock_sum="$(sha256_of package-lock.json)"
if [ ! -x node_modules/.bin/wrangler ] || [ "$(cat node_modules/.setup-lock 2>/dev/null)" != "$lock_sum" ]; then
  say "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.setup-lock
fi

# 2. The wasm32 target.
has_wasm32() {
  local sysroot
  sysroot="$(rustc --print sysroot 2>/dev/null)" || return 1
  compgen -G "$sysroot/lib/rustlib/wasm32-unknown-unknown/lib/libstd-*.rlib" > /dev/null
}

debian_route() {
  say "building the wasm32 std from Debian's rustc-web (about 3 minutes, once)"
  command -v apt-get > /dev/null || { echo "[setup] no apt-get: install the wasm32-unknown-unknown target by hand" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rustc-web cargo-web rust-web-src lld-22 > /dev/null
  local scratch
  scratch="$(mktemp -d)"
  mkdir -p "$scratch/src"
  printf '[package]\nname = "stdbuild"\nversion = "0.0.0"\nedition = "2021"\n[lib]\npath = "src/lib.rs"\n' > "$scratch/Cargo.toml"
  echo "" > "$scratch/src/lib.rs"
  (cd "$scratch" && RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Cembed-bitcode=yes \
    /usr/bin/cargo build --release --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort -q)
  local libdir=/usr/lib/rustlib/wasm32-unknown-unknown/lib
  mkdir -p "$libdir"
  find "$scratch/target/wasm32-unknown-unknown/release/deps" -name '*.rlib' ! -name 'libstdbuild*' -exec cp {} "$libdir/" \;
  rm -rf "$scratch"
  rustup toolchain link debian-system /usr
}

use_debian_toolchain() {
  if ! { rustup toolchain list 2>/dev/null | grep -q '^debian-system' && RUSTUP_TOOLCHAIN=debian-system has_wasm32; }; then
    debian_route
  fi
  echo debian-system > "$TOOLS/toolchain"
  export RUSTUP_TOOLCHAIN=debian-system
}

if [ -n "${IDEMPOTENCY_LEDGER_FORCE_DEBIAN:-}" ]; then
  # Take the offline route even where rustup works (to test it, or to match CI).
  [ "${RUSTUP_TOOLCHAIN:-}" = debian-system ] && has_wasm32 || use_debian_toolchain
elif ! has_wasm32; then
  if command -v rustup > /dev/null; then
    say "adding the wasm32-unknown-unknown target"
    with_timeout 180 rustup target add wasm32-unknown-unknown || say "rustup target add failed"
  fi
  has_wasm32 || use_debian_toolchain
fi
has_wasm32 || { echo "[setup] the wasm32-unknown-unknown target is still missing" >&2; exit 1; }

# 3. Pinned build tools.
if ! "$TOOLS/bin/worker-build" --version 2>/dev/null | grep -q "$WORKER_BUILD_VERSION"; then
  say "installing worker-build $WORKER_BUILD_VERSION (about 5 minutes, once)"
  cargo install worker-build --version "=$WORKER_BUILD_VERSION" --locked --root "$TOOLS" -q
fi
if ! "$TOOLS/bin/wasm-bindgen" --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 5 minutes, once)"
  cargo install wasm-bindgen-cli --version "=$WASM_BINDGEN_VERSION" --root "$TOOLS" -q
fi
# 4. A headless Chromium, only for the tests (npm run dev never needs one).
if [ "${1:-}" = "--with-browser" ]; then
  browser="${CHROMIUM:-/usr/bin/chromium}"
  if [ ! -x "$browser" ] && [ -z "${CHROMIUM:-}" ] && command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
    say "installing Debian's chromium (the console's browser test; about a minute, once)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null
  fi
  if [ ! -x "$browser" ]; then
    echo "[setup] no Chromium at $browser (tests/e2e/console.test.mjs drives one): as root on Debian/Ubuntu this script installs it with apt-get; elsewhere install Chromium or Chrome and set CHROMIUM=/path/to/it" >&2
    exit 1
  fi
fi
say "ready ($(rustc --version), node $(node --version), wrangler $(wrangler --version 2>/dev/null | tail -1))"
