"""`local`: the embedded model, enforced by constrained decoding, with no provider and no network.
The engine is the one inside the wheel (this interpreter serving it), as a pip user gets it; one
test runs the `geode-engine` binary instead through `GEODE_ENGINE_BIN`."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

import geode
from conftest import binary, children, eventually


class Decision(BaseModel):
    """A merge decision."""

    verdict: Literal["merge", "hold"]
    reason: str


@pytest.fixture(scope="module")
def local():
    # No provider key, no base URL and no engine binary: only the wheel's own engine can answer.
    assert "GEODE_ENGINE_BIN" not in os.environ
    return geode.Client("local", require="enforced", max_tokens=48)


def test_a_model_is_enforced_on_the_local_engine(local):
    answer = local.extract(Decision, "The tests pass and the diff is small. Decide.")
    assert isinstance(answer.value, Decision)
    assert answer.ledger.adapter == "local"
    assert answer.ledger.wire_mode == "constrained"
    assert "(enforced)" in answer.ledger.summary()
    assert answer.ledger.usage.output_tokens > 0


def test_local_streams_enforced_partials_and_a_final_value(local):
    events = list(local.stream(Decision, "The build is red. Decide."))
    assert isinstance(events[-1], geode.Final) and isinstance(events[-1].value, Decision)
    partials = [e for e in events if isinstance(e, geode.Partial)]
    assert partials and all(p.guarantee == "enforced" for p in partials)


def test_local_choice_async(local):
    answer = asyncio.run(local.achoose(["yes", "no"], "Is water wet?"))
    assert answer.value in ("yes", "no")
    assert answer.ledger.wire_mode == "constrained"


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def test_the_engine_is_this_interpreter_serving_the_wheel_and_ends_with_its_client(tmp_path):
    # From a folder holding a `geode/` that is not the package: the engine still loads the wheel.
    (tmp_path / "geode").mkdir()
    (tmp_path / "geode" / "__init__.py").write_text("raise ImportError('the wrong geode')\n")
    before = set(children())
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        client = geode.Client("local", max_tokens=8)
        assert client.choose(["a", "b"], "a or b?").value in ("a", "b")
    finally:
        os.chdir(cwd)
    engines = set(children()) - before
    assert len(engines) == 1, "the engine runs as a child process"
    (engine,) = engines
    argv = _cmdline(engine)
    assert os.path.realpath(argv[0]) == os.path.realpath(sys.executable), argv
    assert "geode._engine" in argv[2], argv
    del client
    gc.collect()
    eventually(lambda: engine not in children(), what="the engine process ended")


def test_geode_engine_bin_runs_that_binary_instead():
    engine_bin = binary("geode-engine")
    before = set(children())
    client = geode.Client("local", max_tokens=8, env={"GEODE_ENGINE_BIN": engine_bin})
    assert client.choose(["a", "b"], "a or b?").value in ("a", "b")
    (engine,) = set(children()) - before
    assert _cmdline(engine)[0] == engine_bin


def test_a_missing_model_names_the_command_that_fetches_it(tmp_path):
    # The client's own GEODE_LOCAL_MODEL reaches the engine's environment.
    missing = tmp_path / "nowhere.gguf"
    client = geode.Client("local", env={"GEODE_LOCAL_MODEL": str(missing)})
    with pytest.raises(geode.ConfigError) as raised:
        client.choose(["a", "b"], "a or b?")
    assert str(missing) in str(raised.value)
    assert "python -m geode fetch-model" in str(raised.value)
