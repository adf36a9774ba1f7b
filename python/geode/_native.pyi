"""Type stubs of the native module (crates/geode-py)."""

from os import PathLike
from pathlib import Path
from typing import Awaitable, Optional, Union

__version__: str

Done = tuple[str, str, str]
PromptArg = Union[str, list[tuple[str, str, list[Media]]]]
Parts = Optional[list[Media]]

def serve_engine() -> int: ...
def trust_config(path: Union[str, PathLike[str]]) -> Path: ...

class Schema:
    def __init__(self, schema_json: str, generated: bool) -> None: ...
    @property
    def sent_json(self) -> str: ...
    @property
    def wrapped(self) -> bool: ...

class Media:
    @staticmethod
    def from_path(path: Union[str, PathLike[str]], kind: str, title: Optional[str] = None) -> Media: ...
    @staticmethod
    def from_bytes(data: bytes, kind: str, title: Optional[str] = None) -> Media: ...
    @staticmethod
    def from_url(url: str, kind: str, title: Optional[str] = None) -> Media: ...
    @property
    def kind(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def media_type(self) -> Optional[str]: ...
    @property
    def size(self) -> Optional[int]: ...
    @property
    def sha256(self) -> str: ...
    @property
    def title(self) -> Optional[str]: ...

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
    def extract(self, schema: Schema, prompt: PromptArg, parts: Parts = None) -> Done: ...
    def aextract(self, schema: Schema, prompt: PromptArg, parts: Parts = None) -> Awaitable[Done]: ...
    def text(self, kind: str, spec: Union[str, list[str]], prompt: PromptArg, parts: Parts = None) -> Done: ...
    def atext(
        self, kind: str, spec: Union[str, list[str]], prompt: PromptArg, parts: Parts = None
    ) -> Awaitable[Done]: ...
    def stream(
        self, schema: Schema, prompt: PromptArg, items: Optional[str] = None, parts: Parts = None
    ) -> Stream: ...
