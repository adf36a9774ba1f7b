#!/usr/bin/env bash
# Idempotent set-up for `make test` and `make demo`: installs what the tests need, pinned.
set -euo pipefail
echo "setup: nothing to install yet"
