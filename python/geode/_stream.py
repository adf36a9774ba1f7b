"""Streaming: partial values with the JSON Pointers of the parts already closed, list items once
each is whole and valid, the retry, and the one final validated value."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Generic, Optional, TypeVar, Union

from . import _native
from ._errors import InvalidAnswer
from ._ledger import Ledger
from ._shapes import Shape

T = TypeVar("T")

__all__ = ["Partial", "Item", "Retry", "Final", "Event", "Stream"]


@dataclass(frozen=True)
class Partial:
    """The value read so far (plain JSON data). ``complete`` holds the JSON Pointers of the
    parts that are closed and will not change within this answer. ``guarantee`` is
    ``"enforced"`` when the wire constrains decoding to the schema, else ``"unchecked"``."""

    value: Any
    complete: list[str] = field(default_factory=list)
    guarantee: str = "unchecked"


@dataclass(frozen=True)
class Item:
    """A closed element of the streamed list, valid against the item schema (an instance of
    the item type when the target is ``list[X]`` or a model with one ``list[X]`` field)."""

    index: int
    value: Any


@dataclass(frozen=True)
class Retry:
    """The first answer failed its check; the one retry starts (partials start over)."""

    reason: str


@dataclass(frozen=True)
class Final(Generic[T]):
    """The validated value, with its ledger."""

    value: T
    ledger: Ledger


Event = Union[Partial, Item, Retry, Final]


class Stream(Generic[T]):
    """The events of one streamed call: iterate it (``for``) or ``async for`` it, once.
    Breaking out, ``close()`` or leaving a ``with`` block ends the call: nothing keeps running."""

    def __init__(self, native: _native.Stream, shape: Shape) -> None:
        self._native = native
        self._shape = shape
        self.final: Optional[Final[T]] = None
        """The final event, once the stream has given it."""

    def __iter__(self) -> Stream[T]:
        return self

    def __next__(self) -> Event:
        raw = self._native.next()
        if raw is None:
            raise StopIteration
        return self._event(raw)

    def __aiter__(self) -> Stream[T]:
        return self

    async def __anext__(self) -> Event:
        raw = await self._native.anext()
        if raw is None:
            raise StopAsyncIteration
        return self._event(raw)

    def close(self) -> None:
        """Ends the call (the request or engine call is cancelled); iteration then stops."""
        self._native.close()

    def __enter__(self) -> Stream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Stream[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def _event(self, raw: tuple) -> Event:
        kind = raw[0]
        if kind == "partial":
            return Partial(json.loads(raw[1]), list(raw[2]), raw[3])
        if kind == "item":
            return Item(raw[1], self._shape.load_item(raw[2]))
        if kind == "retry":
            return Retry(raw[1])
        ledger = Ledger(raw[2], raw[3])
        final = Final(_load(self._shape, raw[1], ledger), ledger)
        self.final = final
        return final


def _load(shape: Shape, value_json: str, ledger: Ledger) -> Any:
    """The caller's value from the checked answer; a type that reads it more strictly than its
    schema says (a custom validator) makes it an ``InvalidAnswer``."""
    try:
        return shape.load(value_json)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        errors_of = getattr(e, "errors", None)
        errors = (
            [
                {
                    "instance_path": "/" + "/".join(str(p) for p in err.get("loc", ())),
                    "keyword": err.get("type", ""),
                    "message": err.get("msg", ""),
                }
                for err in errors_of(include_input=False)
            ]
            if callable(errors_of)
            else []
        )
        raise InvalidAnswer(f"the answer does not load as the target type: {e}", ledger, errors) from None
