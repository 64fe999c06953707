"""The request shapes of hermes-agent 0.19.0's other api modes, built by its own code, through the engine:
``anthropic_messages`` with extended thinking, ``codex_responses``, ``bedrock_converse``. Each gets a budget
in the field it uses and anchors on the usage its response reports."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine
from batontest.images import data_url, png

from baton_engine.agent.memos import AgentMemos
from baton_engine.tokens.anchor import DEFAULT_MARGIN_FLOOR_TOKENS

pytestmark = pytest.mark.hermes
WINDOW = 65536
TOOLS = [{"type": "function", "function": {"name": "todo", "description": "track tasks",
                                           "parameters": {"type": "object", "properties": {"item": {"type": "string"}}}}}]


def chat(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are Hermes."},
                                      {"role": "user", "content": "Plan the release"}]
    for i in range(turns):
        messages += [{"role": "assistant", "content": f"Step {i}: " + "check the build and the notes. " * 60},
                     {"role": "user", "content": f"ok, next after {i}"}]
    return messages


def anthropic(messages: list[dict[str, Any]]) -> dict[str, Any]:
    from agent.anthropic_adapter import build_anthropic_kwargs

    return build_anthropic_kwargs(model="claude-sonnet-4-5", messages=messages, tools=TOOLS, max_tokens=None,
                                  reasoning_config={"effort": "xhigh"})


def responses(messages: list[dict[str, Any]]) -> dict[str, Any]:
    from agent.transports.codex import ResponsesApiTransport

    return ResponsesApiTransport().build_kwargs(model="gpt-5", messages=messages, tools=TOOLS, max_tokens=WINDOW,
                                                reasoning_config=None)


def bedrock(messages: list[dict[str, Any]]) -> dict[str, Any]:
    from agent.transports.bedrock import BedrockTransport

    return BedrockTransport().build_kwargs(model="anthropic.claude-3-5-sonnet", messages=messages, tools=TOOLS,
                                           max_tokens=WINDOW)


def test_extended_thinking_stays_valid_when_the_cap_is_lowered(qwen3_env: Path, project: Path) -> None:
    engine = started_engine(project, window=WINDOW)
    request = anthropic(chat(80))
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 32000} and request["max_tokens"] == 64000
    before = copy.deepcopy(request)
    rewritten = engine.on_request(request, api_mode="anthropic_messages", model="claude-sonnet-4-5")
    assert request == before
    assert rewritten is not None and rewritten["max_tokens"] < 32000 + 4096  # below Hermes' budget + answer
    budget = rewritten["thinking"]["budget_tokens"]
    assert 1024 <= budget < rewritten["max_tokens"] and rewritten["max_tokens"] - budget == 4096


@pytest.mark.parametrize(("build", "api_mode", "cap"), [
    (responses, "codex_responses", lambda r: r["max_output_tokens"]),
    (bedrock, "bedrock_converse", lambda r: r["inferenceConfig"]["maxTokens"])])
def test_responses_and_bedrock_requests_are_budgeted_and_anchor_on_usage(
        qwen3_env: Path, project: Path, build: Any, api_mode: str, cap: Any) -> None:
    engine = started_engine(project, window=WINDOW)
    request = build(chat(30))
    rewritten = engine.on_request(request, api_mode=api_mode, model=request.get("model", request.get("modelId")))
    assert rewritten is not None and cap(rewritten) < WINDOW and cap(request) == WINDOW
    assert {k for k in rewritten if k not in ("max_output_tokens",)} == {k for k in request if k != "max_output_tokens"}
    assert engine.requests.ledger.sent is not None and engine.route.api_mode == api_mode
    observed = engine.requests.ledger.anchor.observations
    engine.update_from_response({"input_tokens": 9000, "output_tokens": 100})  # the provider's usage
    assert engine.requests.ledger.anchor.observations == observed + 1
    estimate = engine.requests.ledger.anchor.estimate(engine.requests.ledger.sent)  # the request sent, again: the provider's count
    assert estimate is not None and estimate.tokens == 9000 + DEFAULT_MARGIN_FLOOR_TOKENS


def test_an_image_request_is_one_key_for_the_estimate_and_hermes_anthropic_transport() -> None:
    """Hermes' own conversion of a stored image message to Anthropic blocks gives the view the estimate has:
    one count, and the image at its size's cost, not its base64."""
    from baton_engine.hermes import request_view
    from baton_engine.shapes.anthropic import ANTHROPIC
    from baton_engine.tokens import media

    stored = [{"role": "user", "content": [{"type": "text", "text": "What is on this screenshot?"},
                                           {"type": "image_url", "image_url": {"url": data_url(png(1440, 900, 200_000))}}]}]
    request = anthropic([{"role": "system", "content": "You are Hermes."}, *stored])
    transport = ANTHROPIC.read(request)
    # the estimate borrows the frame (tool_choice) of the agent's last request, as the engine's ledger does
    estimate = AgentMemos(request_view.project).estimate(stored, system_prompt="You are Hermes.", tools=TOOLS,
                                                         frame=transport.frame())
    assert transport is not None and transport.count_request() == estimate.count_request()
    assert transport.key == estimate.key
    assert media.placeholder(media.image_tokens(1440, 900), {"openai": media.image_tokens(1440, 900, "openai")}) \
        in transport.messages[1]["content"]


def with_tool_calls(turns: int) -> list[dict[str, Any]]:
    messages = chat(turns)
    for i in range(3):
        messages += [{"role": "assistant", "content": None, "tool_calls": [{
                         "id": f"call_{i}", "type": "function",
                         "function": {"name": "todo", "arguments": f'{{"item": "step {i}"}}'}}]},
                     {"role": "tool", "tool_call_id": f"call_{i}", "content": f"added step {i} " * 40}]
    return messages


@pytest.mark.parametrize(("build", "api_mode"), [(responses, "codex_responses"), (bedrock, "bedrock_converse")])
def test_the_estimate_and_the_wire_request_of_one_turn_are_counted_once(
        qwen3_env: Path, project: Path, build: Any, api_mode: str) -> None:
    """Hermes' estimator sees chat messages, its Responses / Converse transport sends what it built from them
    (no call ids, arguments re-serialised, the system prompt apart): one request, one count, and the request
    sent pairs with that count (the verification's input)."""
    engine = started_engine(project, window=WINDOW)
    first = with_tool_calls(4)
    engine.on_request(build(first), api_mode=api_mode, model="m")  # the route learns its wire format
    grown = [*first, {"role": "user", "content": "and the notes?"}]
    counted_before, hits_before = engine.requests.ledger.counted, engine.requests.ledger.memo_hits
    estimate = engine.count_estimate(grown[1:], system_prompt=grown[0]["content"], tools=TOOLS)
    engine.on_request(build(grown), api_mode=api_mode, model="m")
    assert engine.requests.ledger.counted - counted_before == 1 and engine.requests.ledger.memo_hits - hits_before == 1
    assert engine.requests.ledger.sent_count is not None and engine.requests.ledger.sent_count.tokens == estimate.tokens
    # a changed request is counted again: the content key is what the request says
    engine.on_request(build([*grown, {"role": "user", "content": "one more"}]), api_mode=api_mode, model="m")
    assert engine.requests.ledger.counted - counted_before == 2
