"""geode's Python package beside Instructor and PydanticAI on one job: a Decision extracted from
one loopback fake provider that answers at once (0 ms upstream), so what is measured is each
library's own cost per call. Each contender runs in its own pinned virtual environment, in
fresh processes, interleaved round by round. Prints per-call wall time (median and p90), process
CPU per call (every thread of the process: geode's Rust runtime counts too), import time, and
each peer's ratio to geode.

    python peers.py --fake PATH/geode-fakes --python geode=VENV/bin/python \\
        --python instructor=VENV/bin/python --python pydantic-ai=VENV/bin/python
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fake", required=True, help="the geode-fakes binary")
    p.add_argument("--python", action="append", required=True, help="NAME=PYTHON")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    args = p.parse_args()
    pythons = dict(x.split("=", 1) for x in args.python)

    fake = subprocess.Popen([args.fake, "serve", "--kind", "chat"], stdout=subprocess.PIPE, text=True)
    try:
        assert fake.stdout is not None
        base_url = fake.stdout.readline().strip()
        # The fake logs a line per request: drain them so it never blocks on a full pipe.
        import threading

        threading.Thread(target=lambda: [None for _ in fake.stdout], daemon=True).start()
        runs: dict[str, list[dict]] = {name: [] for name in pythons}
        names = list(pythons)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[: r % len(names)]
            for name in order:
                out = subprocess.run(
                    [pythons[name], str(HERE / "contender.py"), name, base_url, str(args.calls), str(args.warmup)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if out.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{out.stderr[-3000:]}")
                runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        fake.terminate()
        fake.wait()

    rows = {}
    for name, rs in runs.items():
        walls = sorted(w for run in rs for w in run["walls_s"])
        rows[name] = {
            "median_ms": statistics.median(walls) * 1e3,
            "p90_ms": walls[int(len(walls) * 0.9)] * 1e3,
            "cpu_ms": statistics.median(run["cpu_per_call_s"] for run in rs) * 1e3,
            "import_ms": statistics.median(run["import_s"] for run in rs) * 1e3,
        }
    base = rows.get("geode")

    print(f"{args.rounds} rounds x {args.calls} calls per contender (after {args.warmup} warm-up calls), interleaved")
    print("wall/call includes the fake's own answer time, the same for every contender")
    print(f"{'contender':<12} {'wall/call':>10} {'p90':>9} {'CPU/call':>9} {'import':>9}   vs geode (wall, CPU, import)")
    for name, row in rows.items():
        ratio = ""
        if base and name != "geode":
            ratio = (
                f"{row['median_ms'] / base['median_ms']:.1f}x, {row['cpu_ms'] / base['cpu_ms']:.1f}x, "
                f"{row['import_ms'] / base['import_ms']:.1f}x"
            )
        print(
            f"{name:<12} {row['median_ms']:>7.3f} ms {row['p90_ms']:>6.3f} ms "
            f"{row['cpu_ms']:>6.3f} ms {row['import_ms']:>6.1f} ms   {ratio}"
        )


if __name__ == "__main__":
    main()
