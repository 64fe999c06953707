"""Bedrock Converse (``bedrock_converse``): ``system`` blocks apart; ``messages`` whose ``content`` is always a list
of content blocks (``text``, ``image``, ``document``, ``toolUse``, ``toolResult``, ``reasoningContent``), roles
alternating from ``user``; an assistant's ``toolUse`` answered by ``toolResult`` blocks in the user message right
after it; tools in ``toolConfig``; the cap in ``inferenceConfig.maxTokens``."""

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
    parts_content,
    text_or_media,
)


class BedrockShape:
    name = "bedrock_converse"

    def read(self, request: Mapping[str, Any]) -> ProviderRequest | None:
        """The ``system`` text blocks become the system message, content blocks chat messages (``text`` joined;
        ``toolUse`` tool calls; ``toolResult`` tool messages; ``image`` / ``document`` placeholders), ``toolConfig``
        tools function schemas and its ``toolChoice`` the chat one."""
        conversation = self.conversation(request)
        if conversation is None:
            return None
        config = request.get("toolConfig")
        config = config if isinstance(config, Mapping) else {}
        specs = [t["toolSpec"] for t in mappings(config.get("tools")) if isinstance(t.get("toolSpec"), Mapping)]
        tools = tuple(function_tool(spec.get("name"), spec.get("description"),
                                    spec["inputSchema"].get("json") if isinstance(spec.get("inputSchema"), Mapping)
                                    else None) for spec in specs)
        found = {}
        choice = config.get("toolChoice")
        if isinstance(choice, Mapping) and len(choice) == 1:
            (kind, body), = choice.items()
            tool_choice = chat_tool_choice(kind, body.get("name") if isinstance(body, Mapping) else None)
            if tool_choice is not None:
                found["tool_choice"] = tool_choice
        return ProviderRequest(messages=tuple(conversation.chat()), tools=tools, options=found, cap=find_cap(request),
                               thinking_budget=find_thinking_budget(request), model=model_name(request, "modelId", "model"))

    def conversation(self, request: Mapping[str, Any]) -> Conversation | None:
        """Units: a user message of tool results stays with the assistant message whose toolUse it answers;; a
        reasoning block stays in its message, so with its toolUse and the results that answer it."""
        messages = request.get("messages")
        if not isinstance(messages, list):
            return None
        system = "\n".join(block["text"] for block in mappings(request.get("system"))
                           if isinstance(block.get("text"), str))
        leading = Unit((), ({"role": "system", "content": system},) if system else ())
        runs = grouped(mappings(messages), _answers_previous)
        return Conversation(leading, tuple(Unit(tuple(run), tuple(m for message in run for m in _chat(message)))
                                           for run in runs))

    def text_item(self, role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": [{"text": text}]}

    def write(self, request: Mapping[str, Any], conversation: Conversation, items: Sequence[Any]) -> dict[str, Any]:
        return replaced(request, "messages", conversation, items)


BEDROCK = BedrockShape()


def _blocks(message: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    return mappings(message.get("content"))


def _answers_previous(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and any(isinstance(block.get("toolResult"), Mapping)
                                                 for block in _blocks(message))


def _chat(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts, calls, results = [], [], []
    for block in _blocks(message):
        if isinstance(block.get("toolUse"), Mapping):
            use = block["toolUse"]
            calls.append({"id": use.get("toolUseId"), "type": "function", "function": {
                "name": use.get("name"), "arguments": json.dumps(use.get("input"), sort_keys=True, default=str)}})
        elif isinstance(block.get("toolResult"), Mapping):
            result = block["toolResult"]
            inner = [text_or_media(b, b.get("text") if "json" not in b else json.dumps(b["json"], sort_keys=True))
                     for b in mappings(result.get("content"))]
            results.append({"role": "tool", "tool_call_id": result.get("toolUseId"), "content": parts_content(inner)})
        elif "reasoningContent" not in block:
            parts.append(text_or_media(block, block.get("text")))
    converted: list[dict[str, Any]] = list(results)  # the tool messages that came before this user turn's own text
    if parts or calls or not results:
        converted.append({"role": message.get("role"), "content": parts_content(parts),
                          **({"tool_calls": calls} if calls else {})})
    return converted
