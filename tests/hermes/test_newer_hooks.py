"""Hermes 0.20+ hooks (upstream main, not on PyPI), against stubs of their documented shapes, and the
usage anchor they feed; 0.19.0 never calls them, so they are optional for the engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import activated
from batontest.faulty_servers import refused_url

from baton_engine.agent.runtime import BatonRuntime, get_runtime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
BASE_URL = "http://127.0.0.1:9/v1"
SYSTEM = {"role": "system", "content": "You are Hermes."}
TOOLS = [{"type": "function", "function": {"name": "todo", "description": "tasks",
                                           "parameters": {"type": "object", "properties": {}}}}]


def conversation(n: int) -> list[dict]:
    out = [{"role": "user", "content": "Plan the release."}]
    for i in range(n):
        out += [{"role": "assistant", "content": f"Step {i}: " + ("details " * 60).strip()}, {"role": "user", "content": "go"}]
    return out


def engine_for(project: Path, env: dict[str, str] | None = None) -> BatonContextEngine:
    set_runtime(BatonRuntime(load_settings(env=env) if env is not None else load_settings()))
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("qwen3", 65536, base_url=BASE_URL, provider="custom")
    return engine


def test_select_context_never_counts_and_never_rewrites(project: Path, qwen3_env: Path) -> None:
    """Hermes 0.20+ asks select_context BEFORE its sanitizers (another view than the one sent): it scans ahead
    and costs no tokenizer call; the middleware's count of the request as sent is the one count."""
    engine = engine_for(project)
    with activated() as activation:
        agent = LoopAgent(engine, TOOLS)
        messages = [SYSTEM, *conversation(3)]
        request = {"model": "qwen3", "messages": messages, "tools": TOOLS, "max_tokens": 1000}
        in_agent(agent, activation.llm_request, request=request, model="qwen3", base_url=BASE_URL)
        grown = [*messages, {"role": "assistant", "content": "more"}, {"role": "user", "content": "next"}]
        calls = get_runtime().counter().stats().backend_calls
        scanned = engine.scan_ahead.upto
        assert engine.select_context(grown, conversation_messages=grown[1:], incoming_message="next",
                                     budget_tokens=65536) is None
        assert get_runtime().counter().stats().backend_calls == calls  # no count of the pre-sanitizer view
        assert engine.scan_ahead.upto > scanned  # the new messages were scanned ahead for the next compaction
        in_agent(agent, activation.llm_request, request={**request, "messages": grown}, model="qwen3",
                 base_url=BASE_URL)
        assert get_runtime().counter().stats().backend_calls == calls + 1  # the request as sent: one count
        assert engine.select_context("not a list") is None


def test_usage_from_responses_anchors_counts_when_the_tokenizer_is_down(project: Path) -> None:
    """Tokenizer refused: the first request is rough + margin; after one response's real prompt_tokens
    (update_from_response on 0.19.0, on_turn_complete on 0.20+) the next is anchored on it."""
    engine = engine_for(project, env={"BATON_TOKENIZER_BACKEND": "vllm", "BATON_TOKENIZER_URL": refused_url(),
                                      "BATON_TOKENIZER_TIMEOUT_SECONDS": "0.5"})
    with activated() as activation:
        agent = LoopAgent(engine, TOOLS)
        messages = [SYSTEM, *conversation(4)]
        request = {"model": "qwen3", "messages": messages, "tools": TOOLS, "max_tokens": 65536}
        in_agent(agent, activation.llm_request, request=request, model="qwen3", base_url=BASE_URL)
        assert engine.get_status()["tokenizer"]["counting"] == "rough+margin"
        engine.update_from_response({"prompt_tokens": 3_000, "completion_tokens": 10, "total_tokens": 3_010})
        grown = [*messages, {"role": "assistant", "content": "ok " * 30}, {"role": "user", "content": "more"}]
        answer = in_agent(agent, activation.llm_request, request={**request, "messages": grown}, model="qwen3",
                          base_url=BASE_URL)
        status = engine.get_status()["tokenizer"]
        assert status["counting"] == "anchored" and status["anchor_observations"] == 1
        anchored = engine.requests.ledger.memo
        assert 3_000 < anchored.tokens < 3_000 + 1_024  # the anchor plus the scaled delta and its margin
        assert answer["request"]["max_tokens"] == 65536 - anchored.tokens  # the margin is already inside
        assert status["breaker"]["state"] == "open"
        engine.on_turn_complete(grown, usage={"prompt_tokens": 3_100}, turn_id="t1", api_call_count=2)
        assert engine.get_status()["tokenizer"]["anchor_observations"] == 2
        engine.on_turn_complete(grown)  # no usage: nothing to observe, never raises
