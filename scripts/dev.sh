#!/usr/bin/env bash
# Runs the gateway locally on http://127.0.0.1:8787 (PORT, HOST, or
# --port/--ip after `--` choose another address) with the embedded orders
# app and real SQLite-backed Durable Objects (state kept in .wrangler/).
# The demo tokens come from .dev.vars, copied from the committed
# .dev.vars.example (local only: wrangler deploy never reads it).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
# PORT / HOST pick the address; `npm run dev -- --port 9000 --ip 0.0.0.0`
# works too (wrangler refuses a flag given twice, so ours yield to yours).
# (`${a[@]+"${a[@]}"}`: empty arrays under `set -u` in bash 3.2, macOS's.)
has_flag() {
  local f
  for f in ${args[@]+"${args[@]}"}; do case "$f" in "$1" | "$1="*) return 0 ;; esac; done
  return 1
}
args=("$@")
# TENANT_JURISDICTIONS cannot be kept locally: workerd refuses
# `namespace.jurisdiction(J)` ("Jurisdiction restrictions are not implemented
# in workerd"), so such a tenant's every keyed request would be 500
# misconfigured. Refused here, loudly, unless LOCAL_IGNORE_JURISDICTIONS=1
# says to create every tenant's objects unrestricted, in .wrangler/ only
# (docs/configuration.md "Jurisdictions").
names_jurisdictions() {
  local f a
  for f in wrangler.toml .dev.vars; do
    [ -f "$f" ] && grep -Eq '^[[:space:]]*TENANT_JURISDICTIONS[[:space:]]*=[[:space:]]*[^"[:space:]]|^[[:space:]]*TENANT_JURISDICTIONS[[:space:]]*=[[:space:]]*"[^"]' "$f" && return 0
  done
  for a in ${args[@]+"${args[@]}"}; do case "$a" in *TENANT_JURISDICTIONS:?* | *TENANT_JURISDICTIONS=?*) return 0 ;; esac; done
  return 1
}
if names_jurisdictions; then
  if [ "${LOCAL_IGNORE_JURISDICTIONS:-}" != 1 ]; then
    cat >&2 <<'MSG'
npm run dev: TENANT_JURISDICTIONS is set, and local workerd cannot keep a
Durable Object in a jurisdiction ("Jurisdiction restrictions are not
implemented in workerd"): every keyed request of those tenants would be
refused (500 misconfigured). Not started.
To run locally with every tenant's objects unrestricted (local data only,
never a deployment): LOCAL_IGNORE_JURISDICTIONS=1 npm run dev
MSG
    exit 1
  fi
  echo "npm run dev: LOCAL_IGNORE_JURISDICTIONS=1: TENANT_JURISDICTIONS is IGNORED; every tenant's objects are created UNRESTRICTED in .wrangler/ (local only)" >&2
  args+=(--var "TENANT_JURISDICTIONS:")
fi
bash scripts/setup.sh
[ -f .dev.vars ] || cp .dev.vars.example .dev.vars
defaults=()
has_flag --port || defaults+=(--port "${PORT:-8787}")
has_flag --ip || defaults+=(--ip "${HOST:-127.0.0.1}")
exec wrangler dev ${defaults[@]+"${defaults[@]}"} ${args[@]+"${args[@]}"}
