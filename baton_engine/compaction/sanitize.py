"""Turn an arbitrary message list into atomic units that can be cut anywhere without breaking pairs.

A unit is one user message, one plain assistant message, or an assistant ``tool_calls``
message followed by exactly the results that answer it (parallel calls included). Cutting
the transcript only between units means a kept tool result always has its call and a kept
call always has its results, the shape strict providers demand ("role 'tool' must be a
response to a preceding message with 'tool_calls'", Hermes #20883/#51218).

Garbage is repaired or dropped deterministically and counted, never raised: non-dict items,
unknown roles, impossible content, results with no call (orphans), calls with no result
(stripped from their message, as Hermes' own sanitizer does), and earlier Baton messages
(replaced by the caller, never stacked).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from baton_engine.messages.markers import embedded_block, is_baton_message

SYSTEM_ROLES = frozenset({"system", "developer"})
CONVERSATION_ROLES = frozenset({"user", "assistant", "tool"})
Message = dict[str, Any]
Unit = list[Message]


@dataclass
class Sanitized:
    """The input split into what is kept at the head, the cuttable units, and what was repaired."""

    leading_system: list[Message] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    latest_request_unit: int | None = None
    previous_block: str | None = None
    dropped: Counter[str] = field(default_factory=Counter)


def has_content(message: Message) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() != ""
    return isinstance(content, list) and len(content) > 0


HERMES_TODO_SNAPSHOT = "[Your active task list was preserved across context compression]"


def own_words(text: str) -> str:
    """A user turn's text without what the host merged into it: Hermes appends its todo snapshot to the
    user turn before it (role-alternation repair); that list is scaffolding, not the user's words."""
    return text.split(HERMES_TODO_SNAPSHOT, 1)[0].strip()


def is_real_user_request(message: Message) -> bool:
    """A user turn with something in it that no runtime flagged as synthetic scaffolding.

    Hosts mark injected user-role scaffolding with ``*_synthetic`` flags (Hermes: todo snapshots,
    empty-response recovery); those are kept if they fit but never count as the user's request.
    """
    if message.get("role") != "user" or not has_content(message):
        return False
    return not any(isinstance(key, str) and key.endswith("_synthetic") and flag for key, flag in message.items())


def _valid_shape(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    role = message.get("role")
    if not isinstance(role, str) or (role not in CONVERSATION_ROLES and role not in SYSTEM_ROLES):
        return False
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return False
    return not (role == "user" and content is None)


def _call_id(call: Any) -> str | None:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return None
    if not isinstance(call["function"].get("name"), str):
        return None
    call_id = call.get("id")
    return call_id if isinstance(call_id, str) and call_id else None


def sanitize(messages: Any) -> Sanitized:
    """Split ``messages`` into leading system messages and pair-safe units; never raises on data. The units
    hold the host's own message dicts (a repaired tool-call message is a new dict): read-only here; what the
    compaction returns is copied by the builder (``copy_json``), so the host's list is never aliased."""
    result = Sanitized()
    items = list(messages) if isinstance(messages, (list, tuple)) else []
    clean: list[Message] = []
    for item in items:
        if not _valid_shape(item):
            result.dropped["malformed"] += 1
        elif is_baton_message(item):
            result.dropped["replaced"] += 1
            result.previous_block = embedded_block(item) or result.previous_block
        else:
            clean.append(item)

    index = 0
    while index < len(clean) and clean[index]["role"] in SYSTEM_ROLES:
        result.leading_system.append(clean[index])
        index += 1
    while index < len(clean):
        message = clean[index]
        role = message["role"]
        if role == "assistant" and message.get("tool_calls") is not None:
            index = _take_tool_group(clean, index, result)
            continue
        index += 1
        if role in SYSTEM_ROLES:
            result.dropped["system"] += (
                1  # a mid-transcript system message would replace the host's prompt on some adapters
            )
        elif role == "tool":
            result.dropped["orphans"] += 1
        elif role == "assistant" and not has_content(message):
            result.dropped["malformed"] += 1
        else:
            result.units.append([message])
            if is_real_user_request(message):
                result.latest_request_unit = len(result.units) - 1
    return result


def _take_tool_group(clean: list[Message], start: int, result: Sanitized) -> int:
    """Consume an assistant tool_calls message and the tool results right after it; return the next index."""
    assistant = clean[start]
    raw_calls = assistant["tool_calls"]
    raw_calls = raw_calls if isinstance(raw_calls, list) else []
    calls: dict[str, Any] = {}
    for call in raw_calls:
        call_id = _call_id(call)
        if call_id is not None and call_id not in calls:
            calls[call_id] = call
    results: list[Message] = []
    answered: set[str] = set()
    index = start + 1
    while index < len(clean) and clean[index]["role"] == "tool":
        tool_call_id = clean[index].get("tool_call_id")
        if isinstance(tool_call_id, str) and tool_call_id in calls and tool_call_id not in answered:
            answered.add(tool_call_id)
            results.append(clean[index])
        else:
            result.dropped["orphans"] += 1
        index += 1
    kept_calls = [call for call_id, call in calls.items() if call_id in answered]
    result.dropped["stripped_calls"] += (
        len(raw_calls) - len(kept_calls) + (0 if isinstance(assistant["tool_calls"], list) else 1)
    )
    head = {key: value for key, value in assistant.items() if key != "tool_calls"}
    if kept_calls:
        head["tool_calls"] = kept_calls
        result.units.append([head, *results])
    elif has_content(head):
        result.units.append([head])
    else:
        result.dropped["malformed"] += 1
    return index
