#!/usr/bin/env bash
# HTTP benchmark: the product (npm run dev) against a bare JS Durable Object
# floor, one server at a time; prints req/s, p50, p99 and ratios. See
# bench/http.mjs for the options (e.g. `npm run bench:http -- --duration 5`).
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$ROOT"
bash scripts/setup.sh > /dev/null
bash scripts/build.sh > /dev/null
node bench/http.mjs "$@"
