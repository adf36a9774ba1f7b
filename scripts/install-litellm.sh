#!/usr/bin/env bash
# Idempotent, pinned: the LiteLLM proxy (the gateway people run today) in a virtual environment
# of its own under the cache, at the versions of scripts/python/litellm-requirements.txt, for
# `make bench-gateway` (crates/geode-cli/benches/gateway.rs). About 750 MB; never used by the
# tests, so `make test` does not install it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly REQS="$here/python/litellm-requirements.txt"
readonly VENV="${XDG_CACHE_HOME:-$HOME/.cache}/geode/venv/litellm"
readonly STAMP="$VENV/.requirements.sha256"

log() { echo "install-litellm: $*" >&2; }

want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    exit 0
fi
log "building $VENV"
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQS"
"$VENV/bin/litellm" --version >/dev/null 2>&1 || {
    log "litellm does not run"
    exit 1
}
echo "$want" > "$STAMP"
