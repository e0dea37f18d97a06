#!/usr/bin/env bash
# Builds the library-mode example (examples/embedded-ledger) against the
# crate `cargo package` produced, not the checkout: what a Rust user
# downloads is what must build. The .crate is unpacked under
# target/package-unpacked, a copy of the example points its
# `idempotency-ledger` path dependency there, and its build/ is copied
# back to examples/embedded-ledger/build, where tests/e2e/rust-client.test.mjs
# reads it. No network (CARGO_NET_OFFLINE).
#
#   bash scripts/build-example.sh      # after `cargo package --allow-dirty`
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
crate="$ROOT/target/package/idempotency-ledger-$version.crate"
test -s "$crate" || { echo "[build-example] $crate is missing: run cargo package --allow-dirty first" >&2; exit 1; }
unpacked="$ROOT/target/package-unpacked"
rm -rf "$unpacked" && mkdir -p "$unpacked"
tar -xzf "$crate" -C "$unpacked"
packaged="$unpacked/idempotency-ledger-$version"
copy="$ROOT/target/embedded-ledger-packaged"
rm -rf "$copy" && mkdir -p "$copy"
cp -R examples/embedded-ledger/Cargo.toml examples/embedded-ledger/Cargo.lock examples/embedded-ledger/wrangler.toml examples/embedded-ledger/src "$copy/"
# The one line that changes: the dependency is the packaged crate.
sed -i "s|^idempotency-ledger = { path = \"../..\"|idempotency-ledger = { path = \"$packaged\"|" "$copy/Cargo.toml"
grep -q "path = \"$packaged\"" "$copy/Cargo.toml" || { echo "[build-example] could not point the example at $packaged" >&2; exit 1; }
# Its own target dir: the product crate is cdylib+rlib, so cargo names its
# rlib without a hash and a shared dir would mix the two feature sets.
(cd "$copy" && CARGO_NET_OFFLINE=true CARGO_TARGET_DIR="$ROOT/target/embedded-ledger-example" worker-build --release)
rm -rf examples/embedded-ledger/build
cp -R "$copy/build" examples/embedded-ledger/build
echo "[build-example] examples/embedded-ledger built against $(basename "$crate")"
