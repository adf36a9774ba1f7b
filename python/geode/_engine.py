"""The local model's engine process. A ``Client("local")`` starts one per client with this
interpreter and :func:`main`, which serves the engine protocol on stdin/stdout until stdin
closes; nobody runs it by hand. The model is ``GEODE_LOCAL_MODEL`` when set, else the cache
file that ``python -m geode fetch-model`` writes."""

from __future__ import annotations

from . import _native


def main() -> int:
    """Serves engine calls until the client closes the pipe; the exit status."""
    return _native.serve_engine()
