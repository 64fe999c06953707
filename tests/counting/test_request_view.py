"""One ``ProviderRequest`` per request shape Hermes 0.19.0 produces, and what each shape's count includes.

Counted with the real Qwen3 tokenizer (hf backend): a part of the request the view drops would show up
as a smaller count than the provider's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from batontest import assets

from baton_engine.agent.memos import AgentMemos
from baton_engine.hermes import request_view
from baton_engine.request import OutputCap, ProviderRequest
from baton_engine.shapes.anthropic import ANTHROPIC
from baton_engine.shapes.cap import find_cap
from baton_engine.shapes.chat import CHAT as CHAT_SHAPE

SYSTEM = ("You are Hermes. " * 400).strip()  # a long system prompt (~1,600 tokens); Hermes strips text
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object",
                                                          "properties": {"path": {"type": "string"}}}}}]
CALL = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.py"}'}}
CHAT = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Read a.py"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": ("print('hi')\n" * 20).strip()},
        {"role": "user", "content": "Now explain it."}]


@pytest.fixture(scope="module")
def qwen3() -> Any:
    return assets.hf_backend(assets.qwen3_dir())


def count(backend: Any, view: ProviderRequest) -> int:
    counted = backend.count_chat(view.count_request())
    assert counted.exact
    return counted.tokens


def test_chat_kwargs_count_template_kwargs_and_options(qwen3: Any) -> None:
    plain = CHAT_SHAPE.read({"model": "q", "messages": CHAT, "tools": TOOLS, "max_tokens": 9000})
    thinking_off = CHAT_SHAPE.read({
        "model": "q", "messages": CHAT, "tools": TOOLS, "max_tokens": 9000, "tool_choice": "auto",
        "reasoning_effort": None, "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}})
    assert plain is not None and thinking_off is not None
    assert plain.cap == OutputCap("max_tokens", 9000) and plain.model == "q"
    assert thinking_off.template_kwargs == {"enable_thinking": False}
    assert thinking_off.options == {"tool_choice": "auto"}
    assert count(qwen3, thinking_off) != count(qwen3, plain)  # Qwen3's enable_thinking changes the prompt
    assert plain.key != thinking_off.key


def test_estimator_arguments_are_projected_like_hermes_transport(qwen3: Any) -> None:
    """Hermes' stored messages carry bookkeeping keys its chat-completions transport strips; the estimate's
    view equals the wire request's, so both share one key (one tokenizer round trip)."""
    stored = [dict(m) for m in CHAT[1:]]
    spaced = {**CALL, "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    stored[1] = {**stored[1], "content": " Reading.\n", "reasoning": "private chain", "finish_reason": "tool_calls",
                 "_thinking_prefill": 1, "tool_calls": [{**spaced, "call_id": "x", "response_item_id": "y"}]}
    stored[2] = {**stored[2], "tool_name": "read_file", "timestamp": 1764000000}
    stored[3] = {**stored[3], "api_content": "Now explain it, please.", "_todo_snapshot_synthetic": True}
    wire = [*CHAT[:4], {"role": "user", "content": "Now explain it, please."}]
    estimate = AgentMemos(request_view.project).estimate(stored, system_prompt=SYSTEM, tools=TOOLS)
    sent = CHAT_SHAPE.read({"model": "q", "messages": wire, "tools": TOOLS, "stream": True})
    assert estimate.count_request() == sent.count_request() and estimate.key == sent.key


def test_estimate_borrows_the_frame_of_the_last_request() -> None:
    sent = CHAT_SHAPE.read({"model": "q", "messages": CHAT, "tools": TOOLS,
                                          "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}})
    estimate = AgentMemos(request_view.project).estimate(CHAT, frame=sent.frame())
    assert estimate.count_request() == sent.count_request()
    unframed = AgentMemos(request_view.project).estimate(CHAT)
    assert unframed.count_request() == {"messages": CHAT}  # without a frame: no tools


def test_anthropic_kwargs_count_the_separate_system_prompt_and_blocks(qwen3: Any) -> None:
    anthropic = {
        "model": "claude-x", "max_tokens": 8192, "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
        "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a.py"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                              {"type": "tool_use", "id": "call_1", "name": "read_file",
                                               "input": {"path": "a.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                          "content": [{"type": "text", "text": "print('hi')\n" * 20}]},
                                         {"type": "text", "text": "Now explain it."}]},
        ],
    }
    view = request_view.shape_for("anthropic_messages").read(anthropic)
    assert view is not None and view.cap == OutputCap("max_tokens", 8192)
    roles = [m["role"] for m in view.messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]  # the chat order: results, then the text
    assert view.messages[0]["content"] == SYSTEM
    assert json.loads(view.messages[2]["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    without_system = ANTHROPIC.read({**anthropic, "system": ""})
    assert count(qwen3, view) - count(qwen3, without_system) > 1_500  # the long system prompt is counted


def test_auxiliary_kwargs_and_caps_in_extra_body() -> None:
    aux = {"model": "q", "messages": CHAT[1:2], "timeout": 30.0, "extra_body": {"max_completion_tokens": 500}}
    view = CHAT_SHAPE.read(aux)
    assert view is not None and view.cap == OutputCap("max_completion_tokens", 500, "extra_body")
    assert find_cap({"max_tokens": 500, "extra_body": {"max_tokens": 600}}) == OutputCap("max_tokens", 600, "extra_body")
    assert CHAT_SHAPE.read({"model": "q", "input": "responses api"}) is None


def test_with_conversation_keeps_the_frame() -> None:
    sent = CHAT_SHAPE.read({"model": "q", "messages": CHAT, "tools": TOOLS, "max_tokens": 10})
    compacted = sent.with_conversation([{"role": "user", "content": "brief"}, CHAT[-1]])
    assert compacted.messages[0]["content"] == SYSTEM and len(compacted.messages) == 3
    assert compacted.tools == sent.tools and compacted.cap == sent.cap


RESPONSES = {  # what hermes-agent 0.19.0's ResponsesApiTransport.build_kwargs makes of CHAT (codex_responses)
    "model": "gpt-5", "instructions": SYSTEM, "store": False, "tool_choice": "auto", "parallel_tool_calls": True,
    "input": [{"role": "user", "content": "Read a.py"}, {"role": "assistant", "content": "Reading."},
              {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": '{"path":"a.py"}'},
              {"type": "function_call_output", "call_id": "call_1", "output": CHAT[3]["content"]},
              {"type": "reasoning", "encrypted_content": "gAAAA" + "x" * 400, "summary": []},
              {"role": "user", "content": "Now explain it."}],
    "tools": [{"type": "function", "name": "read_file", "description": "Read a file.", "strict": False,
               "parameters": TOOLS[0]["function"]["parameters"]}],
    "reasoning": {"effort": "medium", "summary": "auto"}, "max_output_tokens": 9000,
}
BEDROCK = {  # what hermes-agent 0.19.0's build_converse_kwargs makes of CHAT (bedrock_converse)
    "modelId": "anthropic.claude-3-5-sonnet", "system": [{"text": SYSTEM}], "__bedrock_converse__": True,
    "messages": [{"role": "user", "content": [{"text": "Read a.py"}]},
                 {"role": "assistant", "content": [{"text": "Reading."}, {"toolUse": {
                     "toolUseId": "call_1", "name": "read_file", "input": {"path": "a.py"}}}]},
                 {"role": "user", "content": [{"toolResult": {"toolUseId": "call_1",
                                                              "content": [{"text": CHAT[3]["content"]}]}},
                                              {"text": "Now explain it."}]}],
    "inferenceConfig": {"maxTokens": 9000},
    "toolConfig": {"tools": [{"toolSpec": {"name": "read_file", "description": "Read a file.",
                                           "inputSchema": {"json": TOOLS[0]["function"]["parameters"]}}}]},
}


@pytest.mark.parametrize(("request_", "api_mode", "cap"), [
    (RESPONSES, "codex_responses", OutputCap("max_output_tokens", 9000)),
    (BEDROCK, "bedrock_converse", OutputCap("maxTokens", 9000, "inferenceConfig"))])
def test_responses_and_bedrock_kwargs_count_what_the_chat_request_counts(
        qwen3: Any, request_: dict, api_mode: str, cap: OutputCap) -> None:
    """Both become the chat messages they were built from (system, tool call, tool result in order), so they
    count like the chat request, and carry the cap field the writer lowers."""
    view = request_view.shape_for(api_mode).read(request_)
    chat = CHAT_SHAPE.read({"messages": CHAT, "tools": TOOLS})
    assert view is not None and view.cap == cap
    assert [m["role"] for m in view.messages] == [m["role"] for m in CHAT]
    assert view.messages[2]["tool_calls"][0]["function"]["name"] == "read_file"
    assert view.tools[0]["function"]["parameters"] == TOOLS[0]["function"]["parameters"]
    assert abs(count(qwen3, view) - count(qwen3, chat)) <= 16  # tool-call ids / argument spacing only
    assert request_view.shape_for(api_mode).read({"input": "text"}) is None
