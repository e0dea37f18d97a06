#!/usr/bin/env bash
# Runs the gateway locally on http://127.0.0.1:8787 (PORT, HOST, or
# --port/--ip after `--` choose another address) with the embedded orders
# app and real SQLite-backed Durable Objects (state kept in .wrangler/).
# The demo tokens come from .dev.vars, copied from the committed
# .dev.vars.example (local only: wrangler deploy never reads it).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
[ -f .dev.vars ] || cp .dev.vars.example .dev.vars
# PORT / HOST pick the address; `npm run dev -- --port 9000 --ip 0.0.0.0`
# works too (wrangler refuses a flag given twice, so ours yield to yours).
args=("$@")
# (`${a[@]+"${a[@]}"}`: empty arrays under `set -u` in bash 3.2, macOS's.)
has_flag() {
  local f
  for f in ${args[@]+"${args[@]}"}; do case "$f" in "$1" | "$1="*) return 0 ;; esac; done
  return 1
}
defaults=()
has_flag --port || defaults+=(--port "${PORT:-8787}")
has_flag --ip || defaults+=(--ip "${HOST:-127.0.0.1}")
exec wrangler dev ${defaults[@]+"${defaults[@]}"} "$@"
