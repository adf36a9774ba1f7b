"""``python -m geode fetch-model``: puts the local model where ``Client("local")`` loads it
(``GEODE_LOCAL_MODEL``, else the cache), pinned by size and sha256; a no-op when it is there."""

from __future__ import annotations

import sys

from . import _model

_USAGE = "usage: python -m geode fetch-model"

if __name__ == "__main__":
    if sys.argv[1:] != ["fetch-model"]:
        print(_USAGE, file=sys.stderr)
        sys.exit(2)
    sys.exit(_model.main())
