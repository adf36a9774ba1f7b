#!/usr/bin/env bash
# Idempotent, pinned: a Python virtual environment of its own under the cache, holding exactly
# the packages of a requirements file (every dependency pinned), rebuilt when the pins change.
# Never the system's Python packages.
#
#   scripts/install-venv.sh NAME REQUIREMENTS CHECK...
#
# builds ${XDG_CACHE_HOME:-$HOME/.cache}/geode/venv/NAME and runs CHECK (a command, relative
# names resolved in the venv's bin/) to prove it works. Used for:
#   openai-sdk  scripts/python/sdk-requirements.txt      the gateway's Python SDK tests (make test)
#   geode-py    scripts/python/geode-py-requirements.txt the Python package: wheel build and pytest (make test)
#   litellm     scripts/python/litellm-requirements.txt  the gateway benchmark (make bench-gateway)
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 NAME REQUIREMENTS CHECK..." >&2; exit 2; }
readonly NAME="$1" REQS="$2"
shift 2
readonly VENV="${XDG_CACHE_HOME:-$HOME/.cache}/geode/venv/$NAME"
readonly STAMP="$VENV/.requirements.sha256"

log() { echo "install-venv $NAME: $*" >&2; }

want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    exit 0
fi
log "building $VENV"
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQS"
PATH="$VENV/bin:$PATH" "$@" >/dev/null 2>&1 || { log "the check failed: $*"; exit 1; }
echo "$want" > "$STAMP"
