"""``ProviderRequest``: the one view of a model request that every budget decision counts.

Why one type: a request's size used to be reached from three places that each built their own partial
payload (messages + tools only), so the same request was counted twice and the prompt parts outside
``messages`` (a separate ``system`` prompt, ``chat_template_kwargs`` such as Qwen3's
``enable_thinking``, ``reasoning_effort``, ``tool_choice``) were never counted. Hosts build a
``ProviderRequest`` from whatever shape they have; the counter sees only ``count_request()``, so two
views of the same provider-visible prompt share one cache key and one tokenizer round trip.

Pure: no host imports, no I/O. A request's shape reads its output cap and thinking budget into the view
(``shapes.cap``), where the decision is written back in the field the request already uses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from baton_engine.tokens.request_key import request_key

# Request options that change the rendered prompt on some servers (vLLM folds them into the template).
PROMPT_OPTIONS = ("tool_choice", "reasoning_effort")


@dataclass(frozen=True)
class OutputCap:
    """The output cap a request carries: its field name, its value, and the nested mapping it lives in
    (``within``: ``"extra_body"``, ``"inferenceConfig"``; None at the top level)."""

    field: str
    value: int
    within: str | None = None


@dataclass(frozen=True)
class ProviderRequest:
    """What the provider renders into the prompt, plus the request's output cap.

    ``messages`` are provider-visible messages with any system prompt first, as a ``system`` message
    (a separate system argument is folded in, so Anthropic-style requests count the same way).
    """

    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] = ()
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    cap: OutputCap | None = None
    model: str | None = None
    output_limit: int | None = None  # the provider's own output ceiling for this model, when known
    # Anthropic extended thinking's ``budget_tokens`` (``find_thinking_budget``), read by the shape beside the cap
    thinking_budget: int | None = None
    # ``message_digest`` of each message, when the view's builder computed them (the estimate's projection memo)
    digests: tuple[bytes | None, ...] | None = field(default=None, compare=False, repr=False)

    def count_request(self) -> dict[str, Any]:
        """The canonical chat request the tokenizer backends count (keys omitted when empty); built once per
        view and shared: callers never change it."""
        return self._count_request

    @cached_property
    def _count_request(self) -> dict[str, Any]:
        messages = self.messages
        if set(map(type, messages)) <= {dict}:  # the usual tuple of dicts: copied at C speed
            request: dict[str, Any] = {"messages": list(messages)}
        else:
            request = {"messages": [m if type(m) is dict else dict(m) for m in messages]}
        if self.tools:
            request["tools"] = [dict(t) for t in self.tools]
        if self.template_kwargs:
            request["chat_template_kwargs"] = dict(self.template_kwargs)
        for name in PROMPT_OPTIONS:
            if self.options.get(name) is not None:
                request[name] = self.options[name]
        return request

    def frame(self) -> ProviderRequest:
        """This request without its conversation (system prompt, tools, template kwargs, options)."""
        return ProviderRequest(self.system_messages(), self.tools, self.template_kwargs, self.options,
                               None, self.model, self.output_limit)

    def system_messages(self) -> tuple[Mapping[str, Any], ...]:
        leading = []
        for message in self.messages:
            if message.get("role") != "system":
                break
            leading.append(message)
        return tuple(leading)

    def with_conversation(self, conversation: Sequence[Mapping[str, Any]]) -> ProviderRequest:
        """This request's frame around another conversation (what a compacted list will be sent as)."""
        body = tuple(m for m in conversation if isinstance(m, Mapping) and m.get("role") != "system")
        return ProviderRequest(self.system_messages() + body, self.tools, self.template_kwargs, self.options,
                               self.cap, self.model, self.output_limit, self.thinking_budget)

    @cached_property
    def content_key(self) -> str | None:
        """What the request says, without what a wire format rewrites: roles, text, tool calls by name and
        canonical arguments, tool results, tool schemas, prompt options. Why: Hermes' estimators see chat
        messages while a Responses or Converse transport sends ``input`` items or content blocks built from them
        (no call ids kept, arguments re-serialised, instructions apart); both views of one request share this
        key, so it is counted once. None when some part is not JSON."""
        try:
            canonical = json.dumps({"messages": [_said(m) for m in self.messages],
                                    "tools": [_tool_said(t) for t in self.tools],
                                    "template_kwargs": dict(self.template_kwargs), "options": dict(self.options)},
                                   sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            return None
        return "content:" + hashlib.sha256(canonical.encode()).hexdigest()

    @cached_property
    def key(self) -> str | None:
        """The counter's cache key of the count request (one definition, computed once per request): equal
        keys mean one provider-visible prompt; None when the request is not JSON (then never cached)."""
        return request_key(self.count_request(), self.digests)


def _text(content: Any) -> str:
    """Chat content as one text: strings stripped, text parts joined, other parts (media placeholders) as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n".join(part["text"].strip() if isinstance(part, Mapping) and part.get("type") == "text"
                         and isinstance(part.get("text"), str) else json.dumps(part, sort_keys=True)
                         for part in content)
    return json.dumps(content, sort_keys=True)


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments.strip()
    return arguments


def _said(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls")
    functions = [call.get("function") for call in calls if isinstance(call, Mapping)] if isinstance(calls, list) else []
    return [message.get("role"), _text(message.get("content")),
            [[f.get("name"), _arguments(f.get("arguments"))] for f in functions if isinstance(f, Mapping)]]


def _tool_said(tool: Mapping[str, Any]) -> list[Any]:
    function = tool.get("function")
    function = function if isinstance(function, Mapping) else tool
    return [function.get("name"), function.get("description") or "", function.get("parameters")]


def positive_int(value: Any) -> int | None:
    """``value`` when it is a positive int (bools are not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
