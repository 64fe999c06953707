"""Every request shape Hermes 0.19.0 produces, turned into one ``ProviderRequest``.

Why here: the shapes are Hermes' (chat-completions kwargs, ``anthropic_messages`` kwargs with a
separate ``system`` and content blocks, ``codex_responses`` kwargs (``instructions`` + ``input`` items),
``bedrock_converse`` kwargs (``system`` blocks, Converse content blocks, ``toolConfig``), the estimators'
``(messages, system_prompt, tools)``, the auxiliary builder's kwargs); the view they become is core. Every
image or document part becomes the same ``tokens.media`` placeholder in every view (its cost, not its
base64), so a request's estimate and its transport view share one key. The estimators see Hermes' stored messages
before its transport strips the bookkeeping keys the wire never carries (``tool_name``, ``reasoning``,
``finish_reason``, ``timestamp``, ``_``-prefixed markers, the ``api_content`` sidecar), so
``from_estimate`` applies the same projection: the pre-API estimate and the middleware then count the
same provider-visible prompt, once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.tokens.prefix_memo import PrefixMemo
from baton_engine.request import PROMPT_OPTIONS, ProviderRequest, find_cap
from baton_engine.tokens.media import as_placeholder, content_with_placeholders, part_tokens
from baton_engine.tokens.request_key import message_digest

# Keys Hermes keeps on stored messages but its chat-completions transport never sends.
INTERNAL_MESSAGE_KEYS = frozenset({
    "tool_name", "reasoning", "finish_reason", "timestamp", "codex_reasoning_items", "codex_message_items",
    "effect_disposition", "api_content",
})
INTERNAL_TOOL_CALL_KEYS = frozenset({"call_id", "response_item_id", "extra_content"})


@functools.cache
def transport_strips_tool_name() -> bool:
    """True when this Hermes' chat transport drops ``name`` from tool results (0.22: strict providers reject
    it; 0.19 sends it): asked of Hermes' own sanitizer once, with a probe message (no user data)."""
    try:
        from agent.transports.chat_completions import _sanitize_message
    except ImportError:  # another Hermes (0.19): no such sanitizer, the name is sent
        return False
    try:
        probe = {"role": "tool", "name": "probe", "tool_call_id": "c", "content": "."}
        sanitized = _sanitize_message(probe, False)
        return isinstance(sanitized, dict) and "name" not in sanitized
    # Hermes' private sanitizer (another version may change its shape or fail in any way): count the message as stored
    except Exception:  # noqa: BLE001
        return False


def _sent_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A stored Hermes message as its loop and transport send it: bookkeeping keys dropped, the sidecar
    substituted, text stripped and tool-call arguments re-serialised compactly with sorted keys (Hermes
    normalises them for prompt-cache prefixes; idempotent on messages it already normalised)."""
    sent = {k: v for k, v in message.items()
            if k not in INTERNAL_MESSAGE_KEYS and not (isinstance(k, str) and k.startswith("_"))}
    if sent.get("role") == "tool" and "name" in sent and transport_strips_tool_name():
        del sent["name"]
    sidecar = message.get("api_content")
    if isinstance(sidecar, str) and sidecar and message.get("role") in ("user", "assistant"):
        sent["content"] = sidecar
    if isinstance(sent.get("content"), str):
        sent["content"] = sent["content"].strip()
    elif isinstance(sent.get("content"), list):
        sent["content"] = content_with_placeholders(sent["content"])
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


def project(message: Mapping[str, Any]) -> tuple[dict[str, Any], bytes | None]:
    """A stored message as sent, and its key digest: what the estimate's view needs of each message (an agent's
    ``hermes/memos.AgentMemos.projected`` remembers it, so each message is projected once per agent)."""
    sent = _sent_message(message)
    return sent, message_digest(sent)


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


def _with_placeholders(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A chat message with its media parts as placeholders (the message itself when it has none)."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    converted = content_with_placeholders(content)
    return message if converted is content else {**message, "content": converted}


def from_chat_kwargs(request: Mapping[str, Any]) -> ProviderRequest | None:
    """Chat-completions kwargs (main loop or auxiliary); None when there is no message list."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    model = request.get("model")
    return ProviderRequest(
        messages=tuple(map(_with_placeholders, _mappings(messages))), tools=_mappings(request.get("tools")),
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


def from_responses_kwargs(request: Mapping[str, Any]) -> ProviderRequest | None:
    """``codex_responses`` kwargs (OpenAI Responses API): ``instructions`` becomes the system message, ``input``
    items chat messages (message items by role; ``function_call`` items the previous assistant message's
    tool calls; ``function_call_output`` tool messages), function tools function schemas. Encrypted reasoning
    items cannot be counted by anyone but the provider: they are left out, and its reported usage (the
    anchor) covers them. None when there is no ``input`` list."""
    items = request.get("input")
    if not isinstance(items, list):
        return None
    instructions = request.get("instructions")
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for item in _mappings(items):
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            if not (messages and messages[-1].get("role") == "assistant"):
                messages.append({"role": "assistant", "content": ""})
            messages[-1] = {**messages[-1], "tool_calls": [*messages[-1].get("tool_calls", []), call]}
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _responses_content(item.get("output"))})
        elif kind in (None, "message") and item.get("role"):
            messages.append({"role": item.get("role"), "content": _responses_content(item.get("content"))})
    reasoning = request.get("reasoning")
    options = _options(request)
    if isinstance(reasoning, Mapping) and reasoning.get("effort") and "reasoning_effort" not in options:
        options["reasoning_effort"] = reasoning["effort"]
    tools = tuple(_function_tool(t.get("name"), t.get("description"), t.get("parameters"))
                  for t in _mappings(request.get("tools")) if t.get("type") == "function")
    model = request.get("model")
    return ProviderRequest(messages=tuple(messages), tools=tools, options=options, cap=find_cap(request),
                           model=str(model) if model else None)


def _responses_content(content: Any) -> Any:
    """Responses content (a string, or ``input_text`` / ``output_text`` / ``input_image`` parts) as chat content:
    text joined when there is no media, else text parts and placeholders."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    return _parts_content([_text_or_media(part, part.get("text") if isinstance(part, Mapping) else part)
                           for part in content])


def from_bedrock_kwargs(request: Mapping[str, Any]) -> ProviderRequest | None:
    """``bedrock_converse`` kwargs: the ``system`` text blocks become the system message, Converse content blocks
    chat messages (``text`` joined; ``toolUse`` tool calls; ``toolResult`` tool messages; ``image`` /
    ``document`` placeholders), ``toolConfig`` tools function schemas; the cap is ``inferenceConfig.maxTokens``."""
    converse = request.get("messages")
    if not isinstance(converse, list):
        return None
    system = "\n".join(block["text"] for block in _mappings(request.get("system")) if isinstance(block.get("text"), str))
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in _mappings(converse):
        blocks = _mappings(message.get("content"))
        parts, calls, results = [], [], []
        for block in blocks:
            if isinstance(block.get("toolUse"), Mapping):
                use = block["toolUse"]
                calls.append({"id": use.get("toolUseId"), "type": "function", "function": {
                    "name": use.get("name"), "arguments": json.dumps(use.get("input"), sort_keys=True, default=str)}})
            elif isinstance(block.get("toolResult"), Mapping):
                result = block["toolResult"]
                inner = [_text_or_media(b, b.get("text") if "json" not in b else json.dumps(b["json"], sort_keys=True))
                         for b in _mappings(result.get("content"))]
                results.append({"role": "tool", "tool_call_id": result.get("toolUseId"),
                                "content": _parts_content(inner)})
            elif "reasoningContent" not in block:
                parts.append(_text_or_media(block, block.get("text")))
        messages.extend(results)  # the tool messages that came before this user turn's own text
        if parts or calls or not results:
            messages.append({"role": message.get("role"), "content": _parts_content(parts),
                             **({"tool_calls": calls} if calls else {})})
    config = request.get("toolConfig")
    specs = [t["toolSpec"] for t in _mappings(config.get("tools") if isinstance(config, Mapping) else None)
             if isinstance(t.get("toolSpec"), Mapping)]
    tools = tuple(_function_tool(spec.get("name"), spec.get("description"),
                                 spec["inputSchema"].get("json") if isinstance(spec.get("inputSchema"), Mapping)
                                 else None) for spec in specs)
    model = request.get("modelId", request.get("model"))
    return ProviderRequest(messages=tuple(messages), tools=tools, cap=find_cap(request),
                           model=str(model) if model else None)


# Hermes' api modes whose transport sends another shape than the chat messages its estimators see.
WIRE_MODES = frozenset({"anthropic_messages", "codex_responses", "bedrock_converse"})


def from_provider_kwargs(request: Mapping[str, Any], api_mode: Any = None) -> ProviderRequest | None:
    """The view of whatever the middleware received, by Hermes' ``api_mode``."""
    if api_mode == "anthropic_messages":
        return from_anthropic_kwargs(request)
    if api_mode == "codex_responses":
        return from_responses_kwargs(request)
    if api_mode == "bedrock_converse":
        return from_bedrock_kwargs(request)
    return from_chat_kwargs(request)


def from_estimate(messages: Any, *, system_prompt: str = "", tools: Any = None,
                  frame: ProviderRequest | None = None,
                  memo: PrefixMemo[tuple[dict[str, Any], bytes | None]] | None = None) -> ProviderRequest:
    """An estimator's arguments as the request the transport will send.

    ``frame`` is this agent's last sent request: its template kwargs and options (which the estimators
    are never given) complete the view, and its tools stand in when the caller passed none. ``memo``: the
    agent's projection memo (the estimators see the whole stored history on every request); without one
    every message is projected.
    """
    stored = _mappings(messages)
    projected = memo.results(stored) if memo is not None else [project(m) for m in stored]
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


def _blocks_content(value: Any) -> Any:
    """Anthropic content as chat content: its text (``_block_text``) when it holds no image or document, else
    text parts and media placeholders in order (the shape the estimator's chat messages take)."""
    if not isinstance(value, list) or not any(part_tokens(block) is not None for block in value):
        return _block_text(value)
    return _parts_content([_text_or_media(block, _block_text([block])) for block in value])


def _text_or_media(block: Any, text: Any) -> dict[str, Any] | None:
    """One content part: a placeholder for a media block, else a text part (None: nothing to send)."""
    placeholder = as_placeholder(block)
    if placeholder is not block:
        return placeholder
    return {"type": "text", "text": text} if isinstance(text, str) and text else None


def _parts_content(parts: list[dict[str, Any] | None]) -> Any:
    """Text parts joined (a string) when there is no media, else the parts themselves."""
    kept = [part for part in parts if part is not None]
    if all(part.get("type") == "text" for part in kept):
        return "\n".join(part["text"] for part in kept)
    return kept


def _function_tool(name: Any, description: Any, parameters: Any) -> Mapping[str, Any]:
    """A tool of another API as the function schema tokenizers render."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _anthropic_tool(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """An Anthropic tool (name, description, input_schema) as the function schema tokenizers render."""
    if "function" in tool:
        return tool
    return _function_tool(tool.get("name"), tool.get("description"), tool.get("input_schema"))


def _anthropic_message(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
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

