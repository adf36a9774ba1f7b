#!/usr/bin/env bash
# Runs the cargo-fuzz targets (fuzz/fuzz_targets) one after another, each for FUZZ_SECONDS
# (default 600), and prints per target the executions and the crashes found.
#
#   FUZZ_SECONDS=300 scripts/fuzz.sh            every target, 5 minutes each
#   FUZZ_TARGETS="sse chat" scripts/fuzz.sh     only those targets
#
# Each target starts from its committed seeds (fuzz/seeds/<target>) plus what earlier runs kept in
# fuzz/corpus/<target> (not committed). A crash, a timeout (a unit over FUZZ_TIMEOUT seconds,
# default 10), an out-of-memory or a leak stops that target and leaves its input in
# fuzz/artifacts/<target>/; the run log is fuzz/logs/<target>.log. Exit status 1 when anything
# was found: fix it and keep the input as a seed named fuzz/seeds/<target>/regress-<what>.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${FUZZ_SECONDS:-600}"
unit_timeout="${FUZZ_TIMEOUT:-10}"
targets="${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
mkdir -p fuzz/logs
found=0
report=()
count_artifacts() { find "fuzz/artifacts/$1" -type f 2>/dev/null | wc -l; }

for t in $targets; do
  mkdir -p "fuzz/corpus/$t"
  before="$(count_artifacts "$t")"
  log="fuzz/logs/$t.log"
  echo "fuzz: $t for ${seconds}s (log: $log)" >&2
  cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$seconds" -timeout="$unit_timeout" -rss_limit_mb=2048 \
    -print_final_stats=1 >"$log" 2>&1
  status=$?
  execs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n1 | grep -o '[0-9]*$')"
  crashes=$(( $(count_artifacts "$t") - before ))
  if [ "$status" != 0 ] && [ "$crashes" = 0 ]; then
    crashes="build or run failure (exit $status)"
  fi
  [ "$crashes" = 0 ] || found=1
  report+=("$(printf '%-18s execs %-12s crashes %s' "$t" "${execs:-?}" "$crashes")")
  grep -h '^artifact_prefix\|Test unit written to' "$log" | sed 's/^/  /' >&2 || true
done

printf '%s\n' "${report[@]}"
exit "$found"
