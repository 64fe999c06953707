"""One agent's metrics (``agent/metrics``) through a fake host: each budgeted request, response and the tools' figure
land in the session's log with the numbers the agent itself decided on (the route's verdict too, for doctor), and a
log that cannot be written changes nothing the agent gets.

Why here: what is logged, and when, is the core's; a host only delivers the requests and the usage (Hermes: the
middleware, ``update_from_response``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from batontest.hermes_home import initialised_project
from batontest.started_agent import qwen3_tokenizer, settings, started_agent

from baton_engine.agent.agent import Agent
from baton_engine.metrics import read

MESSAGES = [{"role": "system", "content": "You are a test agent."}, {"role": "user", "content": "Plan the release"},
            {"role": "assistant", "content": "Step one: tag the build. " * 30}, {"role": "user", "content": "Go on"}]


def qwen3_agent(project: Path) -> Agent:
    return started_agent(project, settings(tokenizer=qwen3_tokenizer()))


def budget(agent: Agent) -> dict[str, Any]:
    rewritten = agent.on_request({"model": "qwen3", "messages": MESSAGES, "max_tokens": 250000})
    return rewritten or {}


def test_requests_usage_and_the_route_verdict_are_logged(project: Path) -> None:
    agent = qwen3_agent(project)
    first = budget(agent)
    counted = agent.requests.ledger.memo.tokens
    agent.observe_response_usage({"prompt_tokens": counted * 2, "completion_tokens": 5})  # a wrong tokenizer
    second = budget(agent)
    data = read.report_data(read.sessions(project / ".baton")[0])
    assert [r["prompt"] for r in data["requests"]][0] == counted
    assert [r["cap_sent"] for r in data["requests"]] == [first["max_tokens"], second["max_tokens"]]
    assert data["requests"][0]["reported"] == counted * 2
    assert [r["mode"] for r in data["requests"]] == ["exact", "calibrated"]
    assert data["mode_changes"] == [{"request": 2, "from": "exact", "to": "calibrated", "reason": None}]
    assert data["route_check"]["verdict"] == "calibrated" == agent.requests.ledger.check.verdict
    assert data["route_check"]["ratio"] == 2.0 and data["summary"]["route_verdict"] == "calibrated"


def test_an_unwritable_log_changes_nothing_the_agent_gets(project: Path, tmp_path: Path) -> None:
    expected = budget(qwen3_agent(project))
    blocked = initialised_project(tmp_path / "blocked")
    (blocked / ".baton" / "metrics").write_text("not a directory")
    agent = qwen3_agent(blocked)
    assert budget(agent) == expected and expected["max_tokens"] < 250000
    agent.observe_response_usage({"prompt_tokens": 100, "completion_tokens": 5})
    assert agent.requests.metrics.dropped == 2 and agent.requests.ledger.usage_observed()


def test_the_tool_schemas_figure_status_measured_reaches_the_report_once(project: Path) -> None:
    """Issue 31 item 4: what Baton's tool schemas add to every request, in the log and ``baton report``, taken
    from the status that measured it (no count of its own), logged once however often status is read."""
    from baton_engine.operations.maintenance import report

    agent = qwen3_agent(project)
    budget(agent)
    figure = agent.status()["tools"]
    assert agent.status()["tools"] == figure
    log = read.sessions(project / ".baton")[0]
    assert [e["ev"] for e in read.events(log)[0]].count("tools") == 1
    assert figure["schema_tokens"] == 569 and figure["counted_by"] == "hf:qwen3"  # docs/hermes.md, Qwen3
    data = report(project)
    assert data["tools"] == figure and data["summary"]["tool_schema_tokens"] == 569
    assert "<span>Baton&#x27;s tool schemas</span><b>569</b>" in Path(data["html"]).read_text(encoding="utf-8")
