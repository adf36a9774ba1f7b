"""Type stubs of the native module (crates/geode-py)."""

from typing import Awaitable, Optional, Union

__version__: str

Done = tuple[str, str, str]

class Schema:
    def __init__(self, schema_json: str, generated: bool) -> None: ...
    @property
    def sent_json(self) -> str: ...
    @property
    def wrapped(self) -> bool: ...

class Stream:
    def next(self) -> Optional[tuple]: ...
    def anext(self) -> Awaitable[Optional[tuple]]: ...
    def close(self) -> None: ...

class Client:
    def __init__(
        self,
        adapter: Optional[str] = None,
        model: Optional[str] = None,
        require: Optional[str] = None,
        timeout: Optional[float] = None,
        fallback: Optional[list[str]] = None,
        max_tokens: Optional[int] = None,
        system: Optional[str] = None,
        env: Optional[dict[str, str]] = None,
        repair: Optional[bool] = None,
        cache: Optional[str] = None,
        cache_ttl: Optional[str] = None,
    ) -> None: ...
    def extract(self, schema: Schema, prompt: str) -> Done: ...
    def aextract(self, schema: Schema, prompt: str) -> Awaitable[Done]: ...
    def text(self, kind: str, spec: Union[str, list[str]], prompt: str) -> Done: ...
    def atext(self, kind: str, spec: Union[str, list[str]], prompt: str) -> Awaitable[Done]: ...
    def stream(self, schema: Schema, prompt: str, items: Optional[str] = None) -> Stream: ...
