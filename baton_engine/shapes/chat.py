"""Chat completions (OpenAI, vLLM, llama.cpp, every OpenAI-compatible server): ``messages`` with any system
prompt first; an assistant message's ``tool_calls`` answered by the ``tool`` messages after it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.request import ProviderRequest
from baton_engine.shapes.cap import find_cap, find_thinking_budget
from baton_engine.shapes.conversation import Conversation, Unit, grouped, replaced
from baton_engine.shapes.parts import mappings, model_name, options, template_kwargs
from baton_engine.tokens.media import content_lists, content_with_placeholders

SYSTEM_ROLES = ("system", "developer")


def with_placeholders(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A chat message with its media parts as placeholders (the message itself when it has none)."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    converted = content_with_placeholders(content)
    return message if converted is content else {**message, "content": converted}


def placeholders_in(messages: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
    """The messages with their media parts as placeholders (the same tuple when none has a content list): only
    the messages whose content is a list are looked at, so reading a request does not step through its history."""
    indexes = content_lists(messages)
    if not indexes:
        return messages
    converted = list(messages)
    for index in indexes:
        converted[index] = with_placeholders(converted[index])
    return tuple(converted)


class ChatShape:
    name = "chat_completions"

    def read(self, request: Mapping[str, Any]) -> ProviderRequest | None:
        """Chat-completions kwargs (main loop or auxiliary); None when there is no message list."""
        messages = request.get("messages")
        if not isinstance(messages, list):
            return None
        return ProviderRequest(
            messages=placeholders_in(mappings(messages)), tools=mappings(request.get("tools")),
            template_kwargs=template_kwargs(request), options=options(request), cap=find_cap(request),
            thinking_budget=find_thinking_budget(request),
            model=model_name(request, "model"),
        )

    def conversation(self, request: Mapping[str, Any]) -> Conversation | None:
        """Leading system (and developer) messages, then units: a ``tool`` message stays with the message before it
        (the assistant whose call it answers)."""
        messages = request.get("messages")
        if not isinstance(messages, list):
            return None
        items = mappings(messages)
        start = 0
        while start < len(items) and items[start].get("role") in SYSTEM_ROLES:
            start += 1
        leading = items[:start]
        runs = grouped(items[start:], lambda message: message.get("role") == "tool")
        return Conversation(Unit(leading, tuple(map(with_placeholders, leading))),
                            tuple(Unit(tuple(run), tuple(map(with_placeholders, run))) for run in runs))

    def text_item(self, role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": text}

    def write(self, request: Mapping[str, Any], conversation: Conversation, items: Sequence[Any]) -> dict[str, Any]:
        return replaced(request, "messages", conversation, items)


CHAT = ChatShape()
