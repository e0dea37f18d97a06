#!/usr/bin/env bash
# The gateway's OpenAPI document (docs/openapi.json, served at /openapi.json):
#   1. validated by a real OpenAPI 3.1 validator (openapi-spec-validator);
#   2. fuzzed by Schemathesis against `npm run dev` (scripts/dev.sh, fresh
#      state, demo token): no undocumented status, no 5xx, no response that
#      breaks the document, missing keys and auth refused, schema-invalid
#      input refused.
# Both tools are pinned and installed once into a virtualenv in $TOOLS.
# FUZZ_EXAMPLES (default 100), FUZZ_SEED (default 1: CI is deterministic;
# set another to explore) and FUZZ_PORT (default 8797) tune a run.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

SCHEMATHESIS_VERSION=4.32.5
VALIDATOR_VERSION=0.9.0
say() { echo "[fuzz] $*"; }

# A Python for the tools: 3.12+ preferred (CPython 3.11.7 crashes inside
# Hypothesis' lambda descriptions during Schemathesis' coverage phase).
python=""
# pyenv installs versions its shims may not expose; look at them directly too.
pyenv_pythons=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2> /dev/null | sort -rV || true)
for candidate in python3.14 python3.13 python3.12 $pyenv_pythons python3; do
  if command -v "$candidate" > /dev/null && "$candidate" -c 'import venv' 2> /dev/null; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "[fuzz] no python3 with venv found: install Python 3.12+ (python.org, Homebrew or apt) and rerun" >&2
  exit 1
fi
pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
phases="examples,coverage,fuzzing,stateful"
if "$python" -c 'import sys; sys.exit(sys.version_info >= (3, 12))'; then
  say "Python $pyver: skipping the coverage phase (CPython 3.11 bug); install 3.12+ for all phases"
  phases="examples,fuzzing,stateful"
fi
venv="$TOOLS/venv-schemathesis-$SCHEMATHESIS_VERSION-py$pyver"
if [ ! -x "$venv/bin/st" ] || [ ! -x "$venv/bin/openapi-spec-validator" ]; then
  say "installing schemathesis $SCHEMATHESIS_VERSION and openapi-spec-validator $VALIDATOR_VERSION (Python $pyver)"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$VALIDATOR_VERSION"
fi

say "validating docs/openapi.json"
"$venv/bin/openapi-spec-validator" docs/openapi.json

port="${FUZZ_PORT:-8797}"
base="http://127.0.0.1:$port"
state="$(mktemp -d "${TMPDIR:-/tmp}/fuzz-state.XXXXXX")"
log="$state.log"
set -m # the server gets its own process group, so all of it stops at the end
PORT="$port" bash scripts/dev.sh --persist-to "$state" --log-level warn --var LOG_LEVEL:warn > "$log" 2>&1 &
server=$!
set +m
cleanup() {
  kill -TERM -- "-$server" 2> /dev/null || true
  wait "$server" 2> /dev/null || true
  rm -rf "$state" "$log"
}
trap cleanup EXIT

say "starting npm run dev on $base"
node -e '
  const [base, deadline] = [process.argv[1], Date.now() + 240_000];
  (async () => {
    for (;;) {
      try { if ((await fetch(base + "/health")).status === 200) break; } catch {}
      if (Date.now() > deadline) { console.error("[fuzz] npm run dev did not answer /health in time"); process.exit(1); }
      await new Promise((r) => setTimeout(r, 500));
    }
    // The served document is the reviewed file, byte for byte.
    const served = Buffer.from(await (await fetch(base + "/openapi.json")).arrayBuffer());
    if (!served.equals(require("node:fs").readFileSync("docs/openapi.json"))) {
      console.error("[fuzz] GET /openapi.json differs from docs/openapi.json"); process.exit(1);
    }
  })();
' "$base" || { cat "$log" >&2; exit 1; }

# Checks: everything except positive_data_acceptance (a valid request whose
# key was already used for another request is rightly refused: 422/409) and
# unsupported_method (in proxy mode every method of every path belongs to
# the origin, so the gateway cannot promise 405).
say "schemathesis: ${FUZZ_EXAMPLES:-100} examples per operation, seed ${FUZZ_SEED:-1}, phases $phases"
"$venv/bin/st" run docs/openapi.json --url "$base" \
  -H "Authorization: Bearer dev-token-acme" \
  --checks all --exclude-checks positive_data_acceptance,unsupported_method \
  --phases "$phases" --max-examples "${FUZZ_EXAMPLES:-100}" --seed "${FUZZ_SEED:-1}" \
  --generation-database none --workers 2 --no-color
