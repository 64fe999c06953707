"""One agent's project and request budgeter through the host interface (``agent/host.Host``), with a fake host.

Why a fake host: the budgeter and the project are core (``baton_engine.agent``); what they need of the agent they
run in is the ``Host`` seam alone, so they are tested here without Hermes installed (``batontest.fake_host``).
(This folder is not ``tests/agent``: with ``tests`` on the path, that would be found as Hermes' ``agent`` package.)
"""

from __future__ import annotations

from pathlib import Path

from batontest.fake_host import FakeHost

from baton_engine.agent.host import Host
from baton_engine.agent.project import Project
from baton_engine.agent.requests import AgentWindow, RequestBudgeter, ScanAhead
from baton_engine.agent.runtime import DEFAULT_CONTEXT_LENGTH

MESSAGES = [{"role": "user", "content": "hello there, how are the tokens today?"},
            {"role": "assistant", "content": "counted once each", "note": "host bookkeeping, never sent"}]


def budgeter(host: Host, project_dir: Path | None = None) -> RequestBudgeter:
    return RequestBudgeter(host, AgentWindow(0.75), Project(host, project_dir), ScanAhead())


def test_the_project_is_the_explicit_one_else_the_hosts_working_directory(tmp_path: Path) -> None:
    host = FakeHost(tmp_path / "agent")
    assert Project(host).path() == tmp_path / "agent"
    assert Project(host, tmp_path / "named").path() == tmp_path / "named"


def test_the_window_is_named_by_the_host(tmp_path: Path) -> None:
    requests = budgeter(FakeHost(tmp_path))
    assert requests.window_source() == (DEFAULT_CONTEXT_LENGTH, "fake window")


def test_an_estimate_is_the_hosts_view_projected_once_per_message(tmp_path: Path) -> None:
    host = FakeHost(tmp_path)
    requests = budgeter(host)
    first = requests.count_estimate(MESSAGES, system_prompt="You are a test.")
    again = requests.count_estimate(MESSAGES, system_prompt="You are a test.")
    assert first.tokens is not None and again.tokens == first.tokens
    assert host.projected == len(MESSAGES)  # the agent's memo keeps the host's projection
    view = requests.view_of(MESSAGES)
    assert all("note" not in message for message in view.messages)


def test_a_request_is_read_in_the_hosts_shape_and_budgeted(tmp_path: Path) -> None:
    requests = budgeter(FakeHost(tmp_path))
    request = {"model": "fake-model", "messages": [dict(m) for m in MESSAGES[:1]], "max_tokens": 10**9}
    rewritten = requests.on_request(request, model="fake-model", base_url="http://127.0.0.1:9/v1")
    assert rewritten is not None and rewritten["max_tokens"] < DEFAULT_CONTEXT_LENGTH
    assert requests.route.model == "fake-model" and requests.ledger.sent_requests == 1
    anthropic = {"model": "fake-model", "system": "You are a test.", "max_tokens": 10**9,
                 "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]}
    assert requests.on_request(anthropic, api_mode="anthropic", model="fake-model") is not None
    assert requests.route.api_mode == "anthropic"
