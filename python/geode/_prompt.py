"""A call's prompt as the native module takes it: a string, or ``(role, text, parts)`` turns.

Read here: a string; a list of prompt pieces (``["Extract the invoice", geode.Image(...)]``, one
user turn); OpenAI-style messages, whose ``content`` is a string or a list of parts (text,
Chat Completions' ``image_url`` and ``file``, the Responses API's ``input_image`` and
``input_file``, or a :class:`geode.Image` / :class:`geode.Document` itself). Image and file
bytes are read and typed by the native module; a part of any other type is refused, never
dropped. The conversation itself (roles, which turn may hold images, the last turn) is checked
by the native module, as for the gateway's ``messages``.
"""

from __future__ import annotations

import collections.abc as abc
from typing import Any, Mapping, Optional, Sequence, Union

from . import _native
from ._errors import InputError
from ._media import Document, Image, Part

__all__ = ["Prompt", "Parts", "native_prompt", "native_parts"]

Piece = Union[str, Image, Document]

Prompt = Union[str, Sequence[Mapping[str, Any]], Sequence[Piece]]
"""A user message; a list of prompt pieces (strings, :class:`geode.Image`,
:class:`geode.Document`), one user turn whose images and documents the model sees before its
text; or a conversation: OpenAI-style messages (``{"role": ..., "content": ...}``, roles
``system``/``developer``/``user``/``assistant``, content a string or a list of parts) whose last
is the user's. Earlier turns travel as the conversation's history; system turns replace the
client's ``system``. Only user turns may hold images and documents."""

Parts = Union[Part, Sequence[Part], None]
"""Images and documents given apart from the prompt (``parts=``): shown with its last user turn."""

NativePrompt = Union[str, list]

_TEXT = ("text", "input_text", "output_text")


def native_prompt(prompt: Prompt) -> NativePrompt:
    """A string as it is; pieces and messages as ``(role, text, parts)`` turns."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (bytes, abc.Mapping, Part)) or not isinstance(prompt, abc.Sequence):
        raise TypeError(
            "prompt: expected a string, a list of messages or a list of strings and "
            f"geode.Image/geode.Document, not {type(prompt).__name__}"
        )
    items = list(prompt)
    # Pieces hold a part: a list of strings alone is more likely a mistake (several prompts)
    # than one prompt, and is refused rather than joined.
    if any(isinstance(p, Part) for p in items) and all(isinstance(p, (str, Part)) for p in items):
        return [_pieces(items)]
    turns = []
    for i, message in enumerate(items):
        if not isinstance(message, abc.Mapping) or not isinstance(message.get("role"), str):
            raise TypeError(
                f"prompt[{i}]: expected a message dict with a string 'role' "
                "(or a list of only strings and geode.Image/geode.Document)"
            )
        text, parts = _content(message.get("content"), i)
        turns.append((message["role"], text, parts))
    return turns


def native_parts(parts: Parts) -> Optional[list[_native.Media]]:
    """The ``parts=`` of a call, for the native module."""
    if parts is None:
        return None
    if isinstance(parts, Part):
        return [parts._native]
    if isinstance(parts, (str, bytes, abc.Mapping)) or not isinstance(parts, abc.Sequence):
        raise TypeError(f"parts: expected a list of geode.Image/geode.Document, not {type(parts).__name__}")
    out = []
    for i, part in enumerate(parts):
        if not isinstance(part, Part):
            raise TypeError(
                f"parts[{i}]: expected geode.Image or geode.Document, not {type(part).__name__} "
                "(geode.Image(path) reads a file)"
            )
        out.append(part._native)
    return out


def _pieces(items: list) -> tuple[str, str, list[_native.Media]]:
    """One user turn from strings and parts: the strings joined by new lines."""
    texts = [p for p in items if isinstance(p, str)]
    return ("user", "\n".join(texts), [p._native for p in items if isinstance(p, Part)])


def _content(content: Any, i: int) -> tuple[str, list[_native.Media]]:
    """A message's text (its text parts joined) and its images and documents."""
    if isinstance(content, str):
        return content, []
    if content is None:
        return "", []
    if not isinstance(content, abc.Sequence) or isinstance(content, (bytes, abc.Mapping)):
        raise TypeError(f"prompt[{i}].content: expected a string or a list of parts")
    texts: list[str] = []
    parts: list[_native.Media] = []
    for j, part in enumerate(content):
        where = f"prompt[{i}].content[{j}]"
        if isinstance(part, Part):
            parts.append(part._native)
            continue
        kind = part.get("type") if isinstance(part, abc.Mapping) else None
        if kind in _TEXT and isinstance(part.get("text"), str):
            texts.append(part["text"])
            continue
        if kind not in ("image_url", "input_image", "file", "input_file"):
            # The type only: a part's other fields may hold the content.
            shown = repr(kind) if isinstance(kind, str) else type(part).__name__
            raise TypeError(
                f"{where}: a {shown:.40} part is not sent (text, image_url, input_image, file, "
                "input_file parts and geode.Image/geode.Document are)"
            )
        try:
            parts.append(_media_part(part, kind, where)._native)
        except InputError as e:
            raise InputError(f"{where}: {e.message}") from None
    return "".join(texts), parts


def _media_part(part: Mapping[str, Any], kind: str, where: str) -> Part:
    """An image or file part, as Chat Completions and the Responses API spell them."""
    if kind in ("image_url", "input_image"):
        _no_file_id(part.get("file_id"))
        url = part.get("image_url")
        if isinstance(url, abc.Mapping):
            url = url.get("url")
        if not isinstance(url, str):
            raise TypeError(f"{where}: an {kind} part needs its image_url (a data: or https URL)")
        return Image.from_url(url)
    file = part.get("file") if kind == "file" else part
    if not isinstance(file, abc.Mapping):
        raise TypeError(f"{where}: a file part needs its file object")
    _no_file_id(file.get("file_id"))
    filename = file.get("filename")
    if filename is not None and not isinstance(filename, str):
        raise TypeError(f"{where}: filename must be a string")
    data, url = file.get("file_data"), file.get("file_url")
    if isinstance(data, str):
        if data.lstrip().startswith("data:"):
            return Document.from_url(data, filename=filename)
        return Document.from_base64(data, filename=filename)
    if isinstance(url, str) and kind == "input_file":
        return Document.from_url(url, filename=filename)
    raise TypeError(f"{where}: a {kind} part needs its file_data (a data: URL or base64)")


def _no_file_id(file_id: Any) -> None:
    if file_id is not None:
        raise InputError(
            "file ids are not taken (geode has no Files API): give the bytes as a data: URL, "
            "or a geode.Image/geode.Document"
        )
