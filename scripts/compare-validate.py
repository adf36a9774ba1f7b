#!/usr/bin/env python3
"""Two `geode` binaries side by side on `geode validate` with a 10 MB answer (full validation and
--required-keys-only), run interleaved 15 times each: median wall time and peak RSS per command.
Each child is started with posix_spawn and reaped with wait4, so its RSS is its own.

    python3 scripts/compare-validate.py OLD_GEODE NEW_GEODE

Used for the before/after figures of the tape in docs/benchmarks.md ("Schemas and answers").
"""
import json, os, subprocess, sys, time, statistics, tempfile
old, new = sys.argv[1], sys.argv[2]
d = tempfile.mkdtemp()
schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object",
  "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
  "required": ["id", "name"]}}}, "required": ["items"]}
sp = os.path.join(d, "s.json"); open(sp, "w").write(json.dumps(schema))
ap = os.path.join(d, "a.json")
with open(ap, "w") as out:
    out.write('{"items": [')
    n = 0; size = 0
    while size < 10_000_000:
        p = ('' if n == 0 else ', ') + '{"id": %d, "name": "name number %d", "tags": ["a", "bb", "ccc"]}' % (n, n)
        out.write(p); size += len(p); n += 1
    out.write("]}")
def run(binary, args):
    with open(ap, "rb") as f:
        t = time.perf_counter()
        null = os.open(os.devnull, os.O_WRONLY)
        pid = os.posix_spawn(binary, [binary] + args, {}, file_actions=[(os.POSIX_SPAWN_DUP2, f.fileno(), 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
        _, status, ru = os.wait4(pid, 0)
        os.close(null)
        el = time.perf_counter() - t
    assert os.waitstatus_to_exitcode(status) == 0, status
    return el * 1000, ru.ru_maxrss / 1024
res = {}
for _ in range(15):
    for name, b in (("old", old), ("new", new)):
        for mode, args in (("full", ["validate", "--schema", sp]), ("keys", ["validate", "--required-keys-only", "--schema", sp])):
            res.setdefault((name, mode), []).append(run(b, args))
for k, v in sorted(res.items()):
    print(k, "median %.1f ms" % statistics.median(x[0] for x in v), "peak RSS %.1f MiB" % max(x[1] for x in v))
