"""The OpenAI Responses API (``codex_responses``): ``instructions`` apart; ``input`` items: messages by role,
``reasoning`` items (encrypted, each followed by the item it produced), ``function_call`` items answered by
``function_call_output`` items with the same ``call_id``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.request import ProviderRequest
from baton_engine.shapes.cap import find_cap, find_thinking_budget
from baton_engine.shapes.conversation import Conversation, Unit, replaced
from baton_engine.shapes.parts import (
    chat_tool_choice,
    function_tool,
    mappings,
    model_name,
    options,
    parts_content,
    text_or_media,
)

SYSTEM_ROLES = ("system", "developer")
ASSISTANT_SIDE = ("assistant", "reasoning", "function_call")  # what one response produced


class ResponsesShape:
    name = "responses"

    def read(self, request: Mapping[str, Any]) -> ProviderRequest | None:
        """``instructions`` becomes the system message, ``input`` items chat messages (message items by role;
        ``function_call`` items the previous assistant message's tool calls; ``function_call_output`` tool
        messages), function tools function schemas. Encrypted reasoning items cannot be counted by anyone but the
        provider: they are left out, and its reported usage (the anchor) covers them. None when there is no
        ``input`` list."""
        conversation = self.conversation(request)
        if conversation is None:
            return None
        found = options(request)
        reasoning = request.get("reasoning")
        if isinstance(reasoning, Mapping) and reasoning.get("effort") and "reasoning_effort" not in found:
            found["reasoning_effort"] = reasoning["effort"]
        choice = found.get("tool_choice")
        if isinstance(choice, Mapping):
            found["tool_choice"] = chat_tool_choice(choice.get("type"), choice.get("name"))
            found = {k: v for k, v in found.items() if v is not None}
        tools = tuple(function_tool(t.get("name"), t.get("description"), t.get("parameters"))
                      for t in mappings(request.get("tools")) if t.get("type") == "function")
        return ProviderRequest(messages=tuple(conversation.chat()), tools=tools, options=found, cap=find_cap(request),
                               thinking_budget=find_thinking_budget(request), model=model_name(request, "model"))

    def conversation(self, request: Mapping[str, Any]) -> Conversation | None:
        """Leading system / developer messages, then units: what one response produced (reasoning items, the
        assistant's message, its function calls) with every ``function_call_output`` after it; a user message
        alone."""
        items = request.get("input")
        if not isinstance(items, list):
            return None
        items = mappings(items)
        start = 0
        while start < len(items) and _role(items[start]) in SYSTEM_ROLES:
            start += 1
        instructions = request.get("instructions")
        system = ({"role": "system", "content": instructions},) if instructions else ()
        leading = Unit(items[:start], system + tuple(_chat(items[:start])))
        runs: list[list[Mapping[str, Any]]] = []
        for item in items[start:]:
            kind = _kind(item)
            previous = _kind(runs[-1][-1]) if runs else None
            joins = kind == "function_call_output" or (kind in ASSISTANT_SIDE and previous in ASSISTANT_SIDE)
            if runs and joins:
                runs[-1].append(item)
            else:
                runs.append([item])
        return Conversation(leading, tuple(Unit(tuple(run), tuple(_chat(run))) for run in runs))

    def text_item(self, role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": text}

    def write(self, request: Mapping[str, Any], conversation: Conversation, items: Sequence[Any]) -> dict[str, Any]:
        return replaced(request, "input", conversation, items)


RESPONSES = ResponsesShape()


def _role(item: Mapping[str, Any]) -> Any:
    return item.get("role") if item.get("type") in (None, "message") else None


def _kind(item: Mapping[str, Any]) -> str | None:
    """``reasoning``, ``function_call``, ``function_call_output``, or a message's role."""
    kind = item.get("type")
    return _role(item) if kind in (None, "message") else kind


def _chat(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            if not (messages and messages[-1].get("role") == "assistant"):
                messages.append({"role": "assistant", "content": ""})
            messages[-1] = {**messages[-1], "tool_calls": [*messages[-1].get("tool_calls", []), call]}
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _content(item.get("output"))})
        elif kind in (None, "message") and item.get("role"):
            messages.append({"role": item.get("role"), "content": _content(item.get("content"))})
    return messages


def _content(content: Any) -> Any:
    """Responses content (a string, or ``input_text`` / ``output_text`` / ``input_image`` parts) as chat content:
    text joined when there is no media, else text parts and placeholders."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    return parts_content([text_or_media(part, part.get("text") if isinstance(part, Mapping) else part)
                          for part in content])
