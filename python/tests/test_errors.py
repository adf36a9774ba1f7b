"""Every failure is one typed exception under `geode.Error`, carrying the ledger and the usage,
and no secret appears in a message, a `repr` or the ledger."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, field_validator

import geode
from conftest import KEY


class Decision(BaseModel):
    accept: bool
    reason: str


VALID = {"json": {"accept": True, "reason": "ok"}}


def no_secret(e: BaseException) -> None:
    for text in (str(e), repr(e), e.ledger.to_json(), e.ledger.summary()):
        assert KEY not in text, text


def test_require_unmet_is_refused_before_any_token(fake):
    f, env = fake([VALID], adapter="glm-payg")
    client = geode.Client("glm-payg", require="enforced", env=env)
    with pytest.raises(geode.NotEnforceable) as e:
        client.extract(Decision, "?")
    assert "best-effort" in str(e.value) and "enforced" in str(e.value)
    assert e.value.ledger.adapter == "glm-payg"
    assert e.value.usage == geode.Usage()
    assert f.model_requests() == []
    no_secret(e.value)


def test_an_answer_still_invalid_after_the_retry_names_the_validation_errors(fake):
    bad = {"json": {"accept": "maybe", "reason": "?"}}
    f, env = fake([bad, bad])
    with pytest.raises(geode.InvalidAnswer) as e:
        geode.Client("openai-payg", env=env).extract(Decision, "?")
    errors = e.value.errors
    assert errors and errors[0]["instance_path"] == "/accept"
    assert len(e.value.ledger.attempts) == 2
    assert e.value.usage.output_tokens > 0
    no_secret(e.value)


@pytest.mark.parametrize(
    "status, kind",
    [(401, "auth"), (429, "rate_limited"), (400, "bad_request"), (500, "server")],
)
def test_provider_failures_carry_their_kind(fake, status, kind):
    reply = {"status": {"status": status, "body": {"error": {"message": f"no, {KEY}"}}}}
    f, env = fake({"steps": [], "default": reply})
    client = geode.Client("openai-payg", env=env, timeout=30)
    with pytest.raises(geode.ProviderError) as e:
        client.extract(Decision, "?")
    assert e.value.kind == kind
    assert e.value.ledger.attempts, "the failed attempt is in the ledger"
    no_secret(e.value)


def test_a_refusal_and_a_cut_answer_have_their_own_exceptions(fake):
    f, env = fake([{"refusal": "I will not"}])
    with pytest.raises(geode.Refused) as refused:
        geode.Client("openai-payg", env=env).extract(Decision, "?")
    no_secret(refused.value)
    f, env = fake([{"max_tokens": '{"accept": tr'}])
    with pytest.raises(geode.Truncated) as cut:
        geode.Client("openai-payg", env=env).extract(Decision, "?")
    assert cut.value.ledger.attempts[0]["stop_reason"] == "max_tokens"
    no_secret(cut.value)


def test_configuration_errors_are_raised_before_any_call(fake):
    f, env = fake([VALID])
    with pytest.raises(geode.ConfigError, match="require"):
        geode.Client("openai-payg", require="strictest", env=env)
    with pytest.raises(geode.ConfigError, match="timeout"):
        geode.Client("openai-payg", timeout=-1, env=env)
    with pytest.raises(geode.ConfigError, match="unknown adapter"):
        geode.Client("no-such-adapter", env=env).extract(Decision, "?")
    client = geode.Client("openai-payg", env=env)
    with pytest.raises(geode.ConfigError, match="schema"):
        client.extract({"type": 12}, "?")
    with pytest.raises(geode.ConfigError):
        client.extract({"a": {1, 2}}, "?")  # not JSON data
    with pytest.raises(geode.ConfigError, match="regex|pattern"):
        client.matches("[", "?")
    assert f.model_requests() == []


def test_a_value_the_type_refuses_is_an_invalid_answer_with_the_ledger(fake):
    class Strict(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def even(cls, v: int) -> int:
            if v % 2:
                raise ValueError("n must be even")
            return v

    f, env = fake([{"json": {"n": 3}}])
    with pytest.raises(geode.InvalidAnswer) as e:
        geode.Client("openai-payg", env=env).extract(Strict, "?")
    assert e.value.errors[0]["instance_path"] == "/n"
    assert e.value.ledger.adapter == "openai-payg"


def test_async_calls_raise_the_same_exceptions(fake):
    f, env = fake([{"refusal": "no"}])
    client = geode.Client("openai-payg", env=env)
    with pytest.raises(geode.Refused):
        asyncio.run(client.aextract(Decision, "?"))


def test_no_secret_in_the_client_repr_or_a_successful_ledger(fake):
    f, env = fake([VALID])
    client = geode.Client("openai-payg", env=env)
    assert KEY not in repr(client)
    assert "openai-payg" in repr(client)
    answer = client.extract(Decision, "?")
    assert KEY not in answer.ledger.to_json()
    assert KEY not in repr(answer)
    # The key did reach the provider: it is the one place it belongs.
    auth = dict(f.model_requests()[0]["headers"]).get("authorization", "")
    assert auth and KEY not in auth, "the fake masks it in its log"


def test_every_exception_is_a_geode_error():
    for cls in (
        geode.ConfigError,
        geode.NotEnforceable,
        geode.ProviderError,
        geode.InvalidAnswer,
        geode.Refused,
        geode.Truncated,
        geode.Ended,
    ):
        assert issubclass(cls, geode.Error)
