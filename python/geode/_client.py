"""``Client``: every call geode can make, sync and async, with the value and its ledger back."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any, Generic, Mapping, Optional, Sequence, TypeVar, Union, overload

from . import _native
from ._ledger import Ledger
from ._prompt import Parts, Prompt, native_parts, native_prompt
from ._shapes import shape_of
from ._stream import Stream, _load

T = TypeVar("T")

__all__ = ["Client", "Extraction"]


class Extraction(Generic[T]):
    """A checked value and the account of how it was obtained."""

    __slots__ = ("value", "ledger")

    def __init__(self, value: T, ledger: Ledger) -> None:
        self.value = value
        """The value: an instance of the target type, or plain JSON data for a dict schema."""
        self.ledger = ledger
        """Which adapter served it, how the schema went on the wire, every attempt."""

    def __repr__(self) -> str:
        return f"Extraction(value={self.value!r}, ledger={self.ledger!r})"


Target = Union[type, Any, dict]

class Client:
    """A handle for structured calls, shared safely by threads and asyncio tasks (calls run
    concurrently; adapters, connections and a loaded local model are built once per client).

    Every argument is optional; what is not given comes from ``geode.toml`` (current
    directory, else ``~/.config/geode/config.toml``) and the environment, exactly as for the
    ``geode`` CLI.

    :param adapter: the adapter for every call (``"local"``, ``"openai-payg"``,
        ``"anthropic-payg"``, a ``[providers.NAME]`` of ``geode.toml``...); routed when absent.
    :param model: the model name (the adapter's default when absent).
    :param require: ``"best-effort"``, ``"wired"`` or ``"enforced"``: a call whose route
        cannot guarantee that much raises :class:`NotEnforceable` before any token is spent.
    :param timeout: seconds (or a ``timedelta``) for a whole call, retry included.
    :param fallback: adapters tried in order when one fails before answering.
    :param max_tokens: the output token budget of each attempt.
    :param system: a system prompt for every call (a conversation's system turns replace it).
    :param temperature: the sampling temperature of every call (default: the provider's; the
        local engine's is 0.7, and ``0`` decodes greedily); reasoning models take none.
    :param env: variables read before ``os.environ`` (keys, base URLs), for this client only.
    :param repair: let an almost-valid answer through, repaired (quotes, trailing commas, ``"42"``
        for a number...), each fix named in ``ledger.repairs``; never a cut-off answer, never
        under ``require="wired"`` or ``"enforced"``. Off unless asked (or ``repair = true`` in
        ``geode.toml``).
    :param cache: keep every validated answer in this directory (or ``redis://...``) and replay
        it, with no request, when the same call comes again; the ledger then says ``replayed``.
        ``False`` turns off a cache ``geode.toml`` sets. An answer made under a weaker
        ``require`` never answers a stronger one.
    :param cache_ttl: the oldest answer replayed: seconds, a ``timedelta`` or ``"1h"``.
    """

    __slots__ = ("_native", "_shown")

    def __init__(
        self,
        adapter: Optional[str] = None,
        *,
        model: Optional[str] = None,
        require: Optional[str] = None,
        timeout: Union[float, timedelta, None] = None,
        fallback: Optional[Sequence[str]] = None,
        max_tokens: Optional[int] = None,
        system: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        repair: Optional[bool] = None,
        cache: Union[str, "os.PathLike[str]", bool, None] = None,
        cache_ttl: Union[float, timedelta, str, None] = None,
        temperature: Optional[float] = None,
    ) -> None:
        self._native = _native.Client(
            adapter,
            model,
            require,
            _seconds(timeout),
            None if fallback is None else list(fallback),
            max_tokens,
            system,
            None if env is None else dict(env),
            repair,
            _cache(cache),
            _ttl(cache_ttl),
            temperature,
        )
        # Settings only: `env` may hold keys, and is never shown.
        self._shown = (adapter, model, require)

    def with_options(
        self,
        *,
        model: Optional[str] = None,
        require: Optional[str] = None,
        timeout: Union[float, timedelta, None] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        system: Optional[str] = None,
    ) -> Client:
        """This client with some settings changed, for one call or a few:
        ``client.with_options(model="gpt-5", require="enforced").extract(...)``. Cheap; it shares
        this client's adapters, connections, local engine and cache. What is not given is kept."""
        derived = object.__new__(Client)
        derived._native = self._native.with_options(
            model, require, _seconds(timeout), max_tokens, temperature, system
        )
        adapter, was_model, was_require = self._shown
        derived._shown = (
            adapter,
            was_model if model is None else model,
            was_require if require is None else require,
        )
        return derived

    @classmethod
    def from_env(cls) -> Client:
        """A client configured entirely as the CLI is: ``geode.toml`` and the environment."""
        return cls()

    def __repr__(self) -> str:
        adapter, model, require = self._shown
        return f"geode.Client(adapter={adapter!r}, model={model!r}, require={require!r})"

    @overload
    def extract(self, target: type[T], prompt: Prompt, *, parts: Parts = None) -> Extraction[T]: ...
    @overload
    def extract(self, target: Any, prompt: Prompt, *, parts: Parts = None) -> Extraction[Any]: ...

    def extract(self, target: Target, prompt: Prompt, *, parts: Parts = None) -> Extraction[Any]:
        """Asks for a value of ``target`` (a pydantic model, dataclass, ``TypedDict``,
        ``list[...]``, or a JSON Schema dict). The answer is validated against the schema, with
        one retry that tells the model what was wrong. Blocks with the GIL released; Ctrl-C
        cancels the call.

        ``parts``: images and documents (:class:`geode.Image`, :class:`geode.Document`) the
        model sees with the prompt; a route that cannot take them raises
        :class:`geode.InputsNotTaken` before any request. Every call takes ``parts=``."""
        shape = shape_of(target)
        value_json, ledger_json, summary = self._native.extract(
            shape.schema, native_prompt(prompt), native_parts(parts)
        )
        ledger = Ledger(ledger_json, summary)
        return Extraction(_load(shape, value_json, ledger), ledger)

    def contract(self, name: str, /, **inputs: Any) -> Extraction[Any]:
        """Runs the ``[contracts.NAME]`` of ``geode.toml`` with its inputs as keyword
        arguments: its prompt rendered, its schema, route and ``require``, as ``geode run
        --contract``, ``geode mcp`` and the gateway's ``contract/NAME`` run it. The value is the
        validated JSON; an unknown contract or inputs that break it raise
        :class:`geode.ConfigError` before any request."""
        value_json, ledger_json, summary = self._native.contract(name, json.dumps(inputs))
        return Extraction(json.loads(value_json), Ledger(ledger_json, summary))

    @overload
    async def aextract(self, target: type[T], prompt: Prompt, *, parts: Parts = None) -> Extraction[T]: ...
    @overload
    async def aextract(self, target: Any, prompt: Prompt, *, parts: Parts = None) -> Extraction[Any]: ...

    async def aextract(self, target: Target, prompt: Prompt, *, parts: Parts = None) -> Extraction[Any]:
        """:meth:`extract` on the running asyncio loop (no thread per call); cancelling the
        task cancels the call."""
        shape = shape_of(target)
        value_json, ledger_json, summary = await self._native.aextract(
            shape.schema, native_prompt(prompt), native_parts(parts)
        )
        ledger = Ledger(ledger_json, summary)
        return Extraction(_load(shape, value_json, ledger), ledger)

    def stream(
        self, target: Target, prompt: Prompt, *, items: Optional[str] = None, parts: Parts = None
    ) -> Stream[Any]:
        """Streams a value of ``target``: :class:`Partial` values as text arrives,
        :class:`Item` for each element of the root list (or of the root's one list field, or of
        the field ``items`` names) once it is whole and valid, :class:`Retry` when the retry
        starts, then one :class:`Final`. Iterate it with ``for`` or ``async for``."""
        shape = shape_of(target)
        native = self._native.stream(shape.schema, native_prompt(prompt), items, native_parts(parts))
        return Stream(native, shape)

    def choose(self, options: Sequence[str], prompt: Prompt, *, parts: Parts = None) -> Extraction[str]:
        """Exactly one of ``options`` (enforced by a constraining engine, checked otherwise)."""
        return _text(self._native.text("choice", list(options), native_prompt(prompt), native_parts(parts)))

    def matches(self, regex: str, prompt: Prompt, *, parts: Parts = None) -> Extraction[str]:
        """Text whose whole (trimmed) answer matches ``regex``."""
        return _text(self._native.text("regex", regex, native_prompt(prompt), native_parts(parts)))

    def grammar(self, lark: str, prompt: Prompt, *, parts: Parts = None) -> Extraction[str]:
        """Text derivable from the Lark grammar ``lark`` (enforced by a constraining engine;
        elsewhere the ledger names it unchecked)."""
        return _text(self._native.text("grammar", lark, native_prompt(prompt), native_parts(parts)))

    async def achoose(self, options: Sequence[str], prompt: Prompt, *, parts: Parts = None) -> Extraction[str]:
        """:meth:`choose` on the running asyncio loop."""
        done = await self._native.atext("choice", list(options), native_prompt(prompt), native_parts(parts))
        return _text(done)

    async def amatches(self, regex: str, prompt: Prompt, *, parts: Parts = None) -> Extraction[str]:
        """:meth:`matches` on the running asyncio loop."""
        return _text(await self._native.atext("regex", regex, native_prompt(prompt), native_parts(parts)))

    async def agrammar(self, lark: str, prompt: Prompt, *, parts: Parts = None) -> Extraction[str]:
        """:meth:`grammar` on the running asyncio loop."""
        return _text(await self._native.atext("grammar", lark, native_prompt(prompt), native_parts(parts)))


def _seconds(timeout: Union[float, timedelta, None]) -> Optional[float]:
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout: expected seconds or a timedelta, not {type(timeout).__name__}")


def _cache(cache: Union[str, "os.PathLike[str]", bool, None]) -> Optional[str]:
    if cache is None or cache is True:
        return None
    if cache is False:
        return ""
    return os.fspath(cache)


def _ttl(ttl: Union[float, timedelta, str, None]) -> Optional[str]:
    if ttl is None or isinstance(ttl, str):
        return ttl
    seconds = _seconds(ttl)
    return None if seconds is None else repr(seconds)


def _text(done: tuple[str, str, str]) -> Extraction[str]:
    value_json, ledger_json, summary = done
    return Extraction(json.loads(value_json), Ledger(ledger_json, summary))
