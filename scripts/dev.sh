#!/usr/bin/env bash
# Runs the gateway locally on http://127.0.0.1:8787 with the embedded orders
# app and real SQLite-backed Durable Objects (state kept in .wrangler/).
# The demo tokens come from .dev.vars, copied from the committed
# .dev.vars.example (local only: wrangler deploy never reads it).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
[ -f .dev.vars ] || cp .dev.vars.example .dev.vars
exec wrangler dev --ip 127.0.0.1 --port "${PORT:-8787}" "$@"
