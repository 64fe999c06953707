"""Property tests of the shape adapters: conversations of every shape (tool rounds with parallel calls, images,
signed thinking, Responses reasoning items), from far below to far above a budget, read into units, shortened and
written back. Every request written validates (``batontest.validators``: the providers' SDK types and pairing
rules) and fits (its conversation, read again from the request written, within the budget); a request read and
not shortened reads back to the same view; fields Baton does not change are the request's own objects."""

from __future__ import annotations

import json
from typing import Any

import pytest
from batontest.validators import VALIDATORS
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from baton_engine.compaction.shortening import shorten
from baton_engine.shapes.anthropic import ANTHROPIC
from baton_engine.shapes.bedrock import BEDROCK
from baton_engine.shapes.chat import CHAT
from baton_engine.shapes.responses import RESPONSES
from baton_engine.tokens.rough import estimate_messages_tokens_rough

SHAPES = {"chat_completions": CHAT, "anthropic_messages": ANTHROPIC, "codex_responses": RESPONSES,
          "bedrock_converse": BEDROCK}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TOOL = {"name": "read_file", "description": "read a file",
        "schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}

# A turn: (user text size, image?, rounds of (parallel calls, result size), final answer?)
turns = st.lists(st.tuples(st.integers(1, 400), st.booleans(),
                           st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3000)), max_size=4), st.booleans()),
                 min_size=1, max_size=8)


def words(n: int, seed: str) -> str:
    return " ".join(f"{seed}{i % 97}" for i in range(n))


def render(shape: str, conversation: list[Any], thinking: bool) -> dict[str, Any]:
    """One generated conversation as a request of ``shape`` (the way each provider's docs show it)."""
    items: list[dict[str, Any]] = []
    call = 0
    last_turn = len(conversation) - 1
    for t, (size, image, rounds, answered) in enumerate(conversation):
        text = f"request {t}: " + words(size, "u")
        if shape == "chat_completions":
            content: Any = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {
                "url": f"data:image/png;base64,{PNG}", "detail": "low"}}] if image else text
            items.append({"role": "user", "content": content})
        elif shape == "anthropic_messages":
            blocks = [{"type": "text", "text": text}]
            if image:
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}})
            items.append({"role": "user", "content": blocks})
        elif shape == "bedrock_converse":
            blocks = [{"text": text}]
            if image:
                blocks.append({"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n\x1a\n" + b"\0" * 16}}})
            items.append({"role": "user", "content": blocks})
        else:
            parts = [{"type": "input_text", "text": text}]
            if image:
                parts.append({"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "low"})
            items.append({"role": "user", "content": parts})
        for r, (parallel, result_size) in enumerate(rounds):
            ids = [f"call_{call + k}" for k in range(parallel)]
            call += parallel
            outputs = [f"result {i}: " + words(result_size, "r") for i in ids]
            latest = t == last_turn and r == len(rounds) - 1 and not answered
            if shape == "chat_completions":
                items.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": "read_file",
                                                               "arguments": json.dumps({"path": i})}} for i in ids]})
                items += [{"role": "tool", "tool_call_id": i, "content": o} for i, o in zip(ids, outputs)]
            elif shape == "anthropic_messages":
                think = [{"type": "thinking", "thinking": "plan " + words(20, "t"), "signature": "c2ln"}] if (
                    thinking and latest) else []
                items.append({"role": "assistant", "content": [*think, *({"type": "tool_use", "id": i,
                              "name": "read_file", "input": {"path": i}} for i in ids)]})
                items.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": o}
                                                          for i, o in zip(ids, outputs)]})
            elif shape == "bedrock_converse":
                think = [{"reasoningContent": {"reasoningText": {"text": "plan", "signature": "c2ln"}}}] if (
                    thinking) else []
                items.append({"role": "assistant", "content": [*think, *({"toolUse": {
                    "toolUseId": i, "name": "read_file", "input": {"path": i}}} for i in ids)]})
                items.append({"role": "user", "content": [{"toolResult": {"toolUseId": i, "content": [{"text": o}]}}
                                                          for i, o in zip(ids, outputs)]})
            else:
                if thinking:
                    items.append({"type": "reasoning", "id": f"rs_{call}", "summary": [],
                                  "encrypted_content": "gAAAA" + "x" * 40})
                items += [{"type": "function_call", "call_id": i, "name": "read_file",
                           "arguments": json.dumps({"path": i})} for i in ids]
                items += [{"type": "function_call_output", "call_id": i, "output": o} for i, o in zip(ids, outputs)]
        if answered or t < last_turn:
            answer = f"done with {t}"
            if shape in ("chat_completions", "codex_responses"):
                items.append({"role": "assistant", "content": answer})
            elif shape == "anthropic_messages":
                items.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
            else:
                items.append({"role": "assistant", "content": [{"text": answer}]})
            if t == last_turn:  # the user's next message closes the conversation
                items.append({"role": "user", "content": [{"text": "go on"}] if shape == "bedrock_converse"
                              else "go on"})
    return _framed(shape, items, thinking)


def _framed(shape: str, items: list[dict[str, Any]], thinking: bool) -> dict[str, Any]:
    if shape == "chat_completions":
        return {"model": "m", "max_tokens": 1000, "messages": [{"role": "system", "content": "Be brief."}, *items],
                "tools": [{"type": "function", "function": {"name": TOOL["name"], "description": TOOL["description"],
                                                            "parameters": TOOL["schema"]}}]}
    if shape == "anthropic_messages":
        request = {"model": "claude", "max_tokens": 9000, "system": "Be brief.", "messages": items,
                   "tools": [{"name": TOOL["name"], "description": TOOL["description"],
                              "input_schema": TOOL["schema"]}], "tool_choice": {"type": "auto"}}
        if thinking:
            request["thinking"] = {"type": "enabled", "budget_tokens": 8192}
        return request
    if shape == "bedrock_converse":
        return {"modelId": "anthropic.claude", "messages": items, "system": [{"text": "Be brief."}],
                "inferenceConfig": {"maxTokens": 1000},
                "toolConfig": {"tools": [{"toolSpec": {"name": TOOL["name"], "description": TOOL["description"],
                                                       "inputSchema": {"json": TOOL["schema"]}}}]}}
    return {"model": "gpt-5", "instructions": "Be brief.", "input": items, "max_output_tokens": 1000, "store": False,
            "include": ["reasoning.encrypted_content"],
            "tools": [{"type": "function", "name": TOOL["name"], "description": TOOL["description"],
                       "parameters": TOOL["schema"], "strict": False}]}


def count(messages: list[Any]) -> int:
    return estimate_messages_tokens_rough([dict(m) for m in messages])


@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=turns, thinking=st.booleans(), budget=st.sampled_from([300, 2_000, 8_000, 30_000, 200_000]))
def test_every_shortened_request_validates_and_fits(shape: str, conversation: list[Any], thinking: bool,
                                                    budget: int) -> None:
    adapter = SHAPES[shape]
    request = render(shape, conversation, thinking)
    assert VALIDATORS[shape](request) == []  # the generator writes what the provider accepts
    view = adapter.read(request)
    read = adapter.conversation(request)
    assert view is not None and read is not None and list(view.messages) == read.chat()  # one reading, two uses
    shortened = shorten(read, reason="window_overflow", max_tokens=budget, count_tokens=count)
    event("shortened" if shortened is not None else "left whole")
    if shortened is None:
        assert count(read.chat()[len(read.leading.chat):]) <= budget
        return
    head = [adapter.text_item(m["role"], m["content"]) for m in shortened.head]
    written = adapter.write(request, read, [*head, *(item for unit in shortened.units for item in unit.items)])
    assert VALIDATORS[shape](written) == []
    again = adapter.read(written)
    assert again is not None and list(again.messages) == [*read.leading.chat, *shortened.chat()]  # no second reading
    body = list(again.messages)[len(read.leading.chat):]
    carried_only = len(shortened.units) <= 1  # nothing but the latest request left: the smallest request there is
    assert count(body) <= budget or carried_only
    conversation_key = "input" if shape == "codex_responses" else "messages"
    assert {k: v for k, v in written.items() if k != conversation_key} == {
        k: v for k, v in request.items() if k != conversation_key}
    assert all(written[k] is request[k] for k in request if k != conversation_key)
