#!/usr/bin/env bash
# Idempotent, pinned set-up for `make test` and `make demo`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The local adapter (crates/geode-local): apt cmake + libclang-dev for building llama.cpp, and the
# SmolLM2-135M GGUF model (checked by size and sha256) in ~/.cache/geode/models.
"$here/fetch-model.sh"

# The pinned claude and codex CLIs driven by crates/geode/tests/cli_{claude,codex}.rs.
"$here/install-clis.sh"
