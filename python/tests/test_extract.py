"""`Client.extract` and `aextract` against the fake OpenAI Responses server: every target kind,
the value typed, the ledger, the retry with feedback, and the text constraints."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from typing import List, Optional

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

import geode


class Decision(BaseModel):
    """Whether to merge, and why."""

    accept: bool
    reason: str
    lines: Optional[List[int]] = None


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


def sent_schema(request: dict) -> dict:
    return request["body"]["text"]["format"]["schema"]


def test_a_pydantic_model_comes_back_as_an_instance_with_its_ledger(fake):
    f, env = fake([{"json": {"accept": True, "reason": "tests pass", "lines": None}}])
    client = geode.Client("openai-payg", env=env)
    answer = client.extract(Decision, "Merge?")
    assert answer.value == Decision(accept=True, reason="tests pass", lines=None)
    ledger = answer.ledger
    assert ledger.adapter == "openai-payg"
    assert ledger.wire_mode == "strict"
    assert "wire_mode=strict (enforced)" in ledger.summary()
    # The optional field is sent required and nullable, and the ledger names the rewrite.
    assert any(t["pointer"] == "/properties/lines" for t in ledger.transforms)
    schema = sent_schema(f.model_requests()[0])
    assert set(schema["required"]) == {"accept", "reason", "lines"}
    assert schema["additionalProperties"] is False
    whole = ledger.to_dict()
    assert whole["adapter"] == "openai-payg" and len(whole["attempts"]) == 1
    assert ledger.usage.output_tokens > 0


@pytest.mark.parametrize(
    "target, reply, expected",
    [
        (Point, {"x": 1, "y": 2}, Point(1, 2)),
        (Movie, {"title": "Alien", "year": 1979}, {"title": "Alien", "year": 1979}),
        (List[Point], {"value": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]}, [Point(1, 2), Point(3, 4)]),
        (
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            {"n": 7},
            {"n": 7},
        ),
    ],
    ids=["dataclass", "typeddict", "list-root", "dict-schema"],
)
def test_every_target_kind(fake, target, reply, expected):
    f, env = fake([{"json": reply}])
    answer = geode.Client("openai-payg", env=env).extract(target, "go")
    assert answer.value == expected
    if target is List[Point]:
        # A list root is wrapped on the wire (answers must be objects) and unwrapped here.
        assert sent_schema(f.model_requests()[0])["properties"]["value"]["type"] == "array"
        assert any("wrapped" in t["action"] for t in answer.ledger.transforms)


def test_a_dict_schema_is_sent_as_written(fake):
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["tags"],
        "additionalProperties": False,
    }
    f, env = fake([{"json": {"tags": ["a", "b"]}}])
    answer = geode.Client("openai-payg", env=env).extract(schema, "tags?")
    assert answer.value == {"tags": ["a", "b"]}
    assert answer.ledger.transforms == []
    assert sent_schema(f.model_requests()[0])["properties"] == schema["properties"]


def test_an_invalid_first_answer_is_retried_with_the_validator_feedback(fake):
    f, env = fake(
        [
            {"json": {"accept": "yes", "reason": "ok", "lines": None}},
            {"json": {"accept": True, "reason": "ok", "lines": [3]}},
        ]
    )
    answer = geode.Client("openai-payg", env=env).extract(Decision, "Merge?")
    assert answer.value.lines == [3]
    assert len(answer.ledger.attempts) == 2
    second = json.dumps(f.model_requests()[1]["body"])
    assert "accept" in second and "boolean" in second


def test_aextract_runs_on_the_event_loop(fake):
    f, env = fake([{"json": {"accept": False, "reason": "red CI", "lines": [1, 2]}}])
    client = geode.Client("openai-payg", env=env)
    answer = asyncio.run(client.aextract(Decision, "Merge?"))
    assert answer.value == Decision(accept=False, reason="red CI", lines=[1, 2])
    assert answer.ledger.adapter == "openai-payg"


def test_text_constraints_sync_and_async(fake):
    f, env = fake([{"text": "reject"}, {"text": "AB-12"}, {"text": "yes"}, {"text": "accept"}])
    client = geode.Client("openai-payg", env=env)
    assert client.choose(["accept", "reject"], "?").value == "reject"
    assert client.matches(r"[A-Z]{2}-[0-9]+", "?").value == "AB-12"
    g = client.grammar('start: "yes" | "no"\n', "?")
    assert g.value == "yes"
    assert any("grammar: unchecked" in r for r in g.ledger.residuals)
    assert asyncio.run(client.achoose(["accept", "reject"], "?")).value == "accept"


def test_the_same_schema_is_prepared_once_per_type(fake):
    f, env = fake({"steps": [], "default": {"json": {"x": 5, "y": 6}}})
    client = geode.Client("openai-payg", env=env)
    from geode import _shapes

    first = _shapes.shape_of(Point)
    for _ in range(3):
        assert client.extract(Point, "p").value == Point(5, 6)
    assert _shapes.shape_of(Point) is first


def test_from_env_reads_geode_toml_and_the_environment_as_the_cli_does(fake, monkeypatch, tmp_path):
    f, env = fake([{"json": {"x": 1, "y": 1}}])
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    (tmp_path / "geode.toml").write_text('default_adapter = "openai-payg"\n[adapters.openai-payg]\nmodel = "gpt-from-toml"\n')
    monkeypatch.chdir(tmp_path)
    client = geode.Client.from_env()
    answer = client.extract(Point, "p")
    assert answer.value == Point(1, 1)
    assert answer.ledger.adapter == "openai-payg"
    assert f.model_requests()[0]["body"]["model"] == "gpt-from-toml"


def test_a_project_file_sending_a_key_elsewhere_needs_trust_as_it_is(monkeypatch, tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DO-NOT-LEAK-4242")
    # 192.0.2.1 is never routed, and no call is made: only the configuration is read.
    (project / "geode.toml").write_text('[adapters.openai-payg]\nbase_url = "https://192.0.2.1/v1"\n')
    monkeypatch.chdir(project)
    with pytest.raises(geode.ConfigError, match="python -m geode trust-config") as refused:
        geode.Client.from_env()
    assert "[adapters.openai-payg] base_url" in str(refused.value)
    assert "DO-NOT-LEAK" not in str(refused.value)
    trust = [sys.executable, "-m", "geode", "trust-config"]
    done = subprocess.run(trust, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (home / ".config" / "geode" / "trusted-configs").is_file()
    assert repr(geode.Client.from_env()).startswith("geode.Client(")
    (project / "geode.toml").write_text('[adapters.openai-payg]\nbase_url = "https://192.0.2.2/v1"\n')
    with pytest.raises(geode.ConfigError, match="trust"):
        geode.Client.from_env()


def test_repair_is_off_unless_asked_and_declared_when_on(fake):
    sloppy = {"text": "{'accept': True, 'reason': 'ok', 'lines': None,}"}
    f, env = fake([sloppy])
    answer = geode.Client("openai-payg", env=env, repair=True).extract(Decision, "Merge?")
    assert answer.value == Decision(accept=True, reason="ok", lines=None)
    kinds = {r["kind"] for r in answer.ledger.repairs}
    assert {"single_quotes", "python_literals", "trailing_commas"} <= kinds
    assert "repaired=" in answer.ledger.summary()
    assert len(f.model_requests()) == 1
    # Off (the default): the same answer is retried, then invalid.
    f, env = fake([sloppy, sloppy])
    with pytest.raises(geode.InvalidAnswer):
        geode.Client("openai-payg", env=env).extract(Decision, "Merge?")
    # Never under require="enforced".
    f, env = fake([sloppy, sloppy])
    with pytest.raises(geode.InvalidAnswer):
        geode.Client("openai-payg", env=env, repair=True, require="enforced").extract(Decision, "Merge?")


def test_a_cached_answer_is_replayed_with_no_request_and_says_so(fake, tmp_path):
    f, env = fake({"steps": [], "default": {"json": {"x": 4, "y": 2}}})
    client = geode.Client("openai-payg", env=env, cache=tmp_path / "cache", cache_ttl=3600)
    first = client.extract(Point, "where?")
    again = client.extract(Point, "where?")
    assert first.value == again.value == Point(4, 2)
    assert len(f.model_requests()) == 1
    assert again.ledger.replayed and not first.ledger.replayed
    assert again.ledger.cached_at
    assert again.ledger.usage.output_tokens == 0
    assert again.ledger.original_usage == first.ledger.usage
    # A stronger require is not answered by an entry made under a weaker one.
    strict = geode.Client("openai-payg", env=env, cache=tmp_path / "cache", require="enforced")
    assert not strict.extract(Point, "where?").ledger.replayed
    assert len(f.model_requests()) == 2
    with pytest.raises(geode.ConfigError, match="ttl|TTL"):
        geode.Client("openai-payg", env=env, cache=tmp_path / "cache", cache_ttl="soon")


CONVERSATION = [
    {"role": "system", "content": "You review pull requests."},
    {"role": "user", "content": "PR 12 adds a test."},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Noted: PR 12."}]},
    {"role": "user", "content": [{"type": "text", "text": "Merge "}, {"type": "text", "text": "it?"}]},
]


def test_a_conversation_travels_as_history_system_and_prompt(fake):
    f, env = fake([{"json": {"accept": True, "reason": "ok", "lines": None}}, {"text": "accept"}])
    client = geode.Client("openai-payg", env=env, system="the client's own")
    assert client.extract(Decision, CONVERSATION).value.accept is True
    body = f.model_requests()[0]["body"]
    assert "You review pull requests." in json.dumps(body)
    assert "the client's own" not in json.dumps(body), "the conversation's system turn replaces it"
    sent = json.dumps(body["input"])
    at = [sent.index(t) for t in ("PR 12 adds a test.", "Noted: PR 12.", "Merge it?")]
    assert at == sorted(at), sent
    assert client.choose(["accept", "reject"], CONVERSATION[1:]).value == "accept"


def test_a_conversation_that_cannot_be_answered_is_refused_before_any_request(fake):
    f, env = fake([])
    client = geode.Client("openai-payg", env=env)
    with pytest.raises(geode.ConfigError, match="last turn must be the user's"):
        client.extract(Decision, CONVERSATION[:3])
    with pytest.raises(geode.ConfigError, match="unknown role"):
        client.extract(Decision, [{"role": "robot", "content": "hi"}])
    with pytest.raises(TypeError, match="'input_audio' part is not sent"):
        client.extract(Decision, [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}])
    with pytest.raises(geode.InputError, match="not a URL"):
        client.extract(Decision, [{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}])
    with pytest.raises(TypeError, match="list of messages"):
        client.extract(Decision, {"role": "user", "content": "hi"})
    with pytest.raises(TypeError, match="string 'role'"):
        client.extract(Decision, ["hi"])
    assert f.model_requests() == []


def test_with_options_changes_the_calls_it_makes_and_leaves_the_client_as_it_was(fake):
    answer = {"json": {"accept": True, "reason": "ok", "lines": None}}
    f, env = fake([answer, answer], adapter="glm-payg")
    client = geode.Client("glm-payg", env=env, model="glm-4.6", max_tokens=100)
    call = client.with_options(model="glm-4.5-air", max_tokens=77, temperature=0.0, system="Be brief.")
    assert call.extract(Decision, "Merge?").value.accept is True
    assert client.extract(Decision, "Merge?").value.accept is True
    first, second = (r["body"] for r in f.model_requests())
    assert (first["model"], first["max_tokens"], first["temperature"]) == ("glm-4.5-air", 77, 0.0)
    assert "Be brief." in json.dumps(first["messages"])
    assert (second["model"], second["max_tokens"]) == ("glm-4.6", 100)
    assert "temperature" not in second and "Be brief." not in json.dumps(second)
    assert repr(call) == "geode.Client(adapter='glm-payg', model='glm-4.5-air', require=None)"
    assert repr(client) == "geode.Client(adapter='glm-payg', model='glm-4.6', require=None)"
    # A stronger guarantee for one call is refused before any request; bad settings at once.
    with pytest.raises(geode.NotEnforceable):
        client.with_options(require="enforced").extract(Decision, "Merge?")
    assert len(f.model_requests()) == 2
    with pytest.raises(geode.ConfigError, match="temperature"):
        client.with_options(temperature=-1.0)
    with pytest.raises(geode.ConfigError, match="require"):
        client.with_options(require="surely")
    with pytest.raises(geode.ConfigError, match="timeout"):
        client.with_options(timeout=0)


def test_a_temperature_goes_on_the_wire_and_a_bad_one_is_refused(fake):
    f, env = fake([{"json": {"accept": True, "reason": "ok", "lines": None}}], adapter="glm-payg")
    client = geode.Client("glm-payg", env=env, temperature=0.0)
    assert client.extract(Decision, "Merge?").value.accept is True
    assert f.model_requests()[0]["body"]["temperature"] == 0.0
    with pytest.raises(geode.ConfigError, match="temperature"):
        geode.Client("glm-payg", env=env, temperature=-1.0)


def test_a_cache_location_that_cannot_be_used_is_refused_without_its_password(fake, tmp_path):
    _, env = fake({"steps": [], "default": {"json": {"x": 4, "y": 2}}})
    for bad in ["rediss://:hunter2secret@127.0.0.1:1/x", "unix://:hunter2secret@/tmp/r.sock"]:
        with pytest.raises(geode.ConfigError) as refused:
            geode.Client("openai-payg", env=env, cache=bad)
        assert "hunter2secret" not in str(refused.value)
        assert "cache" in str(refused.value)
