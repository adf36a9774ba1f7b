"""geode: one structured-output contract across LLM providers, with an honest guarantee ledger.

>>> import geode
>>> client = geode.Client(adapter="local", require="enforced")   # doctest: +SKIP
>>> answer = client.extract(Decision, "Merge this PR? ...")      # doctest: +SKIP
>>> answer.value, answer.ledger.summary()                        # doctest: +SKIP
>>> client.extract(Invoice, "Extract the invoice", parts=[geode.Image("scan.png")])  # doctest: +SKIP
"""

from ._client import Client, Extraction
from ._errors import (
    ConfigError,
    Ended,
    Error,
    InputError,
    InputsNotTaken,
    InvalidAnswer,
    NotEnforceable,
    ProviderError,
    Refused,
    Truncated,
)
from ._ledger import Ledger, Usage
from ._media import Document, Image
from ._native import __version__
from ._stream import Event, Final, Item, Partial, Retry, Stream

__all__ = [
    "Client",
    "Extraction",
    "Image",
    "Document",
    "Ledger",
    "Usage",
    "Stream",
    "Event",
    "Partial",
    "Item",
    "Retry",
    "Final",
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
    "__version__",
]
