#!/usr/bin/env bash
# Idempotent, pinned set-up for `make test` and `make demo`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The local adapter (crates/geode-local): apt cmake + libclang-dev for building llama.cpp, and the
# SmolLM2-135M GGUF model (checked by size and sha256) in ~/.cache/geode/models.
"$here/fetch-model.sh"

# The pinned claude and codex CLIs driven by crates/geode/tests/it/cli_{claude,codex}.rs.
"$here/install-clis.sh"

# llama-server (upstream llama.cpp, pinned sdist, built once into ~/.cache/geode/llama-server;
# about 6 minutes the first time) for `make bench-peer` and the openai-compatible adapter's tests.
"$here/install-llama-server.sh"

# redis-server (Debian's package, pinned) for the queue tests of `geode serve` / `geode batch --queue`.
"$here/install-redis.sh"

# The official OpenAI Python SDK (pinned, in a venv under the cache) for the gateway's SDK tests.
"$here/install-venv.sh" openai-sdk "$here/python/sdk-requirements.txt" python -c "import openai, pydantic, pytest, openresponses_types"

# The official MCP Python SDK (pinned, in a venv under the cache) for the tests of `geode mcp`.
"$here/install-venv.sh" mcp-sdk "$here/python/mcp-requirements.txt" python -c "import mcp, pytest"

# maturin, pydantic and pytest (pinned, in a venv under the cache) for the Python package's wheel and tests.
"$here/install-venv.sh" geode-py "$here/python/geode-py-requirements.txt" maturin --version

# The official OpenAI npm package and zod (pinned, under the cache) for the gateway's TypeScript SDK tests.
"$here/install-node-sdk.sh"

# cargo-fuzz for `make fuzz` (fuzz/ is run with the nightly toolchain), pinned, installed only when
# missing or another version.
CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version 2>/dev/null | grep -qxF "cargo-fuzz $CARGO_FUZZ_VERSION"; then
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
