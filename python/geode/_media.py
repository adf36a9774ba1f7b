"""Images and documents for a prompt: :class:`Image` and :class:`Document`.

Each is read once, when it is made, by the native module (``geode::media::Media``): its type
comes from its bytes (PNG, JPEG, GIF, WebP; PDF, UTF-8 text), never from a file name or a
declared type, so a PDF named ``scan.png`` is a document and an executable named ``a.jpg`` is
refused. A part that cannot be used raises :class:`geode.InputError` at once, before any call;
neither its ``repr`` nor any error shows its content (or a URL, which may be signed).
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, Optional, TypeVar, Union

from . import _native

__all__ = ["Image", "Document", "Part"]

P = TypeVar("P", bound="Part")

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
"""What a part is made from: a path, the bytes, or a URL (``data:`` or ``https://``)."""


def _is_url(text: str) -> bool:
    """Whether a string given as a part's source is a URL rather than a path: ``data:...``, or
    any ``scheme://`` (only ``https`` is taken; the others are refused by name, never opened as
    a file). A ``pathlib.Path`` is always a path."""
    return text.startswith("data:") or "://" in text


class Part:
    """An image or a document, read and typed. Equal parts (same kind, bytes and name) compare
    equal and hash alike."""

    __slots__ = ("_native",)
    _kind: ClassVar[str] = ""

    def __init__(self, source: Source, *, filename: Optional[str] = None) -> None:
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._native = _native.Media.from_bytes(bytes(source), self._kind, filename)
        elif isinstance(source, str) and _is_url(source):
            self._native = _native.Media.from_url(source, self._kind, filename)
        elif isinstance(source, (str, os.PathLike)):
            self._native = _native.Media.from_path(os.fspath(source), self._kind, filename)
        else:
            raise TypeError(
                f"{type(self).__name__}: expected a path, bytes or a URL, not {type(source).__name__}"
            )

    @classmethod
    def _of(cls: type[P], native: _native.Media) -> P:
        made = object.__new__(cls)
        made._native = native
        return made

    @property
    def kind(self) -> str:
        """``"image"`` or ``"document"``."""
        return self._native.kind

    @property
    def source(self) -> str:
        """``"inline"`` (the bytes travel in the request) or ``"url"`` (the provider fetches
        them)."""
        return self._native.source

    @property
    def media_type(self) -> Optional[str]:
        """The MIME type read from the bytes (``None`` for a URL)."""
        return self._native.media_type

    @property
    def size(self) -> Optional[int]:
        """The size in bytes (``None`` for a URL)."""
        return self._native.size

    @property
    def sha256(self) -> str:
        """SHA-256 of the bytes (of the URL for a URL), in hex, as the ledger records it."""
        return self._native.sha256

    def record(self) -> dict[str, Any]:
        """What the ledger records of this part: ``kind``, ``source``, ``media_type``,
        ``bytes``, ``sha256`` (as in ``ledger.inputs``)."""
        return {
            "kind": self.kind,
            "source": self.source,
            "media_type": self.media_type,
            "bytes": self.size,
            "sha256": self.sha256,
        }

    def _key(self) -> tuple:
        return (self.kind, self.source, self.sha256, self._native.title)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Part):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        # Kind, type, size and a short hash: never the bytes, never a URL (it may be signed).
        if self.source == "url":
            shown = "url"
        else:
            shown = f"{self.media_type}, {self.size} bytes"
        return f"geode.{type(self).__name__}({shown}, sha256={self.sha256[:12]})"


class Image(Part):
    """An image for a prompt (PNG, JPEG, GIF, WebP), shown to the model before the prompt's
    text.

    >>> geode.Image("scan.png")                                  # doctest: +SKIP
    >>> geode.Image.from_bytes(png_bytes)                        # doctest: +SKIP
    >>> geode.Image.from_url("https://example.com/receipt.jpg")  # doctest: +SKIP

    ``Image(source)`` takes a path (``str`` or ``os.PathLike``), the bytes, or a URL: a string
    starting ``data:`` or holding ``://`` is a URL. Bytes that are not an image (a PDF, text)
    raise :class:`geode.InputError`."""

    __slots__ = ()
    _kind = "image"

    def __init__(self, source: Source) -> None:
        super().__init__(source)

    @classmethod
    def from_path(cls, path: Union[str, "os.PathLike[str]"]) -> Image:
        """The image file at ``path``, read now (at most 50 MiB)."""
        return cls._of(_native.Media.from_path(os.fspath(path), cls._kind))

    @classmethod
    def from_bytes(cls, data: Union[bytes, bytearray, memoryview]) -> Image:
        """An image from its bytes."""
        return cls._of(_native.Media.from_bytes(bytes(data), cls._kind))

    @classmethod
    def from_url(cls, url: str) -> Image:
        """A ``data:`` URL (decoded; its declared type is not trusted) or an ``https`` URL,
        which geode never fetches: it goes to a wire that takes image URLs, or the call is
        refused."""
        return cls._of(_native.Media.from_url(url, cls._kind))

    @classmethod
    def from_base64(cls, data: str) -> Image:
        """An image from its bytes in standard base64 (no ``data:`` prefix)."""
        return cls._of(_native.Media.from_url(_data_url(data), cls._kind))


class Document(Part):
    """A document for a prompt (PDF, UTF-8 text), read by the model before the prompt's text.

    >>> geode.Document("invoice.pdf")                                  # doctest: +SKIP
    >>> geode.Document.from_bytes(pdf_bytes, filename="invoice.pdf")   # doctest: +SKIP

    ``Document(source, filename=None)`` takes what :class:`Image` takes; ``filename`` is the
    name the model is shown (default: the file's name, or ``document.pdf`` / ``document.txt``).
    An image given as a document raises :class:`geode.InputError`."""

    __slots__ = ()
    _kind = "document"

    @property
    def filename(self) -> Optional[str]:
        """The name the model is shown, when there is one."""
        return self._native.title

    @classmethod
    def from_path(cls, path: Union[str, "os.PathLike[str]"], *, filename: Optional[str] = None) -> Document:
        """The document file at ``path``, read now (at most 50 MiB)."""
        return cls._of(_native.Media.from_path(os.fspath(path), cls._kind, filename))

    @classmethod
    def from_bytes(cls, data: Union[bytes, bytearray, memoryview], *, filename: Optional[str] = None) -> Document:
        """A document from its bytes."""
        return cls._of(_native.Media.from_bytes(bytes(data), cls._kind, filename))

    @classmethod
    def from_url(cls, url: str, *, filename: Optional[str] = None) -> Document:
        """A ``data:`` URL (decoded; its declared type is not trusted) or an ``https`` URL,
        which geode never fetches: it goes to a wire that takes document URLs, or the call is
        refused."""
        return cls._of(_native.Media.from_url(url, cls._kind, filename))

    @classmethod
    def from_base64(cls, data: str, *, filename: Optional[str] = None) -> Document:
        """A document from its bytes in standard base64 (no ``data:`` prefix)."""
        return cls._of(_native.Media.from_url(_data_url(data), cls._kind, filename))

    def __repr__(self) -> str:
        shown = super().__repr__()
        name = self.filename
        return shown if name is None else f"{shown[:-1]}, filename={name!r})"


def _data_url(data: str) -> str:
    """Bare base64 as a data URL whose declared type says nothing (the bytes say what they are)."""
    if not isinstance(data, str):
        raise TypeError(f"from_base64: expected a str, not {type(data).__name__}")
    return f"data:application/octet-stream;base64,{data.strip()}"
