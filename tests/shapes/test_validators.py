"""The validators refuse what the providers refuse (the failures issue 30 found at 9dba563), and every shape's count
request is one a chat-completions tokenizer (a vLLM ``/tokenize``) accepts."""

from __future__ import annotations

from typing import Any

import pytest
from batontest.validators import VALIDATORS, sdk_errors

from baton_engine.shapes.anthropic import ANTHROPIC
from baton_engine.shapes.bedrock import BEDROCK
from baton_engine.shapes.responses import RESPONSES

USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}]}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "body"}]}
NOTE = {"role": "user", "content": "[Baton degraded compaction] ..."}
BAD = [
    ("anthropic_messages", {"model": "c", "max_tokens": 10, "messages": [NOTE, {"role": "assistant", "content": "ok"},
                                                                          RESULT]}, "answers no call"),
    ("anthropic_messages", {"model": "c", "max_tokens": 2048, "thinking": {"type": "enabled", "budget_tokens": 1024},
                            "messages": [{"role": "user", "content": "go"}, USE, RESULT]}, "start with its thinking"),
    ("anthropic_messages", {"model": "c", "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 4096},
                            "messages": [{"role": "user", "content": "go"}]}, "is not less than max_tokens"),
    ("anthropic_messages", {"model": "c", "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 512},
                            "messages": [{"role": "user", "content": "go"}]}, "below 1,024"),
    ("anthropic_messages", {"model": "c", "max_tokens": 10, "messages": [USE, RESULT]}, "first message"),
    ("bedrock_converse", {"modelId": "m", "messages": [{"role": "user", "content": "a note as a string"}]},
     "Invalid type for parameter messages[0].content"),
    ("bedrock_converse", {"modelId": "m", "messages": [{"role": "user", "content": [{"text": "n"}]}, {
        "role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "x"}]}}]}]},
     "answers no call"),
    ("codex_responses", {"model": "g", "input": [{"role": "user", "content": "n"}, {
        "type": "function_call_output", "call_id": "c1", "output": "x"}]}, "has no function call"),
    ("codex_responses", {"model": "g", "input": [{"role": "user", "content": "n"}, {
        "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}]}, "following item"),
    ("chat_completions", {"model": "q", "messages": [{"role": "user", "content": "n"}, {
        "role": "tool", "tool_call_id": "c1", "content": "x"}]}, "answers no call"),
    ("chat_completions", {"model": "q", "messages": [{"role": "user", "content": "n"}, {
        "role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "f", "arguments": "{}"}}]}, {"role": "user", "content": "next"}]}, "never answered"),
]


@pytest.mark.parametrize(("shape", "request_", "problem"), BAD)
def test_a_request_the_provider_refuses_is_refused(shape: str, request_: dict[str, Any], problem: str) -> None:
    problems = VALIDATORS[shape](request_)
    assert any(problem in found for found in problems), problems


@pytest.mark.parametrize(("shape", "request_"), [
    (ANTHROPIC, {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
                 "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "auto"}}),
    (ANTHROPIC, {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
                 "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool",
                                                                                             "name": "f"}}),
    (BEDROCK, {"modelId": "m", "messages": [{"role": "user", "content": [{"text": "hi"}]}], "toolConfig": {
        "tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {"type": "object"}}}}],
        "toolChoice": {"any": {}}}}),
    (RESPONSES, {"model": "g", "input": [{"role": "user", "content": "hi"}], "tool_choice": {
        "type": "function", "name": "f"}, "tools": [{"type": "function", "name": "f", "parameters": {}}]}),
])
def test_the_count_request_of_every_shape_is_a_chat_request(shape: Any, request_: dict[str, Any]) -> None:
    """Hermes sends Anthropic's ``tool_choice: {"type": "auto"}``: the vllm backend could not count it (issue 30);
    the view says it as chat completions does."""
    counted = shape.read(request_).count_request()
    assert isinstance(counted["tool_choice"], (str, dict)) and counted["tool_choice"] != request_.get("tool_choice")
    assert sdk_errors("chat_completions", {"model": "m", **counted}) == []
