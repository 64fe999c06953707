"""Every request shape, built by hermes-agent 0.19.0's own transports from a history of large read and write
rounds, at sizes from below to far above the window, through the engine as Hermes' middleware calls it: every
request Baton returns is one its provider accepts (``batontest.validators``: the providers' SDK types and pairing
rules) and fits (its size, counted again from the request sent by the route's own tokenizer, plus its cap, within
the window). The failures of issue 30 at 9dba563: an orphan ``tool_result`` / ``toolResult`` after the emergency
shortening, Baton's note as string content on Bedrock, a Responses request never shortened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine
from batontest.validators import VALIDATORS

from baton_engine.request import find_cap

pytestmark = pytest.mark.hermes
WINDOW = 64_000
SIZES = (0.5, 0.95, 1.2, 1.8, 2.2, 3.0)
TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} a file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path"]}}}
    for name in ("read_file", "write_file")]
SYSTEM = "You are Hermes, a coding agent."


def history(target_tokens: int) -> list[dict[str, Any]]:
    """A session of read and write rounds (parallel reads, a write, a user turn every few rounds) of roughly
    ``target_tokens`` (about 4 characters a token)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": "Refactor the parser module, file by file."}]
    size, round_ = 0, 0
    while size < target_tokens * 4:
        reads = [f"call_r{round_}_{k}" for k in range(2)]
        messages.append({"role": "assistant", "content": f"Reading part {round_}.", "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "read_file",
                                                          "arguments": json.dumps({"path": f"src/m{round_}_{k}.py"})}}
            for k, call in enumerate(reads)]})
        for k, call in enumerate(reads):
            body = f"def f_{round_}_{k}(x):\n    return x * {round_} + {k}  # keep the tests green\n" * 60
            messages.append({"role": "tool", "tool_call_id": call, "content": body})
            size += len(body)
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_w{round_}", "type": "function", "function": {"name": "write_file", "arguments": json.dumps(
                {"path": f"src/m{round_}.py", "text": "x = 1\n" * 20})}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_w{round_}", "content": "written"})
        if round_ % 3 == 2:
            messages.append({"role": "assistant", "content": f"Round {round_} done."})
            messages.append({"role": "user", "content": f"Good, continue with round {round_ + 1}."})
        round_ += 1
    return messages


def anthropic(messages: list[dict[str, Any]], thinking: bool = False) -> dict[str, Any]:
    """Hermes' Anthropic request; with thinking, every assistant message carries the signed thinking block Hermes
    stores (``reasoning_details``; its adapter sends it back on the latest assistant message only)."""
    from agent.anthropic_adapter import build_anthropic_kwargs

    if thinking:
        messages = [{**m, "reasoning_details": [{"type": "thinking", "thinking": f"Plan for step {i}.",
                                                 "signature": f"sig-{i}"}]} if m["role"] == "assistant" else m
                    for i, m in enumerate(messages)]

    return build_anthropic_kwargs(model="claude-sonnet-4-5", messages=messages, tools=TOOLS, max_tokens=16_384,
                                  reasoning_config={"effort": "low"} if thinking else None)


def responses(messages: list[dict[str, Any]]) -> dict[str, Any]:
    from agent.transports.codex import ResponsesApiTransport

    return ResponsesApiTransport().build_kwargs(model="gpt-5", messages=messages, tools=TOOLS, max_tokens=8_192,
                                                reasoning_config=None)


def bedrock(messages: list[dict[str, Any]]) -> dict[str, Any]:
    from agent.transports.bedrock import BedrockTransport

    return BedrockTransport().build_kwargs(model="anthropic.claude-3-5-sonnet", messages=messages, tools=TOOLS,
                                           max_tokens=8_192)


def chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "qwen3", "messages": messages, "tools": TOOLS, "max_tokens": 8_192}


BUILDERS = {"anthropic_messages": anthropic, "anthropic_thinking": lambda m: anthropic(m, thinking=True),
            "codex_responses": responses, "bedrock_converse": bedrock, "chat_completions": chat}


def sent_size(engine: Any, api_mode: str, request: dict[str, Any]) -> int:
    """The request as sent, read afresh and counted exactly by the route's own tokenizer."""
    from baton_engine.hermes import request_view

    view = request_view.from_provider_kwargs(request, api_mode)
    counted = engine.requests.counting().count_chat(view.count_request())
    assert counted.exact and counted.tokens is not None
    return counted.tokens


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_shape_is_valid_and_fits_at_every_size(qwen3_env: Path, project: Path, name: str, size: float) -> None:
    api_mode = "anthropic_messages" if name == "anthropic_thinking" else name
    engine = started_engine(project, window=WINDOW)
    request = BUILDERS[name](history(int(size * WINDOW)))
    assert VALIDATORS[api_mode](request) == []  # Hermes built a valid request
    rewritten = engine.on_request(request, api_mode=None if api_mode == "chat_completions" else api_mode,
                                  model=request.get("model", request.get("modelId")))
    sent = rewritten if rewritten is not None else request
    assert VALIDATORS[api_mode](sent) == []
    cap = find_cap(sent)
    assert cap is not None
    assert sent_size(engine, api_mode, sent) + cap.value <= WINDOW
    if size >= 1.2:  # far over the window: only a shortened request can fit
        assert engine.requests.ledger.request_compactions == 1
        kept = {k: v for k, v in sent.items() if k not in ("messages", "input", "max_tokens", "max_output_tokens",
                                                           "inferenceConfig", "thinking")}
        assert kept == {k: v for k, v in request.items() if k in kept} and set(kept) | {"messages", "input"} >= (
            set(request) - {"max_tokens", "max_output_tokens", "inferenceConfig", "thinking"})
