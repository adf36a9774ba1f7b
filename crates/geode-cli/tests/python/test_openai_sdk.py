"""`geode gateway` driven by the official OpenAI Python SDK, unmodified, as a user would.

Run by crates/geode-cli/tests/it/e2e_gateway_sdk.rs, which starts the gateway on 127.0.0.1 in
front of geode-fakes providers: `openai-payg` answers a valid Decision, `glm-payg` (JSON mode
only) answers one with a wrong enum value, `flaky` a wrong one first and a valid one after.
GEODE_GATEWAY_URL and GEODE_GATEWAY_KEY say where
the gateway is and which inbound key it takes.
"""

import os
from typing import Literal

import openai
import pytest
from pydantic import BaseModel

URL = os.environ["GEODE_GATEWAY_URL"] + "/v1"
KEY = os.environ["GEODE_GATEWAY_KEY"]


class Decision(BaseModel):
    decision: Literal["accept", "reject"]
    reason: str


def client(key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=URL, api_key=key, max_retries=0, timeout=60)


MESSAGES = [
    {"role": "system", "content": "You review pull requests."},
    {"role": "user", "content": "Decide."},
]


def test_parse_gives_the_pydantic_instance_and_the_ledger_survives():
    completion = client().chat.completions.parse(
        model="openai-payg/gpt-5-mini", messages=MESSAGES, response_format=Decision
    )
    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, Decision)
    assert parsed == Decision(decision="accept", reason="the tests pass")
    ledger = completion.model_extra["geode"]["ledger"]
    assert ledger["adapter"] == "openai-payg"
    assert ledger["wire_mode"] == "strict"
    assert ledger["full_validation"]["valid"] is True


def test_the_ledger_headers_read_through_the_raw_response_api():
    raw = client().chat.completions.with_raw_response.parse(
        model="openai-payg", messages=MESSAGES, response_format=Decision
    )
    assert raw.headers["x-geode-adapter"] == "openai-payg"
    assert raw.headers["x-geode-mode"] == "strict"
    assert raw.headers["x-geode-guarantee"] == "enforced"
    assert raw.headers["x-geode-validated"] == "true"
    assert raw.headers["x-geode-attempts"] == "1"
    assert raw.parse().choices[0].message.parsed.decision == "accept"


def test_a_route_that_cannot_enforce_is_refused_as_the_sdks_bad_request_error():
    for extra in ({"extra_headers": {"x-geode-require": "enforced"}},
                  {"extra_body": {"geode": {"require": "enforced"}}}):
        with pytest.raises(openai.BadRequestError) as refused:
            client().chat.completions.parse(
                model="glm-payg", messages=MESSAGES, response_format=Decision, **extra
            )
        assert refused.value.code == "schema_not_enforceable"
        assert refused.value.status_code == 400
        candidates = refused.value.body["geode"]["candidates"]
        assert candidates[0]["adapter"] == "glm-payg"


def test_an_answer_invalid_after_the_retry_is_an_error_never_a_quiet_200():
    with pytest.raises(openai.UnprocessableEntityError) as invalid:
        client().chat.completions.parse(
            model="glm-payg", messages=MESSAGES, response_format=Decision
        )
    assert invalid.value.code == "schema_validation_failed"
    errors = invalid.value.body["geode"]["validation_errors"]
    assert any(e["instance_path"] == "/decision" for e in errors)
    assert len(invalid.value.body["geode"]["ledger"]["attempts"]) == 2


def test_a_wrong_key_is_the_sdks_authentication_error():
    with pytest.raises(openai.AuthenticationError) as denied:
        client("not-the-gateway-key").chat.completions.create(model="openai-payg", messages=MESSAGES)
    assert denied.value.code == "invalid_api_key"
    assert KEY not in str(denied.value)


def test_models_lists_the_routes():
    ids = {m.id for m in client().models.list()}
    assert {"openai-payg", "glm-payg", "local"} <= ids


def test_json_object_mode_and_plain_text():
    completion = client().chat.completions.create(
        model="openai-payg", messages=MESSAGES, response_format={"type": "json_object"}
    )
    assert completion.choices[0].message.content.startswith("{")
    assert completion.model_extra["geode"]["ledger"]["full_validation"]["valid"] is True


def test_responses_parse_gives_the_pydantic_instance():
    response = client().responses.parse(
        model="openai-payg/gpt-5-mini",
        instructions="You review pull requests.",
        input=[{"role": "user", "content": "Decide."}],
        text_format=Decision,
    )
    assert response.output_parsed == Decision(decision="accept", reason="the tests pass")
    assert response.model_extra["geode"]["ledger"]["wire_mode"] == "strict"


def test_responses_refusal_and_headers():
    with pytest.raises(openai.BadRequestError) as refused:
        client().responses.parse(
            model="glm-payg", input="Decide.", text_format=Decision,
            extra_headers={"x-geode-require": "enforced"},
        )
    assert refused.value.code == "schema_not_enforceable"
    raw = client().responses.with_raw_response.parse(
        model="openai-payg", input="Decide.", text_format=Decision
    )
    assert raw.headers["x-geode-guarantee"] == "enforced"
    assert raw.parse().output_parsed.decision == "accept"


def test_a_chat_stream_through_the_sdks_stream_helper():
    with client().chat.completions.stream(
        model="openai-payg", messages=MESSAGES, response_format=Decision
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert Decision.model_validate_json("".join(deltas)) == Decision(decision="accept", reason="the tests pass")
    assert final.choices[0].message.parsed == Decision(decision="accept", reason="the tests pass")


def test_a_stream_that_needed_the_retry_assembles_only_the_checked_value():
    # `flaky` answers a wrong enum value first: the text the SDK assembles is the retry's.
    with client().chat.completions.stream(
        model="flaky", messages=MESSAGES, response_format=Decision
    ) as stream:
        content = "".join(e.delta for e in stream if e.type == "content.delta")
        final = stream.get_final_completion()
    assert Decision.model_validate_json(content) == Decision(decision="accept", reason="the tests pass")
    assert final.choices[0].message.parsed == Decision(decision="accept", reason="the tests pass")


def test_a_responses_stream_through_the_sdks_stream_helper():
    with client().responses.stream(
        model="openai-payg", input="Decide.", text_format=Decision
    ) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert final.output_parsed == Decision(decision="accept", reason="the tests pass")


def test_a_stream_that_fails_validation_raises_in_the_sdk():
    with pytest.raises(openai.APIError) as failed:
        with client().chat.completions.stream(
            model="glm-payg", messages=MESSAGES, response_format=Decision
        ) as stream:
            for _ in stream:
                pass
    assert "schema_validation_failed" in str(failed.value.body) or failed.value.code == "schema_validation_failed"


class GetWeather(BaseModel):
    """The weather in a city."""

    city: str


def test_tool_calls_parse_and_their_results_continue_to_a_parsed_answer():
    tools = [openai.pydantic_function_tool(GetWeather)]
    first = client().chat.completions.parse(
        model="tooled", messages=MESSAGES, response_format=Decision, tools=tools
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.parsed is None
    call = choice.message.tool_calls[0]
    assert call.function.name == "GetWeather"
    assert isinstance(call.function.parsed_arguments, GetWeather)
    raw = client().chat.completions.with_raw_response.parse(
        model="tooled", messages=MESSAGES, response_format=Decision, tools=tools
    )
    assert raw.headers["x-geode-validated"] == "tool-arguments"
    # The SDK's own message object goes back as it is, as its docs show.
    messages = MESSAGES + [
        choice.message,
        {"role": "tool", "tool_call_id": call.id, "content": '{"sky": "clear"}'},
    ]
    second = client().chat.completions.parse(
        model="tooled", messages=messages, response_format=Decision, tools=tools
    )
    assert second.choices[0].finish_reason == "stop"
    assert isinstance(second.choices[0].message.parsed, Decision)
    assert second.model_extra["geode"]["ledger"]["full_validation"]["valid"] is True


def test_responses_function_calls_and_their_outputs():
    tools = [{"type": "function", "name": "get_weather", "strict": True,
              "parameters": GetWeather.model_json_schema() | {"additionalProperties": False}}]
    first = client().responses.parse(
        model="tooled", input="Decide.", text_format=Decision, tools=tools
    )
    calls = [o for o in first.output if o.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert first.output_parsed is None
    GetWeather.model_validate_json(calls[0].arguments)
    second = client().responses.parse(
        model="tooled",
        input=[{"role": "user", "content": "Decide."}, *first.output,
               {"type": "function_call_output", "call_id": calls[0].call_id, "output": "clear"}],
        text_format=Decision,
        tools=tools,
    )
    assert isinstance(second.output_parsed, Decision)


def test_a_conversation_continued_by_previous_response_id_then_retrieved_and_deleted():
    first = client().responses.create(
        model="openai-payg", input=[{"role": "user", "content": "Remember the word heliotrope."}]
    )
    assert first.status == "completed" and first.store is True
    second = client().responses.create(
        model="openai-payg", previous_response_id=first.id, input="Which word was it?"
    )
    assert second.status == "completed"
    assert second.previous_response_id == first.id and second.id != first.id
    again = client().responses.retrieve(first.id)
    assert again.id == first.id and again.output_text == first.output_text
    items = client().responses.input_items.list(first.id)
    assert [i.type for i in items.data] == ["message"]
    assert client().responses.delete(first.id) is None  # the SDK reads the deletion and returns None
    with pytest.raises(openai.NotFoundError):
        client().responses.retrieve(first.id)


# A 1x1 PNG and a one-line PDF, as data URLs: what a client sends for a screenshot and a file.
PNG_DATA_URL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mP4DwQACfsD/Wj6HMwAAAAASUVORK5CYII="
PDF_DATA_URL = "data:application/pdf;base64,JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK"


def test_an_image_and_a_pdf_in_chat_and_responses_parse_and_the_ledger_names_them():
    completion = client().chat.completions.parse(
        model="openai-payg/gpt-5-mini",
        messages=[{"role": "user", "content": [
            {"type": "text", "text": "Decide on this screenshot and this diff."},
            {"type": "image_url", "image_url": {"url": PNG_DATA_URL}},
            {"type": "file", "file": {"filename": "diff.pdf", "file_data": PDF_DATA_URL}},
        ]}],
        response_format=Decision,
    )
    assert completion.choices[0].message.parsed.decision == "accept"
    inputs = completion.model_extra["geode"]["ledger"]["inputs"]
    assert [(p["kind"], p["media_type"]) for p in inputs] == [("image", "image/png"), ("document", "application/pdf")]

    response = client().responses.parse(
        model="openai-payg/gpt-5-mini",
        input=[{"role": "user", "content": [
            {"type": "input_text", "text": "Decide on this screenshot."},
            {"type": "input_image", "image_url": PNG_DATA_URL, "detail": "auto"},
            {"type": "input_file", "filename": "diff.pdf", "file_data": PDF_DATA_URL},
        ]}],
        text_format=Decision,
    )
    assert response.output_parsed.decision == "accept"


def test_an_image_a_route_cannot_take_is_the_sdks_bad_request_error():
    with pytest.raises(openai.BadRequestError) as e:
        client().chat.completions.create(
            model="glm-payg",
            messages=[{"role": "user", "content": [
                {"type": "text", "text": "Decide."},
                {"type": "image_url", "image_url": {"url": PNG_DATA_URL}},
            ]}],
        )
    assert e.value.code == "unsupported_input"
