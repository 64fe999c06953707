"""A provider that counts more than Baton: its usage calibrates the route, status and the terminal say so once,
and the next cap is on the provider's scale."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from batontest.hosted_agents import BASE_URL, MESSAGES, MODEL, installed, new_agent, qwen3_tokens, route_runtime

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime

CONFIGURED = 131072
WINDOW = 200000


@pytest.fixture
def runtime() -> Iterator[BatonRuntime]:
    with installed(route_runtime(CONFIGURED)) as runtime:
        yield runtime


def sent_cap(agent: Agent) -> int:
    request = {"model": MODEL, "messages": MESSAGES, "max_tokens": 250000}
    rewritten = agent.on_request(request, model=MODEL, base_url=BASE_URL, provider="custom")
    assert rewritten is not None
    return rewritten["max_tokens"]


def test_a_provider_that_counts_more_calibrates_the_route_and_status_says_so(
        project: Path, runtime: BatonRuntime, capsys: pytest.CaptureFixture[str]) -> None:
    """The response reports 30% more than Baton counted for the request it answers: the route is calibrated,
    status says so in ``tokenizer.counting`` and ``verification``, and the next cap is on the provider's scale."""
    prompt = qwen3_tokens(runtime, MESSAGES)
    agent = new_agent(project, MODEL, WINDOW, base_url=BASE_URL, provider="custom", session_id="s")
    usage = {"prompt_tokens": int(prompt * 1.3), "completion_tokens": 5, "total_tokens": 0}
    first = sent_cap(agent)
    agent.observe_response_usage(usage)
    status = agent.status()
    assert status["tokenizer"]["counting"] == "calibrated" and status["tokenizer"]["exact"] is False
    assert status["verification"]["verdict"] == "calibrated"
    assert status["verification"]["last_reported"] == int(prompt * 1.3)
    assert "undercounts this server by 30%" in status["verification"]["advice"]
    assert sent_cap(agent) < first
    agent.observe_response_usage(usage)
    said = [line for line in capsys.readouterr().err.splitlines() if "calibrated" in line]
    assert len(said) == 1 and said[0].startswith("baton: counts disagree with the provider") and \
        "undercounts this server by 30%" in said[0]  # on the terminal once, not only in errors.log
    assert agent.status()["notices"] == [said[0].removeprefix("baton: ")]
