"""A server that cuts an over-long prompt with HTTP 200 (Ollama: issue 31 item 2, ollama#3839): the reported size
far below Baton's exact count is named as the server's cut, not a wrong tokenizer. Counts are NOT calibrated
down, the route budgets against the window the server states, the terminal is told once with the fix, and status
and doctor's route row say it.

Real parts: the engine as Hermes drives it (deep-copied per agent, ``update_model``, the ``llm_request`` middleware,
``update_from_response``), the real Qwen3 tokenizer, and a loopback server answering with Ollama's documented
/api/ps and /api/show bodies (``batontest.ollama_standin``; no Ollama server can be installed here).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import activated
from batontest.model_server import ModelServer, ScriptedPolicy
from batontest.ollama_standin import MODEL, OllamaStandin

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.config import HermesView
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation
from baton_engine.operations.doctor import doctor
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
HERMES_WINDOW = 65_536  # what config.yaml says (Hermes' model.ollama_num_ctx, which /v1 ignores)
SERVED = 4096  # what Ollama runs the model with (the documented /api/ps context_length)
LONG = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Read the build log"},
        {"role": "assistant", "content": "The log says: step passed, cache warm, artifacts uploaded. " * 500},
        {"role": "user", "content": "Go on"}]


@pytest.fixture
def ollama(qwen3_env: Path) -> Iterator[OllamaStandin]:
    with OllamaStandin() as server:
        yield server


def agent_on(base_url: str, project: Path) -> tuple[Activation, LoopAgent, Any]:
    set_runtime(BatonRuntime(load_settings(), HermesView(engine="baton", model=MODEL, base_url=base_url,
                                                         context_length=HERMES_WINDOW)))
    engine = copy.deepcopy(BatonContextEngine(project_dir=project))
    engine.update_model(MODEL, HERMES_WINDOW, base_url=base_url, provider="custom")
    engine.on_session_start("s", platform="cli", model=MODEL)
    return LoopAgent(engine, None), engine


def send(activation: Activation, agent: LoopAgent, base_url: str) -> None:
    in_agent(agent, activation.llm_request, request={"model": MODEL, "messages": LONG, "max_tokens": 1024},
             model=MODEL, base_url=base_url, provider="custom")


def test_an_ollama_cut_is_named_not_calibrated_and_the_route_budgets_against_its_window(
        project: Path, ollama: OllamaStandin, capsys: pytest.CaptureFixture[str]) -> None:
    with activated() as activation:
        agent, engine = agent_on(ollama.base_url, project)
        send(activation, agent, ollama.base_url)
        counted = engine.requests.ledger.sent_count.tokens
        assert counted > SERVED and not engine.should_compress(counted)  # Hermes' 65,536 holds it easily
        reported = SERVED - 310  # Ollama dropped the oldest messages until the prompt fit its num_ctx
        engine.update_from_response({"prompt_tokens": reported, "completion_tokens": 12, "total_tokens": 0})
        status = engine.get_status()
        verification = status["verification"]
        assert verification["verdict"] != "calibrated" and verification["mismatches"] == 0
        assert verification["truncations"] == 1
        assert verification["last_truncation"] == {"counted": counted, "reported": reported, "window": SERVED}
        assert status["tokenizer"]["exact"] is True  # the next count is still the tokenizer's own
        assert status["window"]["effective"] == SERVED and "/api/ps" in status["window"]["source"]
        assert engine.should_compress(counted)  # budgeted against the server's window now
        send(activation, agent, ollama.base_url)  # the same transcript again: shortened by Baton to fit 4,096
        fits = engine.requests.ledger.sent_count.tokens
        assert fits <= SERVED
        engine.update_from_response({"prompt_tokens": fits, "completion_tokens": 12, "total_tokens": 0})
        assert engine.get_status()["verification"]["verdict"] == "confirmed"  # the tokenizer was right all along
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("baton: the server cut")]
    assert len(lines) == 1
    assert f"Baton counted {counted:,} tokens, the server reported {reported:,} and serves {SERVED:,}" in lines[0]
    assert "PARAMETER num_ctx N" in lines[0] and "OLLAMA_CONTEXT_LENGTH=N" in lines[0] and "/api/chat" in lines[0]
    assert lines[0].removeprefix("baton: ") in engine.get_status()["notices"]
    assert sum(1 for method, path, _ in ollama.asked if path == "/api/ps") == 1  # asked once per route
    route = next(check for check in doctor(project)["checks"] if check["name"] == "route")  # the metrics log's word
    assert route["status"] == "warn" and route["detail"].startswith("the server cut 1 prompt(s) to its window")
    assert f"counted {counted}, reported {reported}, window {SERVED}" in route["detail"]


def test_a_lower_report_within_the_servers_window_is_a_wrong_tokenizer_still(
        project: Path, ollama: OllamaStandin) -> None:
    """Ollama serves more than Baton counted: nothing was cut, so a lower report calibrates the route as before."""
    ollama.ps["models"][0]["context_length"] = 32_768
    with activated() as activation:
        agent, engine = agent_on(ollama.base_url, project)
        send(activation, agent, ollama.base_url)
        counted = engine.requests.ledger.sent_count.tokens
        engine.update_from_response({"prompt_tokens": int(counted * 0.8), "completion_tokens": 1, "total_tokens": 0})
        verification = engine.get_status()["verification"]
    assert verification["verdict"] == "calibrated" and verification["truncations"] == 0


def test_a_server_that_states_no_window_is_not_taken_for_a_cut(project: Path, qwen3_env: Path) -> None:
    with ModelServer(ScriptedPolicy([])) as server, activated() as activation:
        agent, engine = agent_on(server.base_url, project)
        send(activation, agent, server.base_url)
        engine.update_from_response({"prompt_tokens": SERVED - 310, "completion_tokens": 1, "total_tokens": 0})
        verification = engine.get_status()["verification"]
    assert verification["verdict"] == "calibrated" and verification["truncations"] == 0
