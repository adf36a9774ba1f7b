"""Why a call gave no value: one base class, one subclass per kind, each with the ledger."""

from __future__ import annotations

import json
from typing import Any, Optional

from ._ledger import Ledger, Usage

__all__ = [
    "Error",
    "ConfigError",
    "InputError",
    "InputsNotTaken",
    "NotEnforceable",
    "ProviderError",
    "InvalidAnswer",
    "Refused",
    "Truncated",
    "Ended",
]


class Error(Exception):
    """Base of every geode error. ``ledger`` says what happened (which adapter, every attempt,
    the retry decision); ``usage`` is what the failed call spent. Messages never hold a secret."""

    def __init__(self, message: str, ledger: Optional[Ledger] = None) -> None:
        super().__init__(message)
        self.message = message
        self.ledger = ledger if ledger is not None else Ledger("{}", "")

    @property
    def usage(self) -> Usage:
        """Tokens (and cost, where reported) spent by every attempt of the failed call."""
        return self.ledger.usage


class ConfigError(Error):
    """The call could not run here: a bad argument, configuration or schema, an unknown or
    unconfigured adapter. Nothing was sent."""


class InputError(ConfigError):
    """An image or document that cannot be used: a file that cannot be read, bytes of no type
    geode sends, bytes that are not the kind they were given as (a PDF as a
    :class:`geode.Image`), a URL that is not ``https``. Raised when the part is made, or when a
    message's part is read; nothing was sent. The message names the file or the size, never
    the content."""


class InputsNotTaken(InputError):
    """The route cannot take this call's images or documents (a text-only model such as
    ``local``, a format or size over its limits): refused before any request, nothing dropped
    to answer from the text alone. The message names the route and why."""


class NotEnforceable(Error):
    """``require`` cannot be met on this route: refused before any token was spent."""


class ProviderError(Error):
    """The provider or transport failed. ``kind`` is one of ``auth``, ``rate_limited``,
    ``schema_rejected``, ``bad_request``, ``server``, ``transport``, ``truncated``,
    ``protocol``, ``run_failed``, ``response_too_large``, ``timeout``, ``cancelled``..."""

    def __init__(self, message: str, ledger: Optional[Ledger] = None, kind: str = "") -> None:
        super().__init__(message, ledger)
        self.kind = kind


class InvalidAnswer(Error):
    """The answer still failed its check after the one retry with feedback. ``errors`` lists
    each validation error (``instance_path``, ``keyword``, ``message``...)."""

    def __init__(
        self, message: str, ledger: Optional[Ledger] = None, errors: Optional[list] = None
    ) -> None:
        super().__init__(message, ledger)
        self.errors: list[dict[str, Any]] = list(errors or [])


class Refused(Error):
    """The model refused to answer."""


class Truncated(Error):
    """The answer was cut at the output token limit; geode never passes it off as a value."""


class Ended(Error):
    """The call ended without an answer for a reason that is neither the answer's fault nor the
    provider's (cancelled, no text came back)."""


_KINDS = {
    "config": ConfigError,
    "input": InputError,
    "inputs_not_taken": InputsNotTaken,
    "not_enforceable": NotEnforceable,
    "invalid": InvalidAnswer,
    "refused": Refused,
    "truncated": Truncated,
    "ended": Ended,
}


def _from_native(
    kind: str,
    message: str,
    ledger_json: str,
    summary: str,
    errors_json: str,
    provider_kind: Optional[str],
) -> Error:
    """The exception the native module raises for a failed call (called from Rust)."""
    ledger = Ledger(ledger_json, summary)
    if kind == "provider":
        return ProviderError(message, ledger, provider_kind or "")
    if kind == "invalid":
        return InvalidAnswer(message, ledger, json.loads(errors_json))
    return _KINDS.get(kind, Error)(message, ledger)
