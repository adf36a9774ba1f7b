"""`Client.stream`: partial values with the pointers of closed parts, items once whole and valid,
the retry, one final validated value; sync and async; ending a stream mid-way ends the call."""

from __future__ import annotations

import asyncio
import json
from typing import List

import pytest
from pydantic import BaseModel

import geode
from conftest import eventually, sockets_to


class Finding(BaseModel):
    line: int
    note: str


class Report(BaseModel):
    title: str
    findings: List[Finding]


REPORT = {
    "title": "lint",
    "findings": [
        {"line": 3, "note": "unused"},
        {"line": 9, "note": "shadowed"},
        {"line": 12, "note": "long"},
    ],
}

HANG_MID_REPORT = {"hang_mid_text": json.dumps(REPORT)}


def test_partials_items_and_one_final_value(fake):
    f, env = fake([{"json": REPORT}])
    events = list(geode.Client("openai-payg", env=env).stream(Report, "lint this"))
    partials = [e for e in events if isinstance(e, geode.Partial)]
    items = [e for e in events if isinstance(e, geode.Item)]
    finals = [e for e in events if isinstance(e, geode.Final)]
    assert len(finals) == 1 and events[-1] is finals[0]
    assert finals[0].value == Report.model_validate(REPORT)
    assert finals[0].ledger.adapter == "openai-payg"
    # Partials name the closed parts (a partial before the whole: the hang tests below).
    assert partials and "/title" in partials[0].complete
    assert all(p.guarantee == "enforced" for p in partials)  # OpenAI strict constrains decoding
    # Each finding streamed once, typed, in order.
    assert [i.index for i in items] == [0, 1, 2]
    assert [i.value for i in items] == [Finding(**x) for x in REPORT["findings"]]


def test_a_list_root_streams_each_element(fake):
    f, env = fake([{"json": {"value": REPORT["findings"]}}])
    stream = geode.Client("openai-payg", env=env).stream(List[Finding], "findings")
    items = [e.value for e in stream if isinstance(e, geode.Item)]
    assert items == [Finding(**x) for x in REPORT["findings"]]
    assert stream.final is not None and stream.final.value == items


def test_async_for_gives_the_same_events(fake):
    f, env = fake([{"json": REPORT}])
    client = geode.Client("openai-payg", env=env)

    async def collect():
        out = []
        async for event in client.stream(Report, "lint"):
            out.append(event)
        return out

    events = asyncio.run(collect())
    assert isinstance(events[-1], geode.Final)
    assert events[-1].value.title == "lint"
    assert sum(isinstance(e, geode.Item) for e in events) == 3


def test_a_failed_first_answer_streams_a_retry_then_the_final_value(fake):
    f, env = fake([{"json": {"title": "lint", "findings": "none"}}, {"json": REPORT}])
    events = list(geode.Client("openai-payg", env=env).stream(Report, "lint"))
    retries = [e for e in events if isinstance(e, geode.Retry)]
    assert len(retries) == 1 and "validation" in retries[0].reason
    assert "findings" in json.dumps(f.model_requests()[1]["body"]["input"])
    assert isinstance(events[-1], geode.Final) and len(events[-1].ledger.attempts) == 2


def test_a_stream_that_fails_raises_the_typed_exception(fake):
    f, env = fake([{"max_tokens": '{"title": "li'}])
    with pytest.raises(geode.Truncated):
        for _ in geode.Client("openai-payg", env=env).stream(Report, "lint"):
            pass


def test_breaking_out_mid_stream_ends_the_call(fake):
    # Half the answer, then silence with the connection open: only the client can end it.
    f, env = fake({"steps": [], "default": HANG_MID_REPORT})
    client = geode.Client("openai-payg", env=env)
    for event in client.stream(Report, "lint"):
        if isinstance(event, geode.Item):  # the first finding, whole, comes first
            assert event.index == 0
            continue
        # The first half: the title is closed, the findings are not.
        assert isinstance(event, geode.Partial)
        assert event.value["title"] == "lint" and event.value != REPORT
        assert "/title" in event.complete and "/findings" not in event.complete
        assert sockets_to(f.port) == 1
        break
    eventually(lambda: sockets_to(f.port) == 0, what="the abandoned stream's connection closed")


def test_close_and_with_end_the_call(fake):
    f, env = fake({"steps": [], "default": HANG_MID_REPORT})
    client = geode.Client("openai-payg", env=env)
    with client.stream(Report, "lint") as stream:
        first = next(stream)
        assert isinstance(first, (geode.Item, geode.Partial))
    eventually(lambda: sockets_to(f.port) == 0, what="the closed stream's connection closed")
    assert list(stream) == []

    async def early_exit():
        async with client.stream(Report, "lint") as s:
            async for event in s:
                return event

    assert isinstance(asyncio.run(early_exit()), (geode.Item, geode.Partial))
    eventually(lambda: sockets_to(f.port) == 0, what="the async stream's connection closed")
