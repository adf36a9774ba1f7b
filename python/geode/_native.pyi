"""Type stubs of the native module (crates/geode-py)."""

from os import PathLike
from pathlib import Path
from typing import Awaitable, Optional, Union

__version__: str

Done = tuple[str, str, str]
PromptArg = Union[str, list[tuple[str, str]]]

def serve_engine() -> int: ...
def trust_config(path: Union[str, PathLike[str]]) -> Path: ...

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
        temperature: Optional[float] = None,
    ) -> None: ...
    def with_options(
        self,
        model: Optional[str] = None,
        require: Optional[str] = None,
        timeout: Optional[float] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        system: Optional[str] = None,
    ) -> Client: ...
    def extract(self, schema: Schema, prompt: PromptArg) -> Done: ...
    def aextract(self, schema: Schema, prompt: PromptArg) -> Awaitable[Done]: ...
    def text(self, kind: str, spec: Union[str, list[str]], prompt: PromptArg) -> Done: ...
    def atext(self, kind: str, spec: Union[str, list[str]], prompt: PromptArg) -> Awaitable[Done]: ...
    def stream(self, schema: Schema, prompt: PromptArg, items: Optional[str] = None) -> Stream: ...
