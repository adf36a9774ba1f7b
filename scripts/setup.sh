#!/usr/bin/env bash
# Idempotent set-up for `make test` and `make demo`: installs what the tests need, pinned.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The local adapter (crates/geode-local): apt cmake + libclang-dev for building llama.cpp, and the
# SmolLM2-135M GGUF model (checked by size and sha256) in ~/.cache/geode/models.
"$here/fetch-model.sh"
