#!/bin/sh
# The local engine on real-world schemas: a seeded sample of JSONSchemaBench run through
# `geode run --adapter local --require enforced --max-tokens 512` (in one process, see
# crates/geode-local/examples/sweep.rs), printing the outcome table as Markdown.
#
#   scripts/local-sweep.sh [BENCH] [PER_SUBSET] [SEED] [OUT.jsonl]
#
# BENCH is a JSONSchemaBench checkout (with data/), or a git directory of one (its data/ is
# extracted into a temporary directory). Without BENCH it is cloned (network needed) into a
# temporary directory that is removed afterwards. The benchmark is never committed.
# PER_SUBSET (default 12) schemas are drawn from each of its 10 subsets; SEED defaults to 13.
set -eu
cd "$(dirname "$0")/.."
bench="${1:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ -z "$bench" ]; then
    git clone --quiet --depth 1 https://github.com/guidance-ai/jsonschemabench "$tmp/bench"
    bench="$tmp/bench"
elif [ ! -d "$bench/data" ]; then
    # A snapshot may lack its largest blobs: extract the schemas that are present.
    mkdir "$tmp/bench"
    git --git-dir="$bench" ls-tree -r HEAD data | awk '{print $3, $4}' \
        | git --git-dir="$bench" cat-file --batch-check='%(objectname) %(objecttype) %(rest)' 2>/dev/null \
        | awk '$2 == "blob" {print $3}' > "$tmp/present"
    xargs git --git-dir="$bench" archive HEAD -- < "$tmp/present" 2>/dev/null | tar -x -i -C "$tmp/bench"
    bench="$tmp/bench"
fi
if [ ! -d "$bench/data/Github_easy" ]; then
    echo "local-sweep: $bench is not a JSONSchemaBench checkout" >&2
    exit 2
fi
echo "bench: $(git -C "$bench" log -1 --format='%h %cs' 2>/dev/null || git --git-dir="${1:-.}" log -1 --format='%h %cs' 2>/dev/null || echo unknown)" >&2
shift $(( $# > 0 ? 1 : 0 ))
cargo run --quiet --example sweep -- "$bench" "$@"
