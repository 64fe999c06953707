"""A model switch (Hermes: ``/model`` or a fallback provider, through ``update_model``) moves the agent's route:
the budget, the tokenizer and the window follow the model, a route's counts start over, a model whose tokenizer
Baton does not know is counted rough with its measured margin, and a provider without a server forgets the old one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import unconfirmed_cap
from batontest.hosted_agents import (
    BASE_URL, MESSAGES, MODEL, installed, new_agent, qwen3_tokens, route_runtime, start_session, switch_model,
)

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime
from baton_engine.tokens.rough import estimate_chat_request, request_margin

CONFIGURED = 131072
OTHER_SERVER = "http://127.0.0.1:10/v1"
SMALL, LARGE = 65536, 200000
ASKED = 250000  # more than any window: the answer is the window minus the prompt
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def runtime() -> Iterator[BatonRuntime]:
    """Qwen3 counts the host's configured model at its server (the main route); any other model is auto's."""
    with installed(route_runtime(CONFIGURED)) as runtime:
        yield runtime


def sent_cap(agent: Agent, model: str = MODEL) -> int | None:
    request = {"model": model, "messages": MESSAGES, "max_tokens": ASKED}
    rewritten = agent.on_request(request, model=model, base_url=BASE_URL, provider="custom")
    return None if rewritten is None else rewritten["max_tokens"]


def test_route_and_window_follow_the_model(project: Path, runtime: BatonRuntime) -> None:
    """The budget follows the model; status says which route and how it counts."""
    prompt = qwen3_tokens(runtime, MESSAGES)
    agent = new_agent(project, MODEL, LARGE, base_url=BASE_URL, provider="custom", session_id="s")
    assert sent_cap(agent) == unconfirmed_cap(LARGE, prompt)
    switch_model(agent, "fallback-model", SMALL, base_url=OTHER_SERVER, provider="vllm")
    assert agent.requests.ledger.counted == 0  # another model: its counts, anchor and verdict start over
    # The fallback model is not the configured one: its tokenizer is chosen for it (auto: no OpenAI-family name,
    # so rough + the fallback margin, until its provider's usage anchors it), not Qwen3's.
    cap = sent_cap(agent, model="fallback-model")
    status = agent.status()
    assert status["tokenizer"]["counting"] == "rough+margin" and "auto for model 'fallback-model'" in \
        status["tokenizer"]["chosen_by"]
    rough = estimate_chat_request({"messages": MESSAGES})
    assert cap == SMALL - rough - request_margin({"messages": MESSAGES}, rough, runtime.settings.fallback_margin_tokens)
    route = status["route"]
    assert route["model"] == "fallback-model" and route["provider"] == "custom"  # the request's own provider
    assert status["window"]["effective"] == SMALL
    switch_model(agent, MODEL, LARGE, base_url=BASE_URL, provider="custom")
    assert sent_cap(agent) == unconfirmed_cap(LARGE, prompt)  # back: Qwen3 counts again


def real_history(tokens: int, runtime: BatonRuntime) -> list[dict[str, Any]]:
    """A coding session's history of about ``tokens`` Qwen3 tokens: this repository's benchmark report (tables of
    figures) and its own source files read one by one as tool results (real numbers, code, identifiers)."""
    report = (REPO / "benchmarks" / "results" / "REPORT.md").read_text()
    sources = [report[i:i + 6000] for i in range(0, len(report), 6000)][:3]
    sources += [path.read_text() for path in sorted((REPO / "baton_engine").rglob("*.py"))]
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."},
                                     {"role": "user", "content": "Read the engine's sources and review them."}]
    for number, text in enumerate(sources):
        if qwen3_tokens(runtime, history) >= tokens:
            break
        call = {"id": f"call_{number}", "type": "function",
                "function": {"name": "read_file", "arguments": f'{{"path": "file_{number}"}}'}}
        history += [{"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"call_{number}", "content": text[:6000]}]
    return history


@pytest.mark.parametrize("size", [18_900, 28_900])
def test_after_a_model_switch_to_an_unknown_tokenizer_the_rough_count_keeps_its_measured_margin(
        project: Path, runtime: BatonRuntime, size: int) -> None:
    """Issue 30: after a switch to a 32,768 window on another server whose tokenizer Baton does not know, the
    route counted rough + a fixed 1,024: a real 18,908-token prompt was counted 14,518 and left with a cap of
    18,250 (37,158 > 32,768). The rough count's margin is now its measured error (``rough.ROUGH_MARGIN_SHARE``
    and a token per digit or non-ASCII character): the prompt the server counts plus the cap fits."""
    agent = new_agent(project, MODEL, LARGE, base_url=BASE_URL, provider="custom", session_id="s")
    switch_model(agent, "other-model", 32_768, base_url=OTHER_SERVER, provider="custom")
    history = real_history(size, runtime)
    sent = agent.on_request({"model": "other-model", "messages": history, "max_tokens": ASKED},
                            model="other-model", base_url=OTHER_SERVER, provider="custom")
    assert sent is not None and agent.status()["tokenizer"]["counting"] == "rough+margin"
    assert qwen3_tokens(runtime, sent["messages"]) + sent["max_tokens"] <= 32_768


def test_a_move_to_a_route_without_base_url_forgets_the_old_server(project: Path, runtime: BatonRuntime) -> None:
    """A host names an empty server for a provider without one (Hermes passes ``base_url=""`` for Bedrock): the old
    server's URL must not stay on the route, or auxiliary calls to that server would still be budgeted against this
    window. A call that names no server (a session's start) keeps the route's."""
    agent = new_agent(project, MODEL, LARGE, base_url=BASE_URL, provider="custom", session_id="s")
    assert agent.aux_matches_route(MODEL, "http://elsewhere:1/v1") is False
    switch_model(agent, "bedrock-model", SMALL, base_url="", provider="bedrock", api_mode="bedrock_converse")
    route = agent.status()["route"]
    assert route["base_url"] is None and route["model"] == "bedrock-model" and route["provider"] == "bedrock"
    start_session(agent, "s2", model="bedrock-model")
    assert agent.route.base_url is None and agent.aux_matches_route("bedrock-model", None)
    switch_model(agent, MODEL, LARGE, base_url=BASE_URL + "/", provider="custom")
    assert agent.route.base_url == BASE_URL
    start_session(agent, "s3", model=MODEL)
    assert agent.route.base_url == BASE_URL
