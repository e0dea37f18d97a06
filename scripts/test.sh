#!/usr/bin/env bash
# Runs every test (tests/README.md): the host tests of the core on real
# SQLite (cargo test), the Node-only tests of the JS package (tests/node),
# then the end-to-end tests of the built Worker in workerd (tests/e2e).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh --with-browser
echo "== lint (cargo fmt --check; cargo clippy -D warnings, host with every target, the wasm32 library and its slim js-ledger build)"
cargo fmt --check
if cargo clippy --version > /dev/null 2>&1; then
  cargo clippy --quiet --features host-sqlite --all-targets -- -D warnings
  cargo clippy --quiet --lib --target wasm32-unknown-unknown -- -D warnings
  cargo clippy --quiet --lib --target wasm32-unknown-unknown --no-default-features --features js-ledger -- -D warnings
else
  echo "[lint] cargo clippy is not installed for this toolchain ($(rustc --version)): clippy skipped" >&2
fi
echo "== host tests (cargo test, rusqlite)"
cargo test --features host-sqlite
echo "== building the Worker"
bash scripts/build.sh
echo "== packaging the crate (cargo package: the files of Cargo.toml's include, verified by building them alone)"
cargo package --allow-dirty --quiet
echo "== building the library-mode example (examples/embedded-ledger) against the packaged crate"
bash scripts/build-example.sh
echo "== checking the deployable bundle (wrangler deploy --dry-run, no network)"
rm -rf "$ROOT/target/deploy-dry-run"
wrangler deploy --dry-run --outdir "$ROOT/target/deploy-dry-run" 2>&1 | grep -E "Total Upload|dry-run" || true
# The entry (worker/entry.mjs: the Rust build plus the JS RPC entrypoint) was bundled.
test -s "$ROOT/target/deploy-dry-run/entry.js"
grep -q "LedgerService" "$ROOT/target/deploy-dry-run/entry.js"
echo "== type-checking the JS package (strict JSDoc) and emitting its declarations, then their TypeScript users"
npm run --silent check:types
tsc -p tests/types
echo "== Node-only tests (the JS package in Node: no workerd)"
node --test --test-concurrency=1 --test-timeout=120000 'tests/node/*.test.mjs'
echo "== end-to-end tests (workerd via miniflare)"
node --test --test-concurrency=1 --test-timeout=120000 'tests/e2e/*.test.mjs'
echo "== the vitest-pool-workers example (examples/vitest-app: an app tested with the packaged ledger as an auxiliary Worker)"
(
  cd examples/vitest-app
  npm ci --no-audit --no-fund --loglevel=error
  wrangler types > /dev/null
  tsc -p .
  npx vitest run
)
echo "== billed rows per operation within their bounds (bench/cost.mjs --check)"
node bench/cost.mjs --check --n 40
echo "== OpenAPI: validated, and fuzzed by Schemathesis against npm run dev"
bash scripts/fuzz.sh
