#!/bin/sh
# Runs the official JSON-Schema-Test-Suite through geode's validation as the library runs it and
# as a user runs it (each test's data piped into `geode validate`), and prints the pass rate per
# draft and path and the failing groups as Markdown (the results are in docs/conformance.md).
#
#   scripts/conformance.sh [SUITE_DIR]
#
# Without SUITE_DIR the suite is cloned (network needed) into a temporary directory that is
# removed afterwards. The suite is never committed.
set -eu
cd "$(dirname "$0")/.."
suite="${1:-}"
tmp=""
if [ -z "$suite" ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    git clone --quiet --depth 1 https://github.com/json-schema-org/JSON-Schema-Test-Suite "$tmp/suite"
    suite="$tmp/suite"
fi
if [ ! -d "$suite/tests/draft2020-12" ]; then
    echo "conformance: $suite is not a JSON-Schema-Test-Suite checkout" >&2
    exit 2
fi
echo "suite: $(git -C "$suite" log -1 --format='%h %cs' 2>/dev/null || echo unknown)" >&2
cargo build --quiet -p geode-cli
cargo run --quiet -p geode --example conformance -- "$suite" --cli target/debug/geode
