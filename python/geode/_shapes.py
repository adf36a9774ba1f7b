"""What a call asks for, prepared once per target: the schema handed to the native module, and
how the answer (JSON text) becomes the caller's value.

A target is a pydantic model, a dataclass, a ``TypedDict``, ``list[...]`` or any type pydantic's
``TypeAdapter`` reads (its JSON Schema gets geode's strict rewrites, each named in the ledger), or
a JSON Schema ``dict`` (taken as written; the value comes back as plain JSON data).
"""

from __future__ import annotations

import json
import threading
import typing
from collections import OrderedDict
from typing import Any, Callable, Optional

from . import _native
from ._errors import ConfigError

Load = Callable[[str], Any]

_RAW_CACHE_SIZE = 256


class Shape:
    """A prepared target."""

    __slots__ = ("schema", "load", "load_item")

    def __init__(self, schema: _native.Schema, load: Load, load_item: Load) -> None:
        self.schema = schema
        self.load = load
        self.load_item = load_item


_typed: dict[Any, Shape] = {}
_raw: OrderedDict[str, Shape] = OrderedDict()
_lock = threading.Lock()


def shape_of(target: Any) -> Shape:
    """The prepared shape of ``target``, from the cache after the first call."""
    if isinstance(target, dict):
        return _raw_shape(target)
    try:
        hit = _typed.get(target)
    except TypeError:  # an unhashable target: prepared every time
        return _typed_shape(target)
    if hit is None:
        hit = _typed_shape(target)
        with _lock:
            _typed[target] = hit
    return hit


def _raw_shape(schema: dict) -> Shape:
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"the schema is not JSON data: {e}") from None
    with _lock:
        hit = _raw.get(key)
        if hit is not None:
            _raw.move_to_end(key)
            return hit
    shape = Shape(_native.Schema(key, False), json.loads, json.loads)
    with _lock:
        _raw[key] = shape
        while len(_raw) > _RAW_CACHE_SIZE:
            _raw.popitem(last=False)
    return shape


def _typed_shape(target: Any) -> Shape:
    try:
        from pydantic import TypeAdapter
        from pydantic.errors import PydanticUserError
    except ImportError:
        raise ConfigError(
            f"{target!r} is a type: install pydantic >= 2 to ask for types, "
            "or pass a JSON Schema dict"
        ) from None
    try:
        adapter = TypeAdapter(target)
        schema = adapter.json_schema()
    except (PydanticUserError, TypeError, ValueError) as e:
        raise ConfigError(f"no JSON Schema for {target!r}: {e}") from None
    item = _item_type(target)
    load_item = TypeAdapter(item).validate_json if item is not None else json.loads
    return Shape(_native.Schema(json.dumps(schema), True), adapter.validate_json, load_item)


def _item_type(target: Any) -> Optional[Any]:
    """The element type of the list that streams items: the root ``list[X]``, or a model's one
    ``list[X]`` field."""
    if typing.get_origin(target) is list:
        args = typing.get_args(target)
        return args[0] if args else None
    fields = getattr(target, "model_fields", None)
    if isinstance(fields, dict):
        lists = [f.annotation for f in fields.values() if typing.get_origin(f.annotation) is list]
        if len(lists) == 1:
            args = typing.get_args(lists[0])
            return args[0] if args else None
    return None
