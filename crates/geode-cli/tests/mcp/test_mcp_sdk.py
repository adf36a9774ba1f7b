"""`geode mcp` driven by the official MCP Python SDK (`mcp`, pinned), over stdio (the SDK starts
`geode mcp` itself) and streamable HTTP (a server the Rust test started, behind an inbound key),
at the current protocol version (2026-07-28, the SDK's `auto` mode) and through the older
`initialize` handshake (2025-11-25, `legacy`). Run by crates/geode-cli/tests/it/e2e_mcp_sdk.rs,
which sets up the contracts on geode-fakes providers and the local model, and checks afterwards
that the refused contract made no upstream request and that the cancelled call's upstream
connection was closed."""

import json
import os
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

SECRET = os.environ["GEODE_SECRET"]
KEY = os.environ["GEODE_MCP_KEY"]
LEDGER = "dev.geode/ledger"

TRANSPORTS = ["stdio", "http"]
MODES = ["auto", "legacy"]


@asynccontextmanager
async def connect(transport, mode):
    if transport == "stdio":
        server = StdioServerParameters(
            command=os.environ["GEODE_BIN"], args=["mcp"], env=dict(os.environ), cwd=os.getcwd()
        )
        async with Client(server, mode=mode) as client:
            yield client
    else:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {KEY}"}, timeout=httpx2.Timeout(30, read=300)
        )
        async with http:
            async with Client(
                streamable_http_client(os.environ["GEODE_MCP_URL"], http_client=http), mode=mode
            ) as client:
                yield client


def run(transport, mode, body):
    async def main():
        async with connect(transport, mode) as client:
            return await body(client)

    return anyio.run(main)


def no_secret(result):
    text = result.model_dump_json(by_alias=True)
    assert SECRET not in text and KEY not in text
    return result


def ledger(result):
    return result.meta[LEDGER]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
def test_tools_list_shows_the_input_and_output_schemas(transport, mode):
    async def body(client):
        modern = client.protocol_version >= "2026-07-28"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"review", "sloppy", "strict_json", "tags", "local_review", "slow"}
        review = tools["review"]
        assert review.description == "Decide whether to merge a pull request"
        assert review.input_schema == {
            "type": "object",
            "properties": {
                "diff": {"type": "string", "description": "the unified diff"},
                "risk": {"type": "integer"},
            },
            "required": ["risk", "diff"],
            "additionalProperties": False,
        }
        assert review.output_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert review.output_schema["required"] == ["decision", "reason"]
        tags = tools["tags"].output_schema
        if modern:
            assert tags["type"] == "array", tags
        else:
            assert tags["type"] == "object" and tags["required"] == ["value"], tags
            assert tags["properties"]["value"]["type"] == "array"
        assert tags["$schema"] == "https://json-schema.org/draft/2020-12/schema"

    run(transport, mode, body)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
def test_a_call_returns_the_validated_value_its_text_and_the_ledger(transport, mode):
    async def body(client):
        result = no_secret(await client.call_tool("review", {"diff": "+fix", "risk": 2}))
        assert result.is_error is False
        value = result.structured_content
        assert value["decision"] in ("accept", "reject") and isinstance(value["reason"], str)
        assert json.loads(result.content[0].text) == value
        l = ledger(result)
        assert l["adapter"] == "openai-payg" and l["wire_mode"] == "strict"
        assert l["full_validation"]["valid"] is True
        assert "full_validation=valid" in result.meta["dev.geode/summary"]

    run(transport, mode, body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_answer_invalid_after_the_retry_is_an_error_without_structured_content(transport):
    async def body(client):
        result = no_secret(await client.call_tool("sloppy", {"diff": "x"}))
        assert result.is_error is True
        assert result.structured_content is None
        text = result.content[0].text
        assert "does not match the contract's schema after the retry" in text, text
        assert "/decision" in text, text
        assert result.meta["dev.geode/error"] == "schema_validation_failed"
        assert len(ledger(result)["attempts"]) == 2

    run(transport, "auto", body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_route_below_the_contracts_require_is_refused_before_any_request(transport):
    async def body(client):
        result = no_secret(await client.call_tool("strict_json", {"diff": "x"}))
        assert result.is_error is True and result.structured_content is None
        text = result.content[0].text
        assert text.startswith("refused before any request"), text
        assert "enforced" in text, text

    run(transport, "auto", body)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
def test_an_array_root_is_given_as_is_now_and_wrapped_for_older_peers(transport, mode):
    async def body(client):
        modern = client.protocol_version >= "2026-07-28"
        result = no_secret(await client.call_tool("tags", {"text": "a release note"}))
        assert result.is_error is False, result.content
        value = result.structured_content
        actions = [t["action"] for t in ledger(result)["transforms"]]
        if modern:
            assert isinstance(value, list), value
            assert not any("wrapped under" in a for a in actions), actions
        else:
            assert isinstance(value["value"], list), value
            assert any("structuredContent wrapped under \"value\"" in a for a in actions), actions
        assert json.loads(result.content[0].text) == value

    run(transport, mode, body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unknown_tool_is_a_json_rpc_error_and_bad_arguments_an_error_result(transport):
    async def body(client):
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        assert unknown.value.code == -32602
        for args, needle in [
            ({"diff": "x"}, 'missing input "risk"'),
            ({"diff": "x", "risk": "high"}, 'input "risk" must be an integer'),
            ({"diff": "x", "risk": 1, "extra": 1}, 'unknown input "extra"'),
        ]:
            result = no_secret(await client.call_tool("review", args))
            assert result.is_error is True and result.structured_content is None
            assert needle in result.content[0].text, result.content[0].text
        # The server is still there.
        ok = await client.call_tool("review", {"diff": "x", "risk": 1})
        assert ok.is_error is False

    run(transport, "auto", body)


@pytest.mark.parametrize("mode", MODES)
def test_the_local_model_gives_an_enforced_answer_offline(mode):
    async def body(client):
        result = no_secret(await client.call_tool("local_review", {"diff": "a one-line typo fix"}))
        assert result.is_error is False, result.content
        assert result.structured_content["decision"] in ("accept", "reject")
        l = ledger(result)
        assert l["adapter"] == "local" and l["wire_mode"] == "constrained"

    run("stdio", mode, body)


def test_a_long_call_reports_progress_and_a_cancelled_call_ends_upstream():
    async def body(client):
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, message))

        with anyio.move_on_after(20) as scope:
            async def call():
                await client.call_tool("slow", {"diff": "x"}, progress_callback=on_progress)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                while len(seen) < 2:
                    await anyio.sleep(0.1)
                tg.cancel_scope.cancel()
        assert not scope.cancelled_caught, "no progress within 20 s"
        assert seen[0][0] < seen[1][0], seen
        assert "bytes of the answer so far" in seen[0][1], seen
        ok = await client.call_tool("review", {"diff": "x", "risk": 1})
        assert ok.is_error is False

    run("http", "auto", body)
