#!/usr/bin/env python3
# scripts/reference-load.py: the "load" half of the reference's schema load + strict check
# (docs/benchmarks.md, "Schemas and answers"). The reference is Python: it loads a schema with
# json.loads before its strict check, whose figures docs/benchmarks.md gives alone. This times
# json.loads of the four schemas `cargo bench -p geode --bench schema` loads (schema_check/
# load_strict), as the same compact text, and prints the best of 7 runs per call.
import json
import pathlib
import timeit

root = pathlib.Path(__file__).resolve().parent.parent
decision = json.loads((root / "examples/decision.schema.json").read_text())


def strict_object(props):
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def nested(levels):
    v = {"type": "string"}
    for _ in range(levels):
        v = strict_object({"a": v, "b": {"type": ["string", "null"]}})
    return v


def props(n):
    return {f"field_{i}": {"type": "string"} for i in range(n)}


cases = [
    ("decision", decision),
    ("200_properties", strict_object(props(200))),
    ("10_levels", nested(10)),
    ("5000_properties", strict_object(props(5000))),
]
for name, schema in cases:
    text = json.dumps(schema, separators=(",", ":"))
    n = 200000 if len(text) < 2000 else (2000 if len(text) < 20000 else 100)
    best = min(timeit.repeat(lambda: json.loads(text), number=n, repeat=7)) / n
    print(f"{name:16} {len(text):7} B  json.loads {best * 1e6:9.2f} us")
