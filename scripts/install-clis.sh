#!/usr/bin/env bash
# Install the pinned vendor CLIs that the cli_claude / cli_codex tests drive, idempotently.
#
#   scripts/install-clis.sh          installs (only when the installed versions differ) and
#                                    prints `GEODE_CLAUDE_BIN=...` and `GEODE_CODEX_BIN=...`
#
# Both packages come from the npm registry and ship their native binaries inside platform
# packages (@anthropic-ai/claude-code-linux-x64, @openai/codex-linux-x64); nothing is fetched
# at install time. The prefix is outside the repository:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/geode/npm
# The tests find the binaries there by themselves (or through GEODE_CLAUDE_BIN / GEODE_CODEX_BIN).
set -euo pipefail

CLAUDE_VERSION=2.1.197
CODEX_VERSION=0.171.0
PREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/geode/npm"
CLAUDE_BIN="$PREFIX/node_modules/.bin/claude"
CODEX_BIN="$PREFIX/node_modules/.bin/codex"

installed_version() { # package name -> version from its package.json, or empty
  local pj="$PREFIX/node_modules/$1/package.json"
  [ -f "$pj" ] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version||""))' "$pj" 2>/dev/null || true
}

# A binary "works" when it runs and prints the pinned version (the claude postinstall can leave
# a stub behind on some npm setups; see docs/wire.md, "The claude CLI").
works() { # bin version
  [ -x "$1" ] && timeout 30 "$1" --version 2>/dev/null | grep -qF "$2"
}

need=0
[ "$(installed_version @anthropic-ai/claude-code)" = "$CLAUDE_VERSION" ] || need=1
[ "$(installed_version @openai/codex)" = "$CODEX_VERSION" ] || need=1
if [ "$need" = 0 ]; then
  works "$CLAUDE_BIN" "$CLAUDE_VERSION" || need=1
  works "$CODEX_BIN" "$CODEX_VERSION" || need=1
fi

if [ "$need" = 1 ]; then
  command -v npm >/dev/null || { echo "install-clis: npm is not installed (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$PREFIX"
  [ -f "$PREFIX/package.json" ] || echo '{"name":"geode-clis","private":true}' > "$PREFIX/package.json"
  echo "install-clis: installing @anthropic-ai/claude-code@$CLAUDE_VERSION @openai/codex@$CODEX_VERSION into $PREFIX" >&2
  npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact \
    "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
  if ! works "$CLAUDE_BIN" "$CLAUDE_VERSION"; then
    # The native binary is put in place by a postinstall; run it by hand when npm skipped it.
    node "$PREFIX/node_modules/@anthropic-ai/claude-code/install.cjs" >&2 || true
  fi
fi

works "$CLAUDE_BIN" "$CLAUDE_VERSION" || { echo "install-clis: $CLAUDE_BIN does not report $CLAUDE_VERSION" >&2; exit 1; }
works "$CODEX_BIN" "$CODEX_VERSION" || { echo "install-clis: $CODEX_BIN does not report $CODEX_VERSION" >&2; exit 1; }
echo "GEODE_CLAUDE_BIN=$CLAUDE_BIN"
echo "GEODE_CODEX_BIN=$CODEX_BIN"
