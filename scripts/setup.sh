#!/usr/bin/env bash
# Idempotent set-up for `make test` and `make demo`: installs what the tests need, pinned.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# The pinned claude and codex CLIs driven by crates/geode/tests/cli_{claude,codex}.rs.
"$HERE/install-clis.sh"
