"""`local`: the embedded model (geode-engine, the GGUF model `make test` fetches), enforced by
constrained decoding, with no provider and no network."""

from __future__ import annotations

import asyncio
import gc
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
    # No provider key and no base URL: only the engine can answer.
    env = {"GEODE_ENGINE_BIN": binary("geode-engine")}
    return geode.Client("local", require="enforced", max_tokens=48, env=env)


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


def test_dropping_a_local_client_stops_its_engine():
    env = {"GEODE_ENGINE_BIN": binary("geode-engine")}
    before = set(children())
    client = geode.Client("local", max_tokens=8, env=env)
    assert client.choose(["a", "b"], "a or b?").value in ("a", "b")
    engines = set(children()) - before
    assert len(engines) == 1, "the engine runs as a child process"
    del client
    gc.collect()
    eventually(lambda: not (set(children()) & engines), what="the engine process ended")
