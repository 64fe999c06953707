"""Anthropic Messages (``anthropic_messages``): a separate ``system``; ``messages`` of content blocks whose roles
alternate from ``user``; an assistant's ``tool_use`` blocks answered by ``tool_result`` blocks first in the user
message right after it; with extended thinking, the signed ``thinking`` / ``redacted_thinking`` blocks that open the
assistant message the last tool results answer (they stay in their message, so with its tool_use and results)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.request import ProviderRequest
from baton_engine.shapes.cap import find_cap, find_thinking_budget
from baton_engine.shapes.conversation import Conversation, Unit, grouped, replaced
from baton_engine.shapes.parts import (
    chat_tool_choice,
    function_tool,
    mappings,
    model_name,
    options,
    parts_content,
    text_or_media,
)
from baton_engine.tokens.media import part_tokens


class AnthropicShape:
    name = "anthropic_messages"

    def read(self, request: Mapping[str, Any]) -> ProviderRequest | None:
        """The separate ``system`` becomes the leading system message, content blocks chat messages (text joined;
        tool_use -> tool_calls; tool_result -> tool messages), tools function schemas, ``tool_choice`` its chat
        equivalent, so any backend counts every part."""
        conversation = self.conversation(request)
        if conversation is None:
            return None
        tools = tuple(_tool(t) for t in mappings(request.get("tools")))
        found = options(request)
        choice = request.get("tool_choice")
        if isinstance(choice, Mapping):
            found["tool_choice"] = chat_tool_choice(choice.get("type"), choice.get("name"))
            found = {k: v for k, v in found.items() if v is not None}
        return ProviderRequest(messages=tuple(conversation.chat()), tools=tools, options=found, cap=find_cap(request),
                               thinking_budget=find_thinking_budget(request), model=model_name(request, "model"))

    def conversation(self, request: Mapping[str, Any]) -> Conversation | None:
        """Units: a user message of tool results stays with the assistant message whose tool_use it answers; a
        thinking block stays in its message, so with its tool_use and the results that answer it."""
        messages = request.get("messages")
        if not isinstance(messages, list):
            return None
        system = _block_text(request.get("system"))
        leading = Unit((), ({"role": "system", "content": system},) if system else ())
        runs = grouped(mappings(messages), _answers_previous)
        return Conversation(leading, tuple(Unit(tuple(run), tuple(m for message in run for m in _chat(message)))
                                           for run in runs))

    def text_item(self, role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": [{"type": "text", "text": text}]}

    def write(self, request: Mapping[str, Any], conversation: Conversation, items: Sequence[Any]) -> dict[str, Any]:
        return replaced(request, "messages", conversation, items)


ANTHROPIC = AnthropicShape()


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [block for block in content if isinstance(block, Mapping)] if isinstance(content, list) else []


def _answers_previous(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and any(block.get("type") == "tool_result" for block in _blocks(message))


def _block_text(value: Any) -> str:
    """Text of a string or a list of content blocks (text and thinking kept, others as JSON)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    parts = []
    for block in value:
        if isinstance(block, Mapping):
            text = block.get("text") if block.get("type") == "text" else block.get("thinking")
            parts.append(text if isinstance(text, str) else json.dumps(block, sort_keys=True, default=str))
        elif isinstance(block, str):
            parts.append(block)
    return "\n".join(parts)


def _blocks_content(value: Any) -> Any:
    """Content as chat content: its text (``_block_text``) when it holds no image or document, else text parts and
    media placeholders in order (the shape the estimator's chat messages take)."""
    if not isinstance(value, list) or not any(part_tokens(block) is not None for block in value):
        return _block_text(value)
    return parts_content([text_or_media(block, _block_text([block])) for block in value])


def _tool(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """An Anthropic tool (name, description, input_schema) as the function schema tokenizers render."""
    if "function" in tool:
        return tool
    return function_tool(tool.get("name"), tool.get("description"), tool.get("input_schema"))


def _chat(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    role = message.get("role")
    content = message.get("content")
    if not isinstance(content, list):
        return [{"role": role, "content": _blocks_content(content)}]
    texts, calls, results = [], [], []
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_use":
            calls.append({"id": block.get("id"), "type": "function", "function": {
                "name": block.get("name"), "arguments": json.dumps(block.get("input"), sort_keys=True, default=str)}})
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                            "content": _blocks_content(block.get("content"))})
        else:
            texts.append(block)
    converted: list[Mapping[str, Any]] = list(results)  # Hermes merges a turn's text after its tool results
    if texts or calls or not results:
        converted.append({"role": role, "content": _blocks_content(texts),
                          **({"tool_calls": calls} if calls else {})})
    return converted
