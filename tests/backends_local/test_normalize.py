"""vLLM's request normalisation, checked on concrete requests (expected values from vLLM 0.32.0's code)."""

from __future__ import annotations

import copy
import json

import pytest

from baton_hf.normalize import (
    RequestShapeError,
    normalize_messages,
    normalize_request,
    normalize_tools,
    template_supports_developer,
)


def test_content_none_becomes_empty_string_and_text_parts_join_with_newline() -> None:
    out = normalize_messages(
        [
            {"role": "user", "content": None},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, "c"]},
            {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": None}, {"type": "text", "text": "x"}]},
        ]
    )
    assert [m["content"] for m in out] == ["", "a\nb\nc", "x"]


def test_openai_content_format_keeps_parts_as_text_dicts() -> None:
    out = normalize_messages(
        [{"role": "user", "content": "hi"}, {"role": "user", "content": None}, {"role": "tool", "content": [{"type": "text", "text": "r1"}, {"type": "text", "text": "r2"}]}],
        content_format="openai",
    )
    assert out[0]["content"] == [{"type": "text", "text": "hi"}]
    assert out[1]["content"] == []
    assert out[2]["content"] == "r1\nr2"  # tool results always become a string


def test_unknown_message_keys_are_dropped_and_known_ones_kept_per_role() -> None:
    out = normalize_messages(
        [
            {"role": "user", "content": "q", "name": "alice", "timestamp": 5, "tool_calls": [], "tool_call_id": "x"},
            {"role": "assistant", "content": "a", "reasoning": "because", "reasoning_content": "ignored", "refusal": None},
            {"role": "tool", "content": "r", "tool_call_id": "call_1", "name": 7},
        ]
    )
    assert out[0] == {"role": "user", "content": "q", "name": "alice"}
    assert out[1] == {"role": "assistant", "content": "a", "reasoning": "because", "reasoning_content": "because"}
    assert out[2] == {"role": "tool", "content": "r", "tool_call_id": "call_1"}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Paris", "days": 3}', {"city": "Paris", "days": 3}),
        ("{not json", {}),
        ("[1, 2]", {}),
        ("42", {}),
        ("", {}),
        (None, {}),
        ({"already": "dict"}, {"already": "dict"}),
    ],
)
def test_tool_call_arguments_are_parsed_to_objects(arguments: object, expected: dict) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "extra": 1, "function": {"name": "f", "arguments": arguments, "x": 2}}],
    }
    (out,) = normalize_messages([message])
    assert out["tool_calls"] == [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": expected}}]


def test_empty_tool_calls_list_is_dropped() -> None:
    (out,) = normalize_messages([{"role": "assistant", "content": "done", "tool_calls": []}])
    assert "tool_calls" not in out


def test_non_function_tool_call_is_rejected_with_the_field_named() -> None:
    with pytest.raises(RequestShapeError, match=r"messages\[0\].tool_calls"):
        normalize_messages([{"role": "assistant", "tool_calls": [{"type": "custom", "custom": {}}]}])


def test_tools_reserialised_with_null_description_and_parameters() -> None:
    tools = [
        {"type": "function", "function": {"name": "a"}},
        {"function": {"name": "b", "description": "B", "parameters": {"type": "object"}, "strict": True, "junk": 1}, "junk": 2},
        {"type": "function", "function": {"name": "c", "strict": None}, "defer_loading": True},
    ]
    assert normalize_tools(tools) == [
        {"type": "function", "function": {"name": "a", "description": None, "parameters": None}},
        {"type": "function", "function": {"name": "b", "description": "B", "parameters": {"type": "object"}, "strict": True}},
        {
            "type": "function",
            "function": {"name": "c", "description": None, "parameters": None, "defer_loading": True},
            "defer_loading": True,
        },
    ]
    assert normalize_tools(None) is None


def test_developer_becomes_system_and_systems_merge_at_position_zero() -> None:
    messages = [
        {"role": "system", "content": "S1"},
        {"role": "user", "content": "u"},
        {"role": "developer", "content": [{"type": "text", "text": "D"}], "tools": [{"x": 1}]},
        {"role": "system", "content": ""},
    ]
    out = normalize_messages(messages)
    assert out == [{"role": "system", "content": "S1\n\nD"}, {"role": "user", "content": "u"}]


def test_developer_first_is_renamed_without_merging() -> None:
    out = normalize_messages([{"role": "developer", "content": "D", "tools": None}, {"role": "user", "content": "u"}])
    assert out == [{"role": "system", "content": "D"}, {"role": "user", "content": "u"}]


def test_developer_kept_when_template_knows_the_role() -> None:
    template = "{% if message['role'] == 'developer' %}...{% endif %}"
    assert template_supports_developer(template)
    assert not template_supports_developer("{{ message.role }} developer")
    out = normalize_messages([{"role": "user", "content": "u"}, {"role": "developer", "content": "D"}], supports_developer=True)
    assert out == [{"role": "user", "content": "u"}, {"role": "developer", "content": "D", "tools": None}]


def test_system_messages_untouched_without_a_developer_message() -> None:
    messages = [{"role": "user", "content": "u"}, {"role": "system", "content": "late"}]
    assert normalize_messages(messages) == messages


def test_claude_code_billing_header_line_is_stripped_from_system() -> None:
    out = normalize_messages(
        [{"role": "system", "content": "x-anthropic-billing-header: cch=123\nYou are helpful."}, {"role": "system", "content": "x-anthropic-billing-header: only"}]
    )
    assert [m["content"] for m in out] == ["You are helpful.", ""]


def test_request_merges_generation_flags_into_template_kwargs() -> None:
    request = {"messages": [{"role": "user", "content": "q"}], "chat_template_kwargs": {"enable_thinking": False, "add_generation_prompt": False}}
    out = normalize_request(request)
    assert out.chat_template_kwargs == {"enable_thinking": False, "add_generation_prompt": True, "continue_final_message": False}
    assert out.add_generation_prompt and not out.continue_final_message
    assert out.tools is None
    cont = normalize_request({**request, "add_generation_prompt": False, "continue_final_message": True})
    assert cont.continue_final_message and not cont.add_generation_prompt


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({"messages": [], "add_generation_prompt": True, "continue_final_message": True}, "continue_final_message"),
        ({"messages": [], "chat_template_kwargs": {"tokenize": True}}, "tokenize"),
        ({"messages": "hello"}, "messages"),
        ({"messages": [{"content": "no role"}]}, "role"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]}, "image_url"),
        ({"messages": [], "tools": [{"type": "function", "function": {"description": "no name"}}]}, "name"),
    ],
)
def test_bad_requests_raise_a_clear_error_without_prompt_text(request_: dict, field: str) -> None:
    with pytest.raises(RequestShapeError, match=field) as info:
        normalize_request(request_)
    assert "no role" not in str(info.value) and "hello" not in str(info.value)


def test_never_mutates_input_and_output_shares_no_containers() -> None:
    request = {
        "messages": [
            {"role": "developer", "content": "D"},
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": {"a": [1]}}}]},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}],
        "chat_template_kwargs": {"nested": {"k": [1]}},
    }
    before = copy.deepcopy(request)
    out = normalize_request(request)
    assert request == before
    out.messages[2]["tool_calls"][0]["function"]["arguments"]["a"].append(2)
    out.tools[0]["function"]["parameters"]["properties"]["p"] = 1
    out.chat_template_kwargs["nested"]["k"].append(2)
    assert request == before


def test_output_is_deterministic_json() -> None:
    request = {"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": '{"b": 1, "a": 2}'}}]}]}
    first = json.dumps(normalize_request(request).messages)
    assert first == json.dumps(normalize_request(request).messages)
    assert '"arguments": {"b": 1, "a": 2}' in first  # key order of the model's JSON is preserved
