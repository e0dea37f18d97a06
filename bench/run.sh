#!/usr/bin/env bash
# Prints the sweep benchmark table (see bench/sweep.rs). Not part of npm test.
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$ROOT"
cargo bench --features host-sqlite --bench sweep
