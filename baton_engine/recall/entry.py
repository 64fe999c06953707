"""One searchable message of a session lineage, its stable ref, and the source protocol.

Why content-addressed refs: the same message must have the same ref whether it is found in Hermes'
session store or in Baton's in-process index, and whether Hermes rotated the session (the kept tail
is then stored twice, in parent and child) or compacted in place. A ref derived from the message
itself is stable across all of these, lets the compaction brief cite a message before any store has
seen it, and deduplicates the rotation copies for free.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from baton_engine.compaction.markers import is_baton_message, message_text

Message = dict[str, Any]
REF_PREFIX = "msg-"
REF_HEX_CHARS = 16


@dataclass(frozen=True)
class Entry:
    """A message as recall sees it: ``text`` is what ``expand`` pages back in (before redaction)."""

    ref: str
    position: int
    role: str
    text: str
    tool_name: str | None = None
    arguments: str | None = None

    @property
    def searchable(self) -> str:
        """Text plus the tool name and arguments, so a result is found by the command that produced it."""
        return "\n".join(part for part in (self.text, self.tool_name, self.arguments) if part)

    @property
    def size_bytes(self) -> int:
        return len(self.searchable.encode("utf-8", "surrogatepass"))


class RecallSource(Protocol):
    """The messages of ONE session lineage that were compacted away, in order."""

    def entries(self) -> Sequence[Entry]: ...

    def get(self, ref: str) -> Entry | None: ...


def _calls(message: Message) -> list[tuple[str, str, str]]:
    """(id, name, arguments) of an assistant message's tool calls; malformed calls are skipped."""
    found = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, sort_keys=True, ensure_ascii=False) if arguments is not None else ""
            found.append((str(call.get("id") or ""), function["name"], arguments))
    return found


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object (how Hermes' tools answer), else None."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _field_lines(key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [f"{key}:\n{value}" if "\n" in value else f"{key}: {value}"]
    if isinstance(value, dict) and value:
        return [line for name, item in value.items() for line in _field_lines(f"{key}.{name}", item)]
    if isinstance(value, list) and value:
        return [line for index, item in enumerate(value) for line in _field_lines(f"{key}[{index}]", item)]
    return [f"{key}: {json.dumps(value, ensure_ascii=False)}"]


def tool_result_text(text: str) -> str:
    """A JSON tool result as ``key: value`` lines (nested fields as ``key.name`` / ``key[i]``), multi-line
    strings unescaped at any depth.

    Why: ``read_file`` and ``terminal`` answer with one JSON line whose file or output lines are
    ``\\n`` escapes, and ``todo`` nests them in a list of items; decoded, a line of the file is a line of
    the entry (``expand`` pages by line) and an escape never glues a word to the one before it (search).
    """
    data = json_object(text)
    if data is None:
        return text
    return "\n".join(line for key, value in data.items() for line in _field_lines(key, value))


def ref_for(message: Message) -> str:
    """The content-addressed ref of a message (role, text, tool call id, tool calls)."""
    canonical = json.dumps(
        [message.get("role"), message_text(message), message.get("tool_call_id"), _calls(message)],
        ensure_ascii=False, separators=(",", ":"),
    )
    return REF_PREFIX + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:REF_HEX_CHARS]


def build_entries(messages: Iterable[Message]) -> list[Entry]:
    """Entries for the conversation messages (system messages and Baton's own blocks skipped).

    A tool result gets the name and arguments of the assistant call it answers (looked up in the same
    list: compaction regions are pair-safe). Repeated messages keep their first position.
    """
    entries: list[Entry] = []
    seen: set[str] = set()
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant", "tool") or is_baton_message(message):
            continue
        text, tool_name, arguments = message_text(message), None, None
        if role == "assistant":
            message_calls = _calls(message)
            calls.update({call_id: (name, args) for call_id, name, args in message_calls if call_id})
            lines = [f"[tool call {name}] {args}" for _, name, args in message_calls]
            text = "\n".join([text, *lines] if text else lines)
        elif role == "tool":
            text = tool_result_text(text)
            tool_name, arguments = calls.get(str(message.get("tool_call_id") or ""), (message.get("tool_name"), None))
        ref = ref_for(message)
        if ref in seen or not (text or arguments):
            continue
        seen.add(ref)
        entries.append(Entry(ref, len(entries), role, text, tool_name, arguments))
    return entries
