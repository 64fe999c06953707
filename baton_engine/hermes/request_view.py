"""Every request shape Hermes 0.19.0 produces, turned into one ``ProviderRequest``.

Why here: the shapes are Hermes' (chat-completions kwargs, ``anthropic_messages`` kwargs with a
separate ``system`` and content blocks, the estimators' ``(messages, system_prompt, tools)``, the
auxiliary builder's kwargs); the view they become is core. The estimators see Hermes' stored messages
before its transport strips the bookkeeping keys the wire never carries (``tool_name``, ``reasoning``,
``finish_reason``, ``timestamp``, ``_``-prefixed markers, the ``api_content`` sidecar), so
``from_estimate`` applies the same projection: the pre-API estimate and the middleware then count the
same provider-visible prompt, once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.prefix_memo import PrefixMemo
from baton_engine.request import PROMPT_OPTIONS, ProviderRequest, find_cap
from baton_engine.tokens.request_key import message_digest

# Keys Hermes keeps on stored messages but its chat-completions transport never sends.
INTERNAL_MESSAGE_KEYS = frozenset({
    "tool_name", "reasoning", "finish_reason", "timestamp", "codex_reasoning_items", "codex_message_items",
    "effect_disposition", "api_content",
})
INTERNAL_TOOL_CALL_KEYS = frozenset({"call_id", "response_item_id", "extra_content"})


def _sent_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A stored Hermes message as its loop and transport send it: bookkeeping keys dropped, the sidecar
    substituted, text stripped and tool-call arguments re-serialised compactly with sorted keys (Hermes
    normalises them for prompt-cache prefixes; idempotent on messages it already normalised)."""
    sent = {k: v for k, v in message.items()
            if k not in INTERNAL_MESSAGE_KEYS and not (isinstance(k, str) and k.startswith("_"))}
    sidecar = message.get("api_content")
    if isinstance(sidecar, str) and sidecar and message.get("role") in ("user", "assistant"):
        sent["content"] = sidecar
    if isinstance(sent.get("content"), str):
        sent["content"] = sent["content"].strip()
    calls = sent.get("tool_calls")
    if isinstance(calls, list):
        sent["tool_calls"] = [_sent_call(call) if isinstance(call, Mapping) else call for call in calls]
    return sent


def _sent_call(call: Mapping[str, Any]) -> dict[str, Any]:
    sent = {k: v for k, v in call.items() if k not in INTERNAL_TOOL_CALL_KEYS}
    function = sent.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("arguments"), str):
        try:
            parsed = json.loads(function["arguments"])
        except ValueError:
            return sent  # Hermes repairs invalid JSON its own way: counted as stored
        sent["function"] = {**function, "arguments": json.dumps(parsed, separators=(",", ":"), sort_keys=True)}
    return sent


def _projected(message: Mapping[str, Any]) -> tuple[dict[str, Any], bytes | None]:
    sent = _sent_message(message)
    return sent, message_digest(sent)


# The estimators see the whole stored history on every request: each message is projected (and its key digest
# computed) once.
PROJECTED: PrefixMemo[tuple[dict[str, Any], bytes | None]] = PrefixMemo(_projected)


def _mappings(items: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        return ()
    if set(map(type, items)) <= {dict}:  # the usual list of plain dicts, checked at C speed
        return tuple(items)
    return tuple(item for item in items if type(item) is dict or isinstance(item, Mapping))


def _template_kwargs(request: Mapping[str, Any]) -> dict[str, Any]:
    extra = request.get("extra_body")
    merged: dict[str, Any] = {}
    for source in (extra if isinstance(extra, Mapping) else {}, request):
        kwargs = source.get("chat_template_kwargs")
        if isinstance(kwargs, Mapping):
            merged.update(kwargs)
    return merged


def _options(request: Mapping[str, Any]) -> dict[str, Any]:
    extra = request.get("extra_body")
    options: dict[str, Any] = {}
    for name in PROMPT_OPTIONS:
        value = request.get(name)
        if value is None and isinstance(extra, Mapping):
            value = extra.get(name)
        if value is not None:
            options[name] = value
    return options


def from_chat_kwargs(request: Mapping[str, Any]) -> ProviderRequest | None:
    """Chat-completions kwargs (main loop or auxiliary); None when there is no message list."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    model = request.get("model")
    return ProviderRequest(
        messages=_mappings(messages), tools=_mappings(request.get("tools")),
        template_kwargs=_template_kwargs(request), options=_options(request), cap=find_cap(request),
        model=str(model) if model else None,
    )


def from_anthropic_kwargs(request: Mapping[str, Any]) -> ProviderRequest | None:
    """``anthropic_messages`` kwargs: the separate ``system`` becomes the leading system message, content
    blocks become chat messages (text joined; tool_use -> tool_calls; tool_result -> tool messages) and
    tools function schemas, so any backend (usually rough or anchored here) counts every part."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    system = _block_text(request.get("system"))
    converted: list[Mapping[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in _mappings(messages):
        converted.extend(_anthropic_message(message))
    model = request.get("model")
    tools = tuple(_anthropic_tool(t) for t in _mappings(request.get("tools")))
    return ProviderRequest(
        messages=tuple(converted), tools=tools, options=_options(request),
        cap=find_cap(request), model=str(model) if model else None,
    )


def from_provider_kwargs(request: Mapping[str, Any], api_mode: Any = None) -> ProviderRequest | None:
    """The view of whatever the middleware received, by Hermes' ``api_mode``."""
    if api_mode == "anthropic_messages":
        return from_anthropic_kwargs(request)
    return from_chat_kwargs(request)


def from_estimate(messages: Any, *, system_prompt: str = "", tools: Any = None,
                  frame: ProviderRequest | None = None) -> ProviderRequest:
    """An estimator's arguments as the request the transport will send.

    ``frame`` is this agent's last sent request: its template kwargs and options (which the estimators
    are never given) complete the view, and its tools stand in when the caller passed none.
    """
    projected = PROJECTED.results(_mappings(messages))
    sent = [message for message, _ in projected]
    digests = [digest for _, digest in projected]
    if system_prompt and not (sent and sent[0].get("role") == "system"):
        sent.insert(0, {"role": "system", "content": system_prompt})
        digests.insert(0, message_digest(sent[0]))
    schemas = _mappings(tools) or (frame.tools if frame is not None else ())
    return ProviderRequest(
        messages=tuple(sent), tools=schemas,
        template_kwargs=dict(frame.template_kwargs) if frame is not None else {},
        options=dict(frame.options) if frame is not None else {},
        model=frame.model if frame is not None else None, digests=tuple(digests),
    )


def _block_text(value: Any) -> str:
    """Text of a string or a list of Anthropic content blocks (text and thinking kept, others as JSON)."""
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


def _anthropic_tool(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """An Anthropic tool (name, description, input_schema) as the function schema tokenizers render."""
    if "function" in tool:
        return tool
    return {"type": "function", "function": {"name": tool.get("name"), "description": tool.get("description"),
                                             "parameters": tool.get("input_schema")}}


def _anthropic_message(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    role = message.get("role")
    content = message.get("content")
    if not isinstance(content, list):
        return [{"role": role, "content": _block_text(content)}]
    texts, calls, results = [], [], []
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_use":
            calls.append({"id": block.get("id"), "type": "function", "function": {
                "name": block.get("name"), "arguments": json.dumps(block.get("input"), sort_keys=True, default=str)}})
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                            "content": _block_text(block.get("content"))})
        else:
            texts.append(block)
    converted: list[Mapping[str, Any]] = []
    if texts or calls or not results:
        converted.append({"role": role, "content": _block_text(texts),
                          **({"tool_calls": calls} if calls else {})})
    return converted + results

