"""Fixtures: geode's fake providers (crates/geode-fakes) on 127.0.0.1, and what a test needs to
see that nothing leaks (sockets, child processes, temp files). Built binaries are found under
the workspace's target/debug (`make test` builds them first); a missing one fails the test."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("GEODE_TARGET_DIR", ROOT / "target" / "debug"))
KEY = "sk-test-DO-NOT-LEAK-4242"


def binary(name: str) -> str:
    path = TARGET / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make test` (it builds the workspace first)")
    return str(path)


SYNC = "/__geode_test_sync/"


def _is_model_call(request: dict) -> bool:
    return request.get("path", "").endswith(("/responses", "/completions", "/messages"))


class Fake:
    """One `geode-fakes serve` process: its base URL and the requests it has logged."""

    def __init__(self, kind: str, script: Any, tmp: Path) -> None:
        args = [binary("geode-fakes"), "serve", "--kind", kind]
        if script is not None:
            path = tmp / f"script-{kind}-{time.monotonic_ns()}.json"
            path.write_text(json.dumps(script))
            args += ["--script", str(path)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        assert self.base_url.startswith("http://127.0.0.1:"), self.base_url
        self.port = int(self.base_url.rsplit(":", 1)[1].split("/")[0])
        self._requests: list[dict] = []
        self._lock = threading.Lock()
        self._markers = itertools.count()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self._requests.append(json.loads(line))

    def _logged(self) -> list[dict]:
        with self._lock:
            return [r for r in self._requests if not r.get("path", "").startswith(SYNC)]

    def _sync(self) -> None:
        """The fake logs each request on its own schedule, maybe after answering it: a marker
        request is sent and its line awaited, so every request made before is in the log."""
        marker = f"{SYNC}{next(self._markers)}"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}{marker}", timeout=10).close()
        except urllib.error.HTTPError:
            pass
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with self._lock:
                if any(r.get("path") == marker for r in self._requests):
                    return
            time.sleep(0.005)
        pytest.fail(f"the fake never logged {marker}")

    def requests(self) -> list[dict]:
        """Every request made to the fake so far."""
        self._sync()
        return self._logged()

    def model_requests(self) -> list[dict]:
        return [r for r in self.requests() if _is_model_call(r)]

    def wait_requests(self, n: int, timeout: float = 20.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = [r for r in self._logged() if _is_model_call(r)]
            if len(got) >= n:
                return got
            time.sleep(0.01)
        pytest.fail(f"the fake saw {len(self.model_requests())} model requests, expected {n}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


ENV_OF = {
    "openai-payg": ("responses", "GEODE_OPENAI_BASE_URL", "OPENAI_API_KEY"),
    "glm-payg": ("chat", "GEODE_GLM_BASE_URL", "ZAI_API_KEY"),
    "anthropic-payg": ("messages", "GEODE_ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
}


@pytest.fixture
def fake(tmp_path: Path):
    """`fake(script, adapter="openai-payg")` → (Fake, env for geode.Client)."""
    started: list[Fake] = []

    def start(script: Any = None, adapter: str = "openai-payg") -> tuple[Fake, dict[str, str]]:
        kind, url_var, key_var = ENV_OF[adapter]
        f = Fake(kind, script, tmp_path)
        started.append(f)
        base = f.base_url + ("/api/paas/v4" if adapter == "glm-payg" else "")
        # The cache's seal key is made under this test's config directory, not the user's.
        return f, {url_var: base, key_var: KEY, "XDG_CONFIG_HOME": str(tmp_path / "config")}

    yield start
    for f in started:
        f.stop()


def sockets_to(port: int) -> int:
    """This process's open TCP sockets whose remote end is 127.0.0.1:port (any state but closed)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            remote_port = int(cols[2].rsplit(":", 1)[1], 16)
            if remote_port == port and cols[9] in inodes and cols[3] != "07":
                count += 1
    return count


def children() -> list[int]:
    """The pids of this process's live (not zombie) children."""
    me = os.getpid()
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            kids.append(int(entry))
    return kids


def eventually(check, timeout: float = 10.0, what: str = "") -> None:
    """Waits until `check()` is true (a guard against hangs, not a speed assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    pytest.fail(f"never became true: {what or check}")

