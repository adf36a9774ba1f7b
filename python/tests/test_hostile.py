"""Bad input from Python gets a clear, typed error and nothing is sent: wrong argument types,
targets that are not types, hostile schemas, prompts that are not text."""

from __future__ import annotations

import pytest

import geode


def test_bad_arguments_are_refused_before_any_call(fake):
    f, env = fake([{"json": {"n": 1}}])
    client = geode.Client("openai-payg", env=env)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    with pytest.raises(TypeError):
        client.extract(schema, 42)  # type: ignore[arg-type]
    with pytest.raises(geode.ConfigError, match="JSON Schema"):
        client.extract(42, "p")
    with pytest.raises(geode.ConfigError):
        client.extract({"$ref": "#/nowhere"}, "p")
    with pytest.raises(geode.ConfigError):
        client.extract({"type": "object", "properties": {"a": {"pattern": "(unclosed"}}}, "p")
    with pytest.raises(geode.ConfigError):
        client.extract({"a": float("nan")}, "p")
    with pytest.raises(TypeError):
        geode.Client("openai-payg", timeout="soon", env=env)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        geode.Client("openai-payg", env={"OPENAI_API_KEY": 1})  # type: ignore[dict-item]
    # One call's settings are held to the same rules, and show no key.
    with pytest.raises(TypeError):
        client.with_options(model=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.with_options("gpt-5")  # type: ignore[misc]
    with pytest.raises(OverflowError):
        client.with_options(max_tokens=-1)
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(geode.ConfigError):
            client.with_options(timeout=bad)
        with pytest.raises(geode.ConfigError):
            client.with_options(temperature=bad)
    derived = client.with_options(model="m", system="s")
    assert env["OPENAI_API_KEY"] not in repr(derived)
    assert f.model_requests() == []


def test_a_deeply_nested_schema_is_an_error_not_a_crash(fake):
    f, env = fake([{"json": {}}])
    deep: dict = {"type": "object"}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises((geode.ConfigError, RecursionError)):
        geode.Client("openai-payg", env=env).extract(deep, "p")
    assert f.model_requests() == []


def test_a_huge_answer_is_refused_typed(fake):
    f, env = fake({"steps": [], "default": "endless"})
    client = geode.Client("openai-payg", env=env, timeout=60)
    with pytest.raises(geode.ProviderError) as e:
        client.extract({"type": "object"}, "p")
    assert e.value.kind in ("response_too_large", "timeout")


def test_a_timeout_may_be_a_timedelta(fake):
    from datetime import timedelta

    f, env = fake({"steps": [], "default": "hang"})
    client = geode.Client("openai-payg", env=env, timeout=timedelta(milliseconds=300))
    with pytest.raises(geode.ProviderError) as e:
        client.extract({"type": "object"}, "p")
    assert e.value.kind == "timeout"
