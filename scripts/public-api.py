#!/usr/bin/env python3
"""Counts geode's documented public API from rustdoc's JSON (`make api-count`).

Walks from the crate root through public modules and re-exports, skipping `#[doc(hidden)]`
items, and counts each item once: modules, types, traits, functions, constants, statics,
and the public methods and associated items of each type. `--list` prints every path.
"""
import json
import sys

doc = json.load(open(sys.argv[1]))
index = doc["index"]
COUNTED = {"module", "struct", "enum", "trait", "function", "constant", "static",
           "type_alias", "macro", "union"}


def hidden(item):
    return any("doc(hidden)" in str(a) for a in item.get("attrs") or [])


seen = {}


def walk(item_id, path):
    item = index.get(str(item_id))
    if item is None or item["crate_id"] != 0 or hidden(item):
        return
    kind = next(iter(item["inner"]))
    inner = item["inner"][kind]
    if kind == "use":
        if inner.get("id") is not None:
            target = index.get(str(inner["id"]))
            if target is not None and target["crate_id"] == 0:
                walk(inner["id"], path[:-1] + [inner["name"]] if inner["name"] else path)
        return
    if item["visibility"] != "public" and path:
        return
    name = "::".join(path)
    first = item_id not in seen
    seen.setdefault(item_id, []).append(name)
    if not first:
        return
    if kind == "module":
        for child in inner["items"]:
            c = index.get(str(child))
            n = c.get("name") if c else None
            if c and next(iter(c["inner"])) == "use":
                n = c["inner"]["use"]["name"]
            walk(child, path + [n or "?"])
    elif kind in ("struct", "enum", "union"):
        for impl_id in inner.get("impls", []):
            impl = index.get(str(impl_id))
            if impl is None:
                continue
            imp = impl["inner"]["impl"]
            if imp.get("trait") is not None or imp.get("is_synthetic") or imp.get("blanket_impl"):
                continue
            for m in imp["items"]:
                mi = index.get(str(m))
                if mi and mi["visibility"] == "public" and not hidden(mi):
                    seen.setdefault(m, []).append(name + "::" + mi["name"])


walk(doc["root"], [])
items = {i: p for i, p in seen.items()}
multi = {i: p for i, p in items.items() if len(set(p)) > 1}
if "--list" in sys.argv:
    for paths in sorted(items.values()):
        print(" | ".join(sorted(set(paths))))
print(f"public items: {len(items)}; reachable by more than one path: {len(multi)}")
for paths in sorted(multi.values())[:40 if "--list" not in sys.argv else 0]:
    print("  " + " | ".join(sorted(set(paths))))
