#!/bin/bash
# scripts/hot-symbols.sh: regenerates crates/geode-cli/link/hot-symbols.txt, the functions the
# `geode` binary runs for a hosted-adapter task, in the order they first run. The release link puts
# them together at the start of .text (lld --symbol-ordering-file, see crates/geode-cli/build.rs),
# so a worker touches a few hundred KB of code instead of pages spread over 10 MB (docs/benchmarks.md,
# "A lean worker"). Rust's symbol hashes do not change with source edits, only with dependency versions,
# features or the toolchain; symbols the binary no longer has are ignored, so a stale list only
# loses some of the benefit. Needs valgrind (callgrind). A maintainer's tool, not run by the tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Rust's symbol hashes differ between the release and bench profiles (both link with this list),
# so each profile's binary is profiled and the list holds both, release first.
cargo build -q -p geode-fakes --bin geode-fakes
work=$(mktemp -d)
fake=
trap 'kill "$fake" 2>/dev/null || true; rm -rf "$work"' EXIT
"$root/target/debug/geode-fakes" serve --kind responses > "$work/fake.out" 2>/dev/null &
fake=$!
for _ in $(seq 50); do [ -s "$work/fake.out" ] && break; sleep 0.1; done
url=$(head -1 "$work/fake.out")
schema=$(tr -d ' \n' < examples/decision.schema.json)
echo "{\"task_id\":\"t\",\"description\":\"Decide.\",\"adapter\":\"openai-payg\",\"response_schema\":$schema}" > "$work/line.json"
echo '{not json' > "$work/bad.json"
profile() { # BIN NAME STDIN ARGS...
  local bin=$1 name=$2 input=$3; shift 3
  env -i HOME="$work" OPENAI_API_KEY=sk-profile GEODE_OPENAI_BASE_URL="$url" \
    valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.cg" \
    "$bin" "$@" < "$input" > /dev/null 2>&1 || true
}
profile_all() { # BIN PREFIX
  profile "$1" "$2-worker" "$work/line.json" worker
  profile "$1" "$2-bad" "$work/bad.json" worker
  profile "$1" "$2-run" /dev/null run --adapter openai-payg --schema examples/decision.schema.json "Decide."
}
cargo build --release -q -p geode-cli --bin geode
cp target/release/geode "$work/geode-release"
profile_all "$work/geode-release" release
cargo bench -q -p geode-cli --bench worker_spawn --no-run 2> /dev/null
cp target/release/geode "$work/geode-bench"
profile_all "$work/geode-bench" bench
python3 - "$work" > crates/geode-cli/link/hot-symbols.txt <<'PY'
import re, subprocess, sys
work = sys.argv[1]
order, seen = [], set()
for profile in ('release', 'bench'):
    binpath = f'{work}/geode-{profile}'
    name = binpath.rsplit('/', 1)[-1]
    defined = {l.split()[-1] for l in subprocess.run(['nm', '--defined-only', binpath],
               capture_output=True, text=True, check=True).stdout.splitlines() if len(l.split()) == 3}
    for run in ('worker', 'bad', 'run'):
        obs, fns, ob = {}, {}, None
        for line in open(f'{work}/{profile}-{run}.cg'):
            m = re.match(r'^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$', line.rstrip('\n'))
            if not m:
                continue
            kind, i, text = m.groups()
            table = obs if kind.endswith('ob') else fns
            if text:
                table[i] = text
            if kind == 'ob':
                ob = obs.get(i)
            elif kind == 'fn' and ob and ob.endswith('/' + name):
                f = fns.get(i)
                if f in defined and f not in seen:
                    seen.add(f)
                    order.append(f)
print('\n'.join(order))
PY
echo "$(wc -l < crates/geode-cli/link/hot-symbols.txt) functions written to crates/geode-cli/link/hot-symbols.txt"
