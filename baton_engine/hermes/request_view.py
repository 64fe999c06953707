"""Every request Hermes 0.19.0 produces, turned into one ``ProviderRequest`` through the adapter of its shape.

Why here: which shape a request has is Hermes' (its ``api_mode``: chat-completions kwargs, ``anthropic_messages``,
``codex_responses``, ``bedrock_converse``); each shape's reader and writer is core (``baton_engine.shapes``). What
is Hermes' own stays here: the estimators' ``(messages, system_prompt, tools)`` are Hermes' stored messages before
its transport strips the bookkeeping keys the wire never carries (``tool_name``, ``reasoning``, ``finish_reason``,
``timestamp``, ``_``-prefixed markers, the ``api_content`` sidecar), so ``project`` applies the same projection
(the agent's ``agent/memos.AgentMemos.estimate`` builds the estimate's view through it): the pre-API estimate and
the middleware then count the same provider-visible prompt, once. Every image or document part becomes the same
``tokens.media`` placeholder in every view (its cost, not its base64).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from baton_engine.shapes import Shape
from baton_engine.shapes.anthropic import ANTHROPIC
from baton_engine.shapes.bedrock import BEDROCK
from baton_engine.shapes.chat import CHAT
from baton_engine.shapes.responses import RESPONSES
from baton_engine.tokens.media import content_with_placeholders
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
    ``agent/memos.AgentMemos.projected`` remembers it, so each message is projected once per agent)."""
    sent = _sent_message(message)
    return sent, message_digest(sent)


# Hermes' api modes and the shape each one's transport sends (any other mode sends chat completions).
SHAPES: dict[str, Shape] = {"anthropic_messages": ANTHROPIC, "codex_responses": RESPONSES, "bedrock_converse": BEDROCK}
# Hermes' api modes whose transport sends another shape than the chat messages its estimators see.
WIRE_MODES = frozenset(SHAPES)


def shape_for(api_mode: Any) -> Shape:
    """The adapter of the shape Hermes sends in ``api_mode``."""
    return SHAPES.get(api_mode, CHAT) if isinstance(api_mode, str) else CHAT
