"""A server that cuts an over-long prompt with HTTP 200 (Ollama: issue 31 item 2, ollama#3839): the reported size
far below Baton's exact count is named as the server's cut, not a wrong tokenizer. Counts are NOT calibrated
down, the route budgets against the window the server states, the terminal is told once with the fix, and status
and doctor's route row say it.

Real parts: one agent's Baton as a host drives it (its window set, each request budgeted, each response's usage
observed), the real Qwen3 tokenizer, and a loopback server answering with Ollama's documented /api/ps and /api/show
bodies (``batontest.ollama_standin``; no Ollama server can be installed here).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from batontest.hosted_agents import installed, new_agent, qwen3_settings
from batontest.model_server import ModelServer, ScriptedPolicy
from batontest.ollama_standin import MODEL, OllamaStandin

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, NoView
from baton_engine.operations.doctor import doctor

HOST_WINDOW = 65_536  # what the host configures (Hermes' model.ollama_num_ctx, which /v1 ignores)
SERVED = 4096  # what Ollama runs the model with (the documented /api/ps context_length)
LONG = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Read the build log"},
        {"role": "assistant", "content": "The log says: step passed, cache warm, artifacts uploaded. " * 500},
        {"role": "user", "content": "Go on"}]


@pytest.fixture
def ollama() -> Iterator[OllamaStandin]:
    with OllamaStandin() as server:
        yield server


@contextmanager
def agent_on(base_url: str, project: Path) -> Iterator[Agent]:
    """An agent on ``MODEL`` at ``base_url``, the host's main route, with the host's window, for the block."""
    view = NoView(model=MODEL, base_url=base_url, context_length=HOST_WINDOW)
    with installed(BatonRuntime(qwen3_settings(), view)):
        yield new_agent(project, MODEL, HOST_WINDOW, base_url=base_url, provider="custom", session_id="s")


def send(agent: Agent, base_url: str) -> int:
    """The long conversation sent; the size Baton counted for the request sent."""
    agent.on_request({"model": MODEL, "messages": LONG, "max_tokens": 1024}, model=MODEL, base_url=base_url,
                     provider="custom")
    sent = agent.requests.ledger.sent_count
    assert sent is not None and sent.tokens is not None
    return sent.tokens


def compacts(agent: Agent, tokens: int) -> bool:
    return agent.compaction_decision(tokens, awaiting_usage=False).compact


def test_an_ollama_cut_is_named_not_calibrated_and_the_route_budgets_against_its_window(
        project: Path, ollama: OllamaStandin, capsys: pytest.CaptureFixture[str]) -> None:
    with agent_on(ollama.base_url, project) as agent:
        counted = send(agent, ollama.base_url)
        assert counted > SERVED and not compacts(agent, counted)  # the host's 65,536 holds it easily
        reported = SERVED - 310  # Ollama dropped the oldest messages until the prompt fit its num_ctx
        agent.observe_response_usage({"prompt_tokens": reported, "completion_tokens": 12, "total_tokens": 0})
        status = agent.status()
        verification = status["verification"]
        assert verification["verdict"] != "calibrated" and verification["mismatches"] == 0
        assert verification["truncations"] == 1
        assert verification["last_truncation"] == {"counted": counted, "reported": reported, "window": SERVED}
        assert status["tokenizer"]["exact"] is True  # the next count is still the tokenizer's own
        assert status["window"]["effective"] == SERVED and "/api/ps" in status["window"]["source"]
        assert compacts(agent, counted)  # budgeted against the server's window now
        fits = send(agent, ollama.base_url)  # the same transcript again: shortened by Baton to fit 4,096
        assert fits <= SERVED
        agent.observe_response_usage({"prompt_tokens": fits, "completion_tokens": 12, "total_tokens": 0})
        assert agent.status()["verification"]["verdict"] == "confirmed"  # the tokenizer was right all along
        notices = agent.status()["notices"]
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("baton: the server cut")]
    assert len(lines) == 1
    assert f"Baton counted {counted:,} tokens, the server reported {reported:,} and serves {SERVED:,}" in lines[0]
    assert "PARAMETER num_ctx N" in lines[0] and "OLLAMA_CONTEXT_LENGTH=N" in lines[0] and "/api/chat" in lines[0]
    assert lines[0].removeprefix("baton: ") in notices
    assert sum(1 for method, path, _ in ollama.asked if path == "/api/ps") == 1  # asked once per route
    route = next(check for check in doctor(project)["checks"] if check["name"] == "route")  # the metrics log's word
    assert route["status"] == "warn" and route["detail"].startswith("the server cut 1 prompt(s) to its window")
    assert f"counted {counted}, reported {reported}, window {SERVED}" in route["detail"]


def test_a_lower_report_within_the_servers_window_is_a_wrong_tokenizer_still(
        project: Path, ollama: OllamaStandin) -> None:
    """Ollama serves more than Baton counted: nothing was cut, so a lower report calibrates the route as before."""
    ollama.ps["models"][0]["context_length"] = 32_768
    with agent_on(ollama.base_url, project) as agent:
        counted = send(agent, ollama.base_url)
        agent.observe_response_usage({"prompt_tokens": int(counted * 0.8), "completion_tokens": 1, "total_tokens": 0})
        verification = agent.status()["verification"]
    assert verification["verdict"] == "calibrated" and verification["truncations"] == 0


def test_a_server_that_states_no_window_is_not_taken_for_a_cut(project: Path) -> None:
    with ModelServer(ScriptedPolicy([])) as server, agent_on(server.base_url, project) as agent:
        send(agent, server.base_url)
        agent.observe_response_usage({"prompt_tokens": SERVED - 310, "completion_tokens": 1, "total_tokens": 0})
        verification = agent.status()["verification"]
    assert verification["verdict"] == "calibrated" and verification["truncations"] == 0
