"""The guarantee ledger of a call: which adapter served it, the images and documents it sent,
how the schema went on the wire, what was rewritten, every attempt and the retry decision."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Optional

__all__ = ["Ledger", "Usage"]


class Usage(NamedTuple):
    """Tokens spent, summed over attempts; ``cost_usd`` when the provider reports it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: Optional[float] = None


class Ledger:
    """The ledger of one call. Read from JSON on first use: a call that never looks at its
    ledger does not pay for it."""

    __slots__ = ("_json", "_summary", "_dict")

    def __init__(self, ledger_json: str, summary: str) -> None:
        self._json = ledger_json
        self._summary = summary
        self._dict: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        """The whole ledger, as ``geode run --ledger`` prints it (a fresh copy)."""
        return json.loads(self._json)

    def to_json(self) -> str:
        """The whole ledger as JSON text."""
        return self._json

    def summary(self) -> str:
        """The ledger in two lines: adapter, model, wire mode and its level, rewrites; the
        worker's check, validation, attempts and the retry."""
        return self._summary

    def _get(self, key: str, default: Any = None) -> Any:
        if self._dict is None:
            self._dict = json.loads(self._json)
        return self._dict.get(key, default)

    @property
    def adapter(self) -> str:
        """The adapter that served the call."""
        return self._get("adapter", "")

    @property
    def model(self) -> str:
        """The model asked for."""
        return self._get("model", "")

    @property
    def inputs(self) -> list[dict[str, Any]]:
        """Every image and document the call sent, in order: ``{"kind", "source",
        "media_type", "bytes", "sha256"}`` (``kind`` ``image`` or ``document``, ``source``
        ``inline`` or ``url``; ``media_type`` and ``bytes`` are ``None`` for a URL). Never the
        content: compare ``sha256`` with ``hashlib.sha256(data).hexdigest()``."""
        return [
            {
                "kind": r.get("kind"),
                "source": r.get("source"),
                "media_type": r.get("media_type"),
                "bytes": r.get("bytes"),
                "sha256": r.get("sha256"),
            }
            for r in self._get("inputs", [])
        ]

    @property
    def wire_mode(self) -> str:
        """How the schema went on the wire (``strict``, ``constrained``, ``json-mode``...)."""
        return self._get("wire_mode", "")

    @property
    def transforms(self) -> list[dict[str, str]]:
        """Each rewrite of the schema on its way: ``{"pointer", "action"}``."""
        return list(self._get("transforms", []))

    @property
    def residuals(self) -> list[str]:
        """What the wire could not hold and is checked after the answer instead."""
        return list(self._get("residuals", []))

    @property
    def attempts(self) -> list[dict[str, Any]]:
        """Every attempt: its termination, stop reason, usage, elapsed time, check, error."""
        return list(self._get("attempts", []))

    @property
    def retry(self) -> Any:
        """Whether the one retry with feedback ran, and why."""
        return self._get("retry")

    @property
    def repairs(self) -> list[dict[str, str]]:
        """Each repair of the answer (``Client(repair=True)``): ``{"kind", "instance_path"}``."""
        return list(self._get("repairs", []))

    @property
    def replayed(self) -> bool:
        """Whether the answer was replayed from the response cache (no request was made)."""
        return bool(self._get("replayed", False))

    @property
    def cached_at(self) -> Optional[str]:
        """When a replayed answer was made (RFC 3339, UTC)."""
        return self._get("cached_at")

    @property
    def usage(self) -> Usage:
        """Tokens spent by every attempt (zero for a replayed answer: see ``original_usage``)."""
        totals = [0, 0, 0]
        cost: Optional[float] = None
        for attempt in self.attempts:
            u = attempt.get("usage") or {}
            totals[0] += u.get("input_tokens", 0)
            totals[1] += u.get("output_tokens", 0)
            totals[2] += u.get("cached_input_tokens", 0)
            if u.get("cost_usd") is not None:
                cost = (cost or 0.0) + u["cost_usd"]
        return Usage(totals[0], totals[1], totals[2], cost)

    @property
    def original_usage(self) -> Optional[Usage]:
        """What the original run of a replayed answer spent."""
        u = self._get("original_usage")
        if u is None:
            return None
        return Usage(
            u.get("input_tokens", 0),
            u.get("output_tokens", 0),
            u.get("cached_input_tokens", 0),
            u.get("cost_usd"),
        )

    def __repr__(self) -> str:
        return f"Ledger({self._summary.splitlines()[0] if self._summary else ''!r})"

    def __str__(self) -> str:
        return self._summary
