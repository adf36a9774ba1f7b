#!/usr/bin/env bash
# Idempotent, pinned: the official `openai` npm package and zod (its structured-output helper's
# schema library) for the gateway tests that drive `geode gateway` from TypeScript's SDK
# (crates/geode-cli/tests/it/e2e_gateway_sdk.rs). Installed under the cache, never globally.
set -euo pipefail
# The newest release for Node 20 (the 7.x line needs Node 22, which Debian does not ship here).
readonly OPENAI_VERSION=6.49.0
readonly ZOD_VERSION=4.6.7
readonly PREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/geode/npm-sdk"

installed_version() { # package -> version, or empty
  local pj="$PREFIX/node_modules/$1/package.json"
  [ -f "$pj" ] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version||""))' "$pj" 2>/dev/null || true
}

if [ "$(installed_version openai)" = "$OPENAI_VERSION" ] && [ "$(installed_version zod)" = "$ZOD_VERSION" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "install-node-sdk: npm is not installed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$PREFIX"
[ -f "$PREFIX/package.json" ] || echo '{"name":"geode-node-sdk","private":true,"type":"module"}' > "$PREFIX/package.json"
echo "install-node-sdk: installing openai@$OPENAI_VERSION zod@$ZOD_VERSION into $PREFIX" >&2
npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact "openai@$OPENAI_VERSION" "zod@$ZOD_VERSION" >&2
[ "$(installed_version openai)" = "$OPENAI_VERSION" ] || { echo "install-node-sdk: openai is not $OPENAI_VERSION" >&2; exit 1; }
