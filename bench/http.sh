#!/usr/bin/env bash
# HTTP benchmark: the product (npm run dev) against a bare JS Durable Object
# floor, one server at a time; prints req/s, p50, p99 and ratios. See
# bench/http.mjs for the options (e.g. `npm run bench:http -- --duration 5`).
# With --profile (npm run bench:profile): a CPU profile instead, see
# bench/profile.mjs.
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$ROOT"
bash scripts/setup.sh > /dev/null
if [ "${1:-}" = "--profile" ]; then
  shift
  exec node bench/profile.mjs "$@"
fi
bash scripts/build.sh > /dev/null
node bench/http.mjs "$@"
