"""Requests of every API shape, built by hermes-agent 0.19.0's own transports from a session of large read and
write rounds (the chat history Hermes stores), for the shape tests and the shapes benchmark (needs hermes-agent).

Why here: the request a provider receives is what Hermes' transport makes of its stored messages (Anthropic's
``build_anthropic_kwargs``, the Responses and Bedrock transports); building it any other way would test Baton on
requests Hermes never sends. Images are user screenshots (``image_url`` data URLs, which each transport turns into
its own image part); thinking is the signed block Hermes stores as ``reasoning_details``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from batontest.images import data_url, png

TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} a file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path"]}}}
    for name in ("read_file", "write_file")]
SYSTEM = "You are Hermes, a coding agent."
SCREENSHOT = data_url(png(512, 384, payload=2048))


def _user(text: str, image: bool) -> dict[str, Any]:
    if not image:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text},
                                        {"type": "image_url", "image_url": {"url": SCREENSHOT}}]}


def history(target_tokens: int, *, result_lines: int = 60, images: bool = False) -> list[dict[str, Any]]:
    """A session of read and write rounds (parallel reads of ``result_lines`` lines each, a write, a user turn
    every few rounds, with a screenshot when ``images``) of roughly ``target_tokens`` of text (about 4 characters
    a token; images come on top)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      _user("Refactor the parser module, file by file.", images)]
    size, round_ = 0, 0
    while size < target_tokens * 4:
        reads = [f"call_r{round_}_{k}" for k in range(2)]
        messages.append({"role": "assistant", "content": f"Reading part {round_}.", "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "read_file",
                                                          "arguments": json.dumps({"path": f"src/m{round_}_{k}.py"})}}
            for k, call in enumerate(reads)]})
        for k, call in enumerate(reads):
            body = f"def f_{round_}_{k}(x):\n    return x * {round_} + {k}  # keep the tests green\n" * result_lines
            messages.append({"role": "tool", "tool_call_id": call, "content": body})
            size += len(body)
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_w{round_}", "type": "function", "function": {"name": "write_file", "arguments": json.dumps(
                {"path": f"src/m{round_}.py", "text": "x = 1\n" * 20})}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_w{round_}", "content": "written"})
        if round_ % 3 == 2:
            messages.append({"role": "assistant", "content": f"Round {round_} done."})
            messages.append(_user(f"Good, continue with round {round_ + 1}.", images))
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


# Per request kind: (Hermes' api_mode, the builder). Extended thinking is a kind of its shape.
BUILDERS: dict[str, tuple[str, Callable[[list[dict[str, Any]]], dict[str, Any]]]] = {
    "chat_completions": ("chat_completions", chat),
    "anthropic_messages": ("anthropic_messages", anthropic),
    "anthropic_thinking": ("anthropic_messages", lambda m: anthropic(m, thinking=True)),
    "codex_responses": ("codex_responses", responses),
    "bedrock_converse": ("bedrock_converse", bedrock),
}


def model_of(request: dict[str, Any]) -> Any:
    """The model a request names (Bedrock's ``modelId``)."""
    return request.get("model", request.get("modelId"))
