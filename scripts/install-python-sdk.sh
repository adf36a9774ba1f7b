#!/usr/bin/env bash
# Idempotent, pinned: a virtual environment under the cache holding the official `openai`
# Python SDK, pydantic and pytest at the versions of scripts/python/sdk-requirements.txt, for
# the gateway tests (crates/geode-cli/tests/it/e2e_gateway_sdk.rs). Never the system's Python
# packages: a venv of its own, rebuilt when the pins change.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly REQS="$here/python/sdk-requirements.txt"
readonly VENV="${XDG_CACHE_HOME:-$HOME/.cache}/geode/venv/openai-sdk"
readonly STAMP="$VENV/.requirements.sha256"

log() { echo "install-python-sdk: $*" >&2; }

want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    exit 0
fi
log "building $VENV"
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQS"
"$VENV/bin/python" -c "import openai, pydantic, pytest" || {
    log "the SDK does not import"
    exit 1
}
echo "$want" > "$STAMP"
