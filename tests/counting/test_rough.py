from __future__ import annotations

import json

import pytest

from baton_engine.tokens.media import UNKNOWN_IMAGE_TOKENS
from baton_engine.tokens.rough import (
    RoughBackend,
    estimate_chat_request,
    estimate_messages_tokens_rough,
    estimate_request_tokens_rough,
    estimate_tokens_rough,
    estimate_tools_tokens_rough,
)
from conversations import TOOLS, conversation


@pytest.mark.parametrize(("text", "expected"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100)])
def test_text_is_ceiling_of_chars_over_four(text: str, expected: int) -> None:
    assert estimate_tokens_rough(text) == expected


def test_message_is_measured_as_python_repr_like_hermes() -> None:
    message = {"role": "user", "content": "hi"}
    assert str(message) == "{'role': 'user', 'content': 'hi'}"  # 33 chars
    assert estimate_messages_tokens_rough([message]) == (33 + 3) // 4


def test_images_cost_what_media_says_and_their_payload_is_not_counted() -> None:
    huge = "data:image/png;base64," + "A" * 1_000_000
    message = {"role": "user", "content": [{"type": "text", "text": "look"},
                                           {"type": "image_url", "image_url": {"url": huge}}]}
    stripped = {"role": "user", "content": [{"type": "text", "text": "look"},
                                            {"type": "image_url", "image": "[stripped]"}]}
    assert estimate_messages_tokens_rough([message]) == (len(str(stripped)) + 3) // 4 + UNKNOWN_IMAGE_TOKENS


def test_tools_count_name_description_and_compact_json_parameters() -> None:
    tool = TOOLS[0]["function"]
    chars = len(tool["name"]) + len(tool["description"]) + len(
        json.dumps(tool["parameters"], ensure_ascii=False, separators=(",", ":"))
    )
    assert estimate_request_tokens_rough([], tools=[TOOLS[0]]) == (chars + 3) // 4


def test_request_is_messages_plus_tools() -> None:
    request = conversation(5)
    expected = estimate_messages_tokens_rough(request["messages"]) + estimate_request_tokens_rough([], tools=TOOLS)
    assert estimate_chat_request(request) == expected
    count = RoughBackend().count_chat(request)
    assert (count.tokens, count.exact, count.source) == (expected, False, "rough")


@pytest.mark.parametrize("request_", [{"messages": "hello"}, {"nope": []}, {"messages": [], "tools": "x"}, ["m"]])
def test_malformed_requests_raise_type_error(request_: object) -> None:
    with pytest.raises(TypeError):
        estimate_chat_request(request_)  # type: ignore[arg-type]


HERMES_IMAGE_TOKENS = 1500  # hermes-agent 0.19.0's flat cost of an image (model_metadata._IMAGE_TOKEN_COST)


@pytest.mark.hermes
def test_matches_real_hermes_estimator_on_generated_conversations() -> None:
    """The same numbers as Hermes' estimator, but for the one documented difference: an image costs what
    ``tokens.media`` says (here, of unreadable size: its bound) instead of Hermes' flat 1,500."""
    hermes_estimate = pytest.importorskip("agent.model_metadata").estimate_request_tokens_rough

    for seed in range(20):
        request = conversation(1 + seed * 3, seed=seed, with_tools=seed % 2 == 0)
        request["messages"].append({"role": "user", "content": [
            {"type": "text", "text": "see"}, {"type": "input_image", "image_url": "data:," + "Z" * 999}]})
        kwargs = {"tools": request.get("tools"), "system_prompt": "sys " * seed}
        ours = estimate_request_tokens_rough(request["messages"], **kwargs)
        theirs = hermes_estimate(request["messages"], **kwargs)
        assert ours == theirs + UNKNOWN_IMAGE_TOKENS - HERMES_IMAGE_TOKENS
        text_only = request["messages"][:-1]
        assert estimate_request_tokens_rough(text_only, **kwargs) == hermes_estimate(text_only, **kwargs)


@pytest.mark.parametrize("params", [{"type": "object", "enum": {1, 2}}, "circular"], ids=["set", "circular"])
def test_a_tool_schema_json_cannot_dump_is_estimated_from_its_str(params: object) -> None:
    """A set (TypeError) or a circular dict (ValueError): json.dumps fails, and the estimate counts ``str(params)``
    as Hermes does, instead of raising."""
    if params == "circular":
        params = {"type": "object"}
        params["self"] = params
    tool = {"type": "function", "function": {"name": "n", "description": "", "parameters": params}}
    assert estimate_tools_tokens_rough([tool]) == (1 + len(str(params)) + 3) // 4
