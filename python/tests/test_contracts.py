"""A `[contracts.NAME]` of geode.toml from Python, as from the CLI, MCP and the gateway: its
template rendered with the keyword arguments, its schema and route; bad inputs and unknown
contracts refused before any request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import geode

DECISION = {"decision": "accept", "reason": "small and tested"}

CONTRACTS = """
[contracts.review]
prompt = "Review this change (risk {risk}): {diff}"
adapter = "openai-payg"
[contracts.review.inputs]
risk = "integer"
[contracts.review.schema]
type = "object"
properties = { decision = { enum = ["accept", "reject"] }, reason = { type = "string" } }
required = ["decision", "reason"]
additionalProperties = false
"""


def test_a_contract_runs_by_name_with_its_inputs(fake, tmp_path: Path, monkeypatch):
    f, env = fake([{"json": DECISION}])
    (tmp_path / "geode.toml").write_text(CONTRACTS)
    monkeypatch.chdir(tmp_path)
    client = geode.Client(env=env)
    got = client.contract("review", diff="+ let x = 1;", risk=3)
    assert got.value == DECISION
    assert got.ledger.adapter == "openai-payg"
    sent = json.dumps(f.model_requests()[0]["body"])
    assert "Review this change (risk 3): + let x = 1;" in sent

    with pytest.raises(geode.ConfigError, match="risk"):
        client.contract("review", diff="x", risk="high")
    with pytest.raises(geode.ConfigError, match='no contract named "nope"'):
        client.contract("nope")
    assert len(f.model_requests()) == 1
