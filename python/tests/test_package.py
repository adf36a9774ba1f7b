"""The package as installed: one abi3 wheel that the oldest supported CPython (3.9) imports, and
that needs nothing else at run time (pydantic only to ask for types)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import geode


def cpython_3_9() -> str:
    """A CPython 3.9 interpreter: pyenv's (not its shim, which refuses versions not selected),
    the system's, or one on PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(pyenv.glob("3.9.*/bin/python3.9")) + [Path("/usr/bin/python3.9")]
    for candidate in found:
        if candidate.is_file():
            return str(candidate)
    on_path = shutil.which("python3.9")
    if on_path is None or "shims" in on_path:
        pytest.fail("no CPython 3.9 found: the abi3 floor cannot be checked")
    return on_path


def test_cpython_3_9_runs_the_wheel_without_pydantic(fake, tmp_path):
    python39 = cpython_3_9()
    # Only the installed package on the path: no pydantic, no site-packages.
    only = tmp_path / "only"
    installed = Path(geode.__file__).parent
    shutil.copytree(installed, only / "geode")
    # The shared libraries the wheel carries (libgomp for the local engine), as pip installed them.
    libs = installed.parent / "geode.libs"
    if libs.is_dir():
        shutil.copytree(libs, only / "geode.libs")
    f, env = fake([{"json": {"n": 7}}, {"json": {"n": 8}}])
    script = textwrap.dedent(
        f"""
        import sys
        assert sys.version_info[:2] == (3, 9), sys.version
        import geode
        client = geode.Client("openai-payg", env={env!r})
        schema = {{"type": "object", "properties": {{"n": {{"type": "integer"}}}}, "required": ["n"]}}
        print(client.extract(schema, "n?").value["n"])
        try:
            import pydantic
            sys.exit("pydantic is importable")
        except ImportError:
            pass
        class Point:
            x: int
        try:
            client.extract(Point, "p")
        except geode.ConfigError as e:
            print("config:", e)
        """
    )
    out = subprocess.run(
        [python39, "-S", "-c", script],
        env={"PYTHONPATH": str(only), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "7"
    assert lines[1].startswith("config:") and "pydantic" in lines[1]


def test_the_package_carries_its_types():
    root = Path(geode.__file__).parent
    assert (root / "py.typed").is_file()
    assert (root / "_native.pyi").is_file()
    assert geode.__version__
