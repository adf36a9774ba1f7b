"""`geode gateway`'s `POST /v1/responses` held to the Open Responses specification, its stored
responses (`GET`/`DELETE /v1/responses/{id}`, `input_items`, `previous_response_id`), its Chat
Completions bodies held to the official `openai` package's types, and the rule that no request
field is dropped in silence.

Raw HTTP (httpx2, the HTTP client the pinned `openai` package ships with), so that what is
checked is what the gateway wrote, not what an SDK made of it. Every body is validated with the
spec's published pydantic types (`openresponses-types`, generated from its OpenAPI document):
a response with `ResponseResource`, each streamed event with the model of its `type`.

Run by crates/geode-cli/tests/it/conformance_responses.rs, over the project's fake providers and
over the local model. Environment:

  GEODE_GATEWAY_URL         the gateway's base URL (no `/v1`)
  GEODE_GATEWAY_KEY         an inbound key
  GEODE_GATEWAY_KEY_B       a second inbound key: what one key stored, the other never sees
  GEODE_MODEL               the route of the text scenarios
  GEODE_TOOL_MODEL          the route that calls the tools it is offered; unset: the tool
                            scenarios are skipped, with GEODE_TOOL_SKIP_REASON as the reason
  GEODE_IMAGE_MODEL         a route that takes images and PDF files; unset: those scenarios are
                            skipped
  GEODE_TEXT_ONLY_MODEL     a route that takes text only (default: GEODE_MODEL when
                            GEODE_IMAGE_MODEL is unset): it must refuse an image before any call
  GEODE_RETRY_MODEL         a route whose first answer fails the Decision schema and whose next
                            one passes; unset: its scenario is skipped
  GEODE_MAX_OUTPUT_TOKENS   optional: sent as every request's output budget (a slow model); a
                            response cut by it may then be `incomplete` (`max_output_tokens`)
  GEODE_TOOL_CHOICE         optional: the tool scenarios' `tool_choice` when a call is wanted
                            (`required` for a model too small to choose well; the call's form is
                            the grammar's either way); the round trip's second request then sends
                            `none`, as a client that wants the answer does
  GEODE_TOOL_BUDGET         optional: the tool scenarios' output budget (a call is longer than
                            GEODE_MAX_OUTPUT_TOKENS allows)
"""

import json
import os
import re
import uuid

import httpx2 as httpx
import openresponses_types as spec
import pytest
from pydantic import ValidationError
from openai.types.chat import ChatCompletion, ChatCompletionChunk

URL = os.environ["GEODE_GATEWAY_URL"].rstrip("/") + "/v1"
KEY = os.environ["GEODE_GATEWAY_KEY"]
KEY_B = os.environ["GEODE_GATEWAY_KEY_B"]
MODEL = os.environ["GEODE_MODEL"]
TOOL_MODEL = os.environ.get("GEODE_TOOL_MODEL", "")
TOOL_SKIP_REASON = os.environ.get("GEODE_TOOL_SKIP_REASON", "GEODE_TOOL_MODEL is not set")
RETRY_MODEL = os.environ.get("GEODE_RETRY_MODEL", "")
BUDGET = int(os.environ["GEODE_MAX_OUTPUT_TOKENS"]) if os.environ.get("GEODE_MAX_OUTPUT_TOKENS") else None

TOOL_CHOICE = os.environ.get("GEODE_TOOL_CHOICE", "")
TOOL_BUDGET = int(os.environ["GEODE_TOOL_BUDGET"]) if os.environ.get("GEODE_TOOL_BUDGET") else None

needs_tools = pytest.mark.skipif(not TOOL_MODEL, reason=TOOL_SKIP_REASON)

# A route that takes images and files, and one that takes text only (by default the text
# scenarios' route when no image route is given: the local model).
IMAGE_MODEL = os.environ.get("GEODE_IMAGE_MODEL", "")
TEXT_ONLY_MODEL = os.environ.get("GEODE_TEXT_ONLY_MODEL", "" if IMAGE_MODEL else MODEL)
needs_images = pytest.mark.skipif(not IMAGE_MODEL, reason="GEODE_IMAGE_MODEL is not set: no route here takes images")

HTTP = httpx.Client(timeout=180)

# Every streaming event the specification defines, by its `type`, with its model. Anything
# else a server sends must be an extension: a `slug:` prefixed type (ours is `geode:`).
EVENT_MODELS = {
    "response.created": spec.ResponseCreatedStreamingEvent,
    "response.queued": spec.ResponseQueuedStreamingEvent,
    "response.in_progress": spec.ResponseInProgressStreamingEvent,
    "response.completed": spec.ResponseCompletedStreamingEvent,
    "response.failed": spec.ResponseFailedStreamingEvent,
    "response.incomplete": spec.ResponseIncompleteStreamingEvent,
    "response.output_item.added": spec.ResponseOutputItemAddedStreamingEvent,
    "response.output_item.done": spec.ResponseOutputItemDoneStreamingEvent,
    "response.content_part.added": spec.ResponseContentPartAddedStreamingEvent,
    "response.content_part.done": spec.ResponseContentPartDoneStreamingEvent,
    "response.output_text.delta": spec.ResponseOutputTextDeltaStreamingEvent,
    "response.output_text.done": spec.ResponseOutputTextDoneStreamingEvent,
    "response.output_text.annotation.added": spec.ResponseOutputTextAnnotationAddedStreamingEvent,
    "response.refusal.delta": spec.ResponseRefusalDeltaStreamingEvent,
    "response.refusal.done": spec.ResponseRefusalDoneStreamingEvent,
    "response.function_call_arguments.delta": spec.ResponseFunctionCallArgumentsDeltaStreamingEvent,
    "response.function_call_arguments.done": spec.ResponseFunctionCallArgumentsDoneStreamingEvent,
    "response.reasoning.delta": spec.ResponseReasoningDeltaStreamingEvent,
    "response.reasoning.done": spec.ResponseReasoningDoneStreamingEvent,
    "response.reasoning_summary_part.added": spec.ResponseReasoningSummaryPartAddedStreamingEvent,
    "response.reasoning_summary_part.done": spec.ResponseReasoningSummaryPartDoneStreamingEvent,
    "response.reasoning_summary_text.delta": spec.ResponseReasoningSummaryDeltaStreamingEvent,
    "response.reasoning_summary_text.done": spec.ResponseReasoningSummaryDoneStreamingEvent,
    "error": spec.ErrorStreamingEvent,
}
TERMINAL = {"response.completed", "response.incomplete", "response.failed"}
EXTENSION_PREFIX = "geode:"
RESPONSE_ID = re.compile(r"^resp_[0-9a-fA-F]{24,}$")

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Looks up today's weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "A city name, e.g. Lisbon"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


# ---------------------------------------------------------------------------------------------
# Requests


def headers(key: str = KEY) -> dict:
    return {"Authorization": f"Bearer {key}"}


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": text}


def request(model: str = MODEL, **fields) -> dict:
    """A Responses request on `model`, with the run's output budget unless it sets one."""
    body = {"model": model, **fields}
    if BUDGET is not None:
        body.setdefault("max_output_tokens", BUDGET)
    return body


def tool_fields(choice: str, budget_field: str) -> dict:
    """The tool scenarios' `tool_choice` and budget, when the run sets them."""
    fields = {}
    if TOOL_CHOICE:
        fields["tool_choice"] = choice
    if TOOL_BUDGET is not None:
        fields[budget_field] = TOOL_BUDGET
    return fields


def tool_request(wanted: str = TOOL_CHOICE, **fields) -> dict:
    """A Responses request on the tool route, offering the weather tool."""
    return request(TOOL_MODEL, tools=[WEATHER_TOOL], **tool_fields(wanted, "max_output_tokens"), **fields)


def chat_request(model: str = MODEL, **fields) -> dict:
    body = {"model": model, **fields}
    if BUDGET is not None:
        body.setdefault("max_completion_tokens", BUDGET)
    return body


def post(path: str, body: dict, key: str = KEY) -> httpx.Response:
    return HTTP.post(URL + path, json=body, headers=headers(key))


def get(path: str, key: str = KEY) -> httpx.Response:
    return HTTP.get(URL + path, headers=headers(key))


def delete(path: str, key: str = KEY) -> httpx.Response:
    return HTTP.delete(URL + path, headers=headers(key))


def ok_json(resp: httpx.Response) -> dict:
    assert resp.status_code == 200, f"HTTP {resp.status_code}: {resp.text}"
    return resp.json()


# ---------------------------------------------------------------------------------------------
# What every response must be


def finished(body: dict) -> None:
    """Completed; or, when this run cut every answer to a small budget, incomplete for that."""
    if BUDGET is not None and body["status"] == "incomplete":
        assert (body.get("incomplete_details") or {}).get("reason") == "max_output_tokens", body
        return
    assert body["status"] == "completed", f"status {body['status']!r}: {json.dumps(body)[:2000]}"


def spec_problems(model, data) -> list:
    """What keeps `data` from validating as `model`, one line per error (empty: it validates)."""
    try:
        model.model_validate(data)
    except ValidationError as e:
        return [f"{model.__name__}: {'.'.join(map(str, err['loc'])) or '(root)'}: {err['msg']}"
                for err in e.errors()]
    return []


def conforms(model, data) -> None:
    problems = spec_problems(model, data)
    assert not problems, "\n".join(problems)


def resource_problems(body: dict, sent: dict) -> list:
    """What keeps `body` from being a ResponseResource of the spec that echoes what `sent` asked
    for, one line per problem."""
    problems = spec_problems(spec.ResponseResource, body)
    if not RESPONSE_ID.match(str(body.get("id"))):
        problems.append(f"id {body.get('id')!r} is not resp_ + 24 or more hex digits")
    if body.get("object") != "response":
        problems.append(f"object {body.get('object')!r}")
    if body.get("model") != sent["model"]:
        problems.append(f"model {body.get('model')!r}, sent {sent['model']!r}")
    for item in body.get("output") or []:
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text" and not isinstance(part.get("logprobs"), list):
                    problems.append(f"an output_text part without a logprobs list: {part}")
    sent_tools = [t for t in sent.get("tools", []) if t.get("type") == "function"]
    echoed = {t.get("name"): t for t in body.get("tools") or [] if t.get("type") == "function"}
    if sorted(echoed) != sorted(t["name"] for t in sent_tools):
        problems.append(f"tools {body.get('tools')!r}, sent {sent_tools!r}")
    else:
        for tool in sent_tools:
            mine = echoed[tool["name"]]
            for field in ("description", "parameters"):
                if mine.get(field) != tool.get(field):
                    problems.append(f"tool {tool['name']}'s {field} echoed as {mine.get(field)!r}")
    for field in ("temperature", "max_output_tokens", "instructions", "top_p", "presence_penalty",
                  "frequency_penalty", "truncation", "background", "parallel_tool_calls",
                  "metadata", "safety_identifier", "prompt_cache_key"):
        if field in sent and body.get(field, "(absent)") != sent[field]:
            problems.append(f"{field}: sent {sent[field]!r}, echoed {body.get(field, '(absent)')!r}")
    if body.get("previous_response_id", "(absent)") != sent.get("previous_response_id"):
        problems.append(f"previous_response_id {body.get('previous_response_id', '(absent)')!r}, "
                        f"sent {sent.get('previous_response_id')!r}")
    if body.get("store", "(absent)") is not sent.get("store", True):
        problems.append(f"store {body.get('store', '(absent)')!r}, wanted {sent.get('store', True)!r}")
    return problems


def check_resource(body: dict, sent: dict) -> None:
    problems = resource_problems(body, sent)
    assert not problems, "the response breaks the spec or drops what was sent:\n" + "\n".join(problems)


def create(sent: dict, key: str = KEY) -> dict:
    """POSTs `sent` (not streamed) and checks the response it gets back."""
    body = ok_json(post("/responses", sent, key))
    check_resource(body, sent)
    return body


def output_text(body: dict) -> str:
    return "".join(
        part["text"]
        for item in body["output"] if item["type"] == "message"
        for part in item["content"] if part["type"] == "output_text"
    )


def calls(body: dict) -> list:
    return [item for item in body["output"] if item["type"] == "function_call"]


def error_of(resp: httpx.Response, status: int) -> dict:
    """The OpenAI-shaped error of a `status` answer."""
    assert resp.status_code == status, f"wanted {status}, got {resp.status_code}: {resp.text}"
    body = resp.json()
    assert set(body) >= {"error"}, body
    error = body["error"]
    for field in ("message", "type", "param", "code"):
        assert field in error, f"error without {field}: {body}"
    assert isinstance(error["message"], str) and error["message"], body
    assert isinstance(error["type"], str) and error["type"], body
    return error


# ---------------------------------------------------------------------------------------------
# Streams


def sse_frames(text: str) -> list:
    """The stream's frames in order, each `(event, data)` (`event` None when absent); comment
    lines (keep-alives) are no frames."""
    frames = []
    for block in re.split(r"\r?\n\r?\n", text):
        event, data = None, []
        for line in block.splitlines():
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        if data:
            frames.append((event, "\n".join(data)))
        else:
            assert event is None, f"an event line without data: {block!r}"
    return frames


def stream(sent: dict, key: str = KEY) -> tuple:
    """POSTs `sent` with `stream: true`; checks every event and the final response, reporting
    every problem at once; returns (events, final response)."""
    sent = {**sent, "stream": True}
    with HTTP.stream("POST", URL + "/responses", json=sent, headers=headers(key)) as resp:
        text = resp.read().decode()
        assert resp.status_code == 200, f"HTTP {resp.status_code}: {text}"
        assert resp.headers["content-type"].startswith("text/event-stream"), resp.headers
    frames = sse_frames(text)
    assert frames, "an empty stream"
    problems = []
    if frames[-1][1] != "[DONE]":
        problems.append(f"the stream's last data line is {frames[-1][1][:120]!r}..., not [DONE]")
    if any(data == "[DONE]" for _, data in frames[:-1]):
        problems.append("[DONE] before the end of the stream")
    events = []
    for event, data in frames:
        if data == "[DONE]":
            continue
        payload = json.loads(data)
        kind = payload.get("type")
        if event != kind:
            problems.append(f"SSE event line {event!r} differs from the data's type {kind!r}")
        model = EVENT_MODELS.get(kind)
        if model is not None:
            problems.extend(f"event {payload.get('sequence_number')}: {p}" for p in spec_problems(model, payload))
        elif not (isinstance(kind, str) and kind.startswith(EXTENSION_PREFIX)):
            problems.append(f"{kind!r} is no event of the spec and no {EXTENSION_PREFIX} extension")
        elif not isinstance(payload.get("sequence_number"), int):
            problems.append(f"the extension event {kind} has no sequence_number")
        events.append(payload)
    numbers = [e.get("sequence_number") for e in events]
    if numbers != list(range(len(events))):
        problems.append(f"sequence numbers {numbers}, not 0, 1, 2, ...")
    kinds = [e.get("type") for e in events]
    if not kinds or kinds[0] != "response.created":
        problems.append(f"the first event is not response.created: {kinds[:3]}")
    if sum(k in TERMINAL for k in kinds) != 1 or kinds[-1] not in TERMINAL:
        problems.append(f"not one terminal event, last: {kinds[-3:]}")
    assert kinds and kinds[-1] in TERMINAL and "response" in events[-1], "\n".join(problems)
    final = events[-1]["response"]
    problems.extend(f"final response: {p}" for p in resource_problems(final, sent))
    for opening in (e for e in events if e["type"] in ("response.created", "response.in_progress")):
        if opening.get("response", {}).get("id") != final.get("id"):
            problems.append(f"{opening['type']} names another response: {opening.get('response', {}).get('id')!r}")
    assert not problems, "the stream breaks the spec or drops what was sent:\n" + "\n".join(problems)
    return events, final


def text_deltas_add_up(events: list, final: dict) -> None:
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done = [e["text"] for e in events if e["type"] == "response.output_text.done"]
    assert done and done[-1] == deltas == output_text(final), (deltas, done, output_text(final))
    for e in events:
        if e["type"] in ("response.output_text.delta", "response.output_text.done"):
            assert isinstance(e.get("logprobs"), list), e


# ---------------------------------------------------------------------------------------------
# The specification's scenarios


def test_every_spec_event_type_has_its_model():
    defined = {name for name in dir(spec) if name.endswith("StreamingEvent")}
    assert {m.__name__ for m in EVENT_MODELS.values()} == defined
    for kind, model in EVENT_MODELS.items():
        assert [t.value for t in model.model_fields["type"].annotation] == [kind], model


def test_a_user_message_item_gets_a_completed_response():
    sent = request(input=[user("Greet me in three words.")])
    body = create(sent)
    finished(body)
    assert body["output"], "no output items"
    assert any(item["type"] == "message" for item in body["output"]), body["output"]


def test_a_streamed_response_sends_spec_events_in_order():
    sent = request(input=[user("Count from 1 to 5.")])
    events, final = stream(sent)
    finished(final)
    kinds = [e["type"] for e in events]
    assert kinds[1] == "response.in_progress", kinds
    for kind in ("response.output_item.added", "response.content_part.added", "response.output_text.delta",
                 "response.output_text.done", "response.content_part.done", "response.output_item.done"):
        assert kind in kinds, f"no {kind}: {kinds}"
    text_deltas_add_up(events, final)


DECISION_FORMAT = {
    "type": "json_schema",
    "name": "decision",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]}, "reason": {"type": "string"}},
        "required": ["decision", "reason"],
        "additionalProperties": False,
    },
}


@pytest.mark.skipif(not RETRY_MODEL, reason="GEODE_RETRY_MODEL is not set: no route here fails its first answer")
def test_a_streamed_retry_is_an_extension_event_and_the_final_text_is_the_checked_one():
    sent = request(RETRY_MODEL, input=[user("Decide.")], text={"format": DECISION_FORMAT})
    events, final = stream(sent)
    finished(final)
    extensions = [e for e in events if e["type"].startswith(EXTENSION_PREFIX)]
    assert extensions, f"no {EXTENSION_PREFIX} event announced the retry: {[e['type'] for e in events]}"
    text_deltas_add_up(events, final)
    assert json.loads(output_text(final))["decision"] in ("accept", "reject")


def test_a_system_message_item_then_a_user_one():
    sent = request(input=[
        {"type": "message", "role": "system", "content": "You answer like a ship's captain."},
        user("Say good morning."),
    ])
    body = create(sent)
    finished(body)
    assert body["output"]


@needs_tools
def test_a_function_tool_is_called_with_a_function_call_item():
    sent = tool_request(input=[user("Is it raining in Lisbon?")])
    body = create(sent)
    found = calls(body)
    assert found, f"no function_call item: {body['output']}"
    call = found[0]
    assert call["name"] == "get_weather" and call["call_id"] and call["id"], call
    assert isinstance(json.loads(call["arguments"]).get("city"), str), call


@needs_tools
def test_a_streamed_function_call_sends_its_item_and_argument_events():
    sent = tool_request(input=[user("Is it raining in Lisbon?")])
    events, final = stream(sent)
    added = [e for e in events if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"]
    done = [e for e in events if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"]
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    args_done = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert added and done and deltas and args_done, [e["type"] for e in events]
    item_id = added[0]["item"]["id"]
    assert "".join(d["delta"] for d in deltas if d["item_id"] == item_id) == args_done[0]["arguments"]
    assert done[0]["item"]["arguments"] == args_done[0]["arguments"]
    assert [c["call_id"] for c in calls(final)] == [done[0]["item"]["call_id"]]


# A 1x1 PNG and a one-line PDF, as data URLs (the fakes fetch nothing, and neither does geode).
PNG_DATA_URL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mP4DwQACfsD/Wj6HMwAAAAASUVORK5CYII="
PDF_DATA_URL = "data:application/pdf;base64,JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK"


def image_and_text(*parts: dict) -> dict:
    return {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "What is in this attachment?"}, *parts]}


@needs_images
def test_an_image_input_part():
    sent = request(IMAGE_MODEL, input=[image_and_text(
        {"type": "input_image", "image_url": PNG_DATA_URL, "detail": "auto"})])
    body = create(sent)
    finished(body)
    assert body["output"], "no output items"
    parts = body.get("geode", {}).get("ledger", {}).get("inputs") or []
    assert not parts or parts[0]["media_type"] == "image/png", parts


@needs_images
def test_a_file_input_part():
    sent = request(IMAGE_MODEL, input=[image_and_text(
        {"type": "input_file", "filename": "note.pdf", "file_data": PDF_DATA_URL})])
    body = create(sent)
    finished(body)
    assert body["output"], "no output items"


@pytest.mark.skipif(not TEXT_ONLY_MODEL, reason="GEODE_TEXT_ONLY_MODEL is not set")
def test_a_route_that_takes_no_images_refuses_them_before_any_call():
    sent = request(TEXT_ONLY_MODEL, input=[image_and_text(
        {"type": "input_image", "image_url": PNG_DATA_URL})])
    r = HTTP.post(f"{URL}/responses", json=sent, headers=headers())
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "unsupported_input", error
    assert "takes text only" in error["message"], error


def test_a_conversation_sent_as_user_assistant_user_items():
    sent = request(input=[
        user("My name is Ana."),
        {"type": "message", "role": "assistant", "content": "Nice to meet you, Ana."},
        user("What is my name?"),
    ])
    body = create(sent)
    finished(body)
    assert body["output"]


# ---------------------------------------------------------------------------------------------
# Stored responses


@needs_tools
def test_a_function_call_output_continues_by_previous_response_id():
    first = create(tool_request(input=[user("Is it raining in Lisbon?")]))
    call = calls(first)[0]
    sent = tool_request(
        "none",
        previous_response_id=first["id"],
        input=[{"type": "function_call_output", "call_id": call["call_id"], "output": '{"sky": "clear"}'}],
    )
    second = create(sent)
    assert second["status"] == "completed", second
    assert not calls(second), second["output"]
    assert [i["type"] for i in second["output"]] == ["message"], second["output"]
    assert output_text(second)


def test_a_conversation_continues_by_previous_response_id():
    # The Rust side checks the upstream saw the first turn (the fake records what it got).
    first = create(request(input=[user("Remember the word heliotrope.")]))
    finished(first)
    sent = request(previous_response_id=first["id"], input=[user("Which word did I ask you to remember?")])
    second = create(sent)
    finished(second)
    assert second["id"] != first["id"]


def test_a_streamed_response_continues_by_previous_response_id():
    first = create(request(input=[user("Remember the word heliotrope.")]))
    _, final = stream(request(previous_response_id=first["id"], input=[user("Which word was it?")]))
    finished(final)
    assert final["previous_response_id"] == first["id"]


def test_a_stored_response_reads_back_as_it_was_answered():
    sent = request(input=[user("Name a colour.")], metadata={"case": "read-back"})
    body = create(sent)
    again = ok_json(get(f"/responses/{body['id']}"))
    conforms(spec.ResponseResource, again)
    for field in ("id", "object", "created_at", "status", "model", "output", "usage", "metadata", "store",
                  "previous_response_id", "tools"):
        assert again[field] == body[field], f"{field}: {again[field]!r} != {body[field]!r}"


def test_a_streamed_response_is_stored_too():
    _, final = stream(request(input=[user("Name a colour.")]))
    again = ok_json(get(f"/responses/{final['id']}"))
    conforms(spec.ResponseResource, again)
    assert again["output"] == final["output"]


def test_input_items_list_what_was_sent_with_ids():
    texts = ["My name is Ana.", "Nice to meet you, Ana.", "What is my name?"]
    roles = ["user", "assistant", "user"]
    body = create(request(input=[{"type": "message", "role": r, "content": t} for r, t in zip(roles, texts)]))
    listing = ok_json(get(f"/responses/{body['id']}/input_items"))
    assert listing["object"] == "list", listing
    data = listing["data"]
    assert len(data) == 3, data
    for item in data:
        assert isinstance(item.get("id"), str) and item["id"], item
        assert item["type"] == "message", item
    assert len({item["id"] for item in data}) == 3, data
    assert listing["first_id"] == data[0]["id"] and listing["last_id"] == data[-1]["id"], listing
    assert listing["has_more"] is False, listing

    def text(item):
        content = item["content"]
        return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)

    seen = [(item["role"], text(item)) for item in data]
    sent = list(zip(roles, texts))
    assert seen in (sent, sent[::-1]), seen


def test_input_items_come_newest_first_unless_asked_ascending():
    # OpenAI's input_items lists newest first (`order=desc`) unless `order=asc` is asked.
    texts = ["first", "second", "third"]
    body = create(request(input=[user(t) for t in texts]))

    def listed(query):
        listing = ok_json(get(f"/responses/{body['id']}/input_items{query}"))
        return ["".join(p.get("text", "") for p in i["content"]) if isinstance(i["content"], list) else i["content"]
                for i in listing["data"]]

    assert listed("") == texts[::-1]
    assert listed("?order=desc") == texts[::-1]
    assert listed("?order=asc") == texts


def test_a_deleted_response_is_gone():
    body = create(request(input=[user("Name a colour.")]))
    resp = delete(f"/responses/{body['id']}")
    assert ok_json(resp) == {"id": body["id"], "object": "response", "deleted": True}
    error_of(get(f"/responses/{body['id']}"), 404)
    error_of(get(f"/responses/{body['id']}/input_items"), 404)
    error_of(delete(f"/responses/{body['id']}"), 404)


def test_store_false_keeps_nothing():
    sent = request(input=[user("Name a colour.")], store=False)
    body = create(sent)
    assert body["store"] is False
    error_of(get(f"/responses/{body['id']}"), 404)
    resp = post("/responses", request(previous_response_id=body["id"], input=[user("And another?")]))
    assert resp.status_code in (400, 404), f"a continuation of an unstored response: {resp.status_code} {resp.text}"


def test_an_unknown_id_is_a_404_in_openais_error_shape():
    unknown = "resp_" + uuid.uuid4().hex + uuid.uuid4().hex[:8]
    for resp in (get(f"/responses/{unknown}"), get(f"/responses/{unknown}/input_items"),
                 delete(f"/responses/{unknown}")):
        error = error_of(resp, 404)
        assert unknown in error["message"] or error["param"] in ("id", "response_id"), error


def test_a_response_stored_under_one_key_is_not_found_under_another():
    body = create(request(input=[user("Name a colour.")]))
    rid = body["id"]
    error_of(get(f"/responses/{rid}", KEY_B), 404)
    error_of(get(f"/responses/{rid}/input_items", KEY_B), 404)
    error_of(delete(f"/responses/{rid}", KEY_B), 404)
    resp = post("/responses", request(previous_response_id=rid, input=[user("And another?")]), KEY_B)
    assert resp.status_code in (400, 404), f"key B continued key A's response: {resp.status_code} {resp.text}"
    # Still there for its own key.
    assert ok_json(get(f"/responses/{rid}"))["id"] == rid


# ---------------------------------------------------------------------------------------------
# What a response echoes


def test_ids_are_resp_hex_and_never_repeat():
    a = create(request(input="Name a colour."))
    b = create(request(input="Name a colour."))
    assert a["id"] != b["id"]
    for body in (a, b):
        assert RESPONSE_ID.match(body["id"]), body["id"]


def test_sampling_budget_and_instructions_are_echoed():
    sent = request(input=[user("Name a colour.")], temperature=0.25, max_output_tokens=BUDGET or 48,
                   instructions="Answer in one word.")
    body = create(sent)
    assert body["temperature"] == 0.25
    assert body["max_output_tokens"] == (BUDGET or 48)
    assert body["instructions"] == "Answer in one word."


def test_store_is_true_by_default():
    body = create(request(input="Name a colour."))
    assert body["store"] is True


ACCEPTED_DEFAULTS = {
    "top_p": 1,
    "presence_penalty": 0,
    "frequency_penalty": 0,
    "truncation": "disabled",
    "background": False,
    "parallel_tool_calls": True,
    "metadata": {"k": "v"},
    "safety_identifier": "u1",
    "prompt_cache_key": "c",
}


def test_fields_at_their_defaults_are_accepted_and_echoed():
    sent = request(input=[user("Name a colour.")], **ACCEPTED_DEFAULTS)
    body = create(sent)
    for field, value in ACCEPTED_DEFAULTS.items():
        assert body[field] == value, f"{field}: sent {value!r}, echoed {body[field]!r}"


# ---------------------------------------------------------------------------------------------
# Nothing dropped in silence: what is not served is a 400 naming the field


# The refused requests' prompt: the Rust side checks that no upstream ever got it.
REFUSED_PROMPT = "This request is refused before any upstream call."

RESPONSES_REFUSED = [
    ("top_p", {"top_p": 0.5}),
    ("background", {"background": True}),
    ("max_tool_calls", {"max_tool_calls": 2}),
    ("top_logprobs", {"top_logprobs": 3}),
    ("conversation", {"conversation": "conv_x"}),
    ("prompt", {"prompt": {"id": "p"}}),
    ("include", {"include": ["reasoning.encrypted_content"]}),
    ("response_format", {"response_format": {"type": "json_object"}}),
    ("frobnicate", {"frobnicate": 1}),
]


@pytest.mark.parametrize("field,patch", RESPONSES_REFUSED, ids=[f for f, _ in RESPONSES_REFUSED])
def test_responses_refuses_what_it_does_not_serve(field, patch):
    error = error_of(post("/responses", request(input=REFUSED_PROMPT, **patch)), 400)
    assert error["code"] == "unsupported_parameter", error
    assert error["param"] == field, error


CHAT_REFUSED = [
    ("seed", {"seed": 1}),
    ("stop", {"stop": ["x"]}),
    ("logit_bias", {"logit_bias": {"1": 2}}),
    ("logprobs", {"logprobs": True}),
    ("functions", {"functions": [{"name": "f", "parameters": {"type": "object", "properties": {}}}]}),
    ("function_call", {"function_call": "auto"}),
    ("web_search_options", {"web_search_options": {}}),
    ("modalities", {"modalities": ["text", "audio"]}),
    ("prediction", {"prediction": {"type": "content", "content": "a colour"}}),
    ("text", {"text": {"format": {"type": "json_object"}}}),
    ("frobnicate", {"frobnicate": 1}),
]


@pytest.mark.parametrize("field,patch", CHAT_REFUSED, ids=[f for f, _ in CHAT_REFUSED])
def test_chat_refuses_what_it_does_not_serve(field, patch):
    sent = chat_request(messages=[{"role": "user", "content": REFUSED_PROMPT}], **patch)
    error = error_of(post("/chat/completions", sent), 400)
    assert error["code"] == "unsupported_parameter", error
    assert error["param"] == field, error


# ---------------------------------------------------------------------------------------------
# Chat Completions, held to the official SDK's types


def chat_chunks(sent: dict) -> list:
    sent = {**sent, "stream": True}
    with HTTP.stream("POST", URL + "/chat/completions", json=sent, headers=headers()) as resp:
        text = resp.read().decode()
        assert resp.status_code == 200, f"HTTP {resp.status_code}: {text}"
    frames = sse_frames(text)
    assert frames, "an empty stream"
    assert frames[-1][1] == "[DONE]", f"the chat stream's last data line is {frames[-1][1][:300]!r}, not [DONE]"
    chunks = []
    for _, data in frames[:-1]:
        chunk = json.loads(data)
        ChatCompletionChunk.model_validate(chunk, strict=True)
        chunks.append(chunk)
    return chunks


def test_a_chat_completion_is_the_sdks_chat_completion():
    body = ok_json(post("/chat/completions", chat_request(messages=[
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": "Name a colour."},
    ])))
    completion = ChatCompletion.model_validate(body, strict=True)
    assert completion.choices[0].message.content
    assert completion.choices[0].finish_reason in ("stop", "length")


def test_every_chat_chunk_is_the_sdks_chunk():
    chunks = chat_chunks(chat_request(messages=[{"role": "user", "content": "Count from 1 to 5."}]))
    ids = {c["id"] for c in chunks}
    assert len(ids) == 1, ids
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch.get("finish_reason")]
    assert finishes and finishes[-1] in ("stop", "length"), finishes


@needs_tools
def test_chat_tool_calls_are_the_sdks_types_streamed_or_not():
    sent = chat_request(
        TOOL_MODEL,
        messages=[{"role": "user", "content": "Is it raining in Lisbon?"}],
        tools=[{"type": "function", "function": {k: WEATHER_TOOL[k] for k in ("name", "description", "parameters")}}],
        **tool_fields(TOOL_CHOICE, "max_completion_tokens"),
    )
    completion = ChatCompletion.model_validate(ok_json(post("/chat/completions", sent)), strict=True)
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    chunks = chat_chunks(sent)
    streamed = [tc for c in chunks for ch in c["choices"] for tc in (ch["delta"].get("tool_calls") or [])]
    assert streamed and streamed[0]["function"]["name"] == "get_weather", chunks
