"""``python -m geode fetch-model``: puts the local model where ``Client("local")`` loads it
(``GEODE_LOCAL_MODEL``, else the cache), pinned by size and sha256; a no-op when it is there.

``python -m geode trust-config [PATH]``: trusts a project's ``geode.toml`` (default: the working
directory's) as it is now, so that it may send credentials to the hosts it names; a changed file
asks again (the same list as ``geode config trust``)."""

from __future__ import annotations

import sys

from . import _model

_USAGE = "usage: python -m geode fetch-model | trust-config [PATH]"


def _trust(args: list) -> int:
    from . import ConfigError, _native

    path = args[0] if args else "geode.toml"
    try:
        kept_in = _native.trust_config(path)
    except ConfigError as e:
        print(f"geode: {e}", file=sys.stderr)
        return 2
    print(f"trusted {path} as it is now (in {kept_in})")
    return 0


if __name__ == "__main__":
    command, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command == "fetch-model" and not args:
        sys.exit(_model.main())
    if command == "trust-config" and len(args) <= 1:
        sys.exit(_trust(args))
    print(_USAGE, file=sys.stderr)
    sys.exit(2)
