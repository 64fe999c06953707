"""One message as recall keeps it (``Entry``), its content-addressed ref, and the key both are computed from.

Why below compaction and recall: a compaction builds the entries of the region it takes out (and cites
their refs in the brief) and recall searches and pages them back in; both must compute the same key, ref
and text of a message, so that vocabulary lives here and neither room imports the other.

Why content-addressed refs: the same message must have the same ref whether it is found in Hermes'
session store or in Baton's in-process index, and whether Hermes rotated the session (the kept tail
is then stored twice, in parent and child) or compacted in place. A ref derived from the message
itself is stable across all of these, lets the compaction brief cite a message before any store has
seen it, and deduplicates the rotation copies for free.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from cachetools import LRUCache

from baton_engine.messages.markers import is_baton_role_text, message_text

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
        """UTF-8 size of ``searchable`` (its parts and the newlines joining them), without building it."""
        parts = [part for part in (self.text, self.tool_name, self.arguments) if part]
        return sum(len(part) if part.isascii() else len(part.encode("utf-8", "surrogatepass")) for part in parts) \
            + max(len(parts) - 1, 0)


def _calls(message: Message) -> list[tuple[str, str, str]]:
    """(id, name, arguments) of an assistant message's tool calls; malformed calls are skipped. Arguments are
    canonical JSON (sorted keys, compact) when they parse: Hermes stores them as the model wrote them and sends
    them normalised, and both forms are one message (one ref, one scan)."""
    found = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            found.append((str(call.get("id") or ""), function["name"], _canonical_arguments(function.get("arguments"))))
    return found


def _canonical_arguments(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        with _CANONICAL_LOCK:
            known = _CANONICAL.get(arguments)
        if known is not None:
            return known
        try:
            canonical = _canonical_json(json.loads(arguments))
        except ValueError:
            canonical = arguments  # not JSON: kept as the model wrote it
        if 2 * max(len(arguments), len(canonical)) <= CANONICAL_MEMO_CHARS:
            with _CANONICAL_LOCK:
                _CANONICAL[arguments] = canonical
        return canonical
    return _canonical_json(arguments)


def _canonical_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


# Canonical tool-call arguments remembered by their text (LRU): every lookup of a message's key needs them, and a
# write_file call's arguments can be 100 KB of JSON. Bounded in characters (the text and its canonical form).
CANONICAL_MEMO_CHARS = 8 * 1024 * 1024
_CANONICAL: LRUCache[str, str] = LRUCache(maxsize=CANONICAL_MEMO_CHARS, getsizeof=lambda canonical: 2 * len(canonical))
_CANONICAL_LOCK = threading.Lock()


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


class MessageKey(NamedTuple):
    """What a message's recall entry, ref and compaction facts are computed from (role, text, tool call id,
    tool calls): two messages with equal keys have equal refs, entries and facts."""

    role: Any
    text: str
    tool_call_id: Any
    calls: tuple[tuple[str, str, str], ...]


def message_key(message: Message) -> MessageKey:
    return MessageKey(message.get("role"), message_text(message), message.get("tool_call_id"), tuple(_calls(message)))


def ref_of(key: MessageKey) -> str:
    """The content-addressed ref of a message's key."""
    canonical = json.dumps([key.role, key.text, key.tool_call_id, [list(call) for call in key.calls]],
                           ensure_ascii=False, separators=(",", ":"))
    return REF_PREFIX + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:REF_HEX_CHARS]


def ref_for(message: Message) -> str:
    """The content-addressed ref of a message (role, text, tool call id, tool calls)."""
    return ref_of(message_key(message))


def entry_text(key: MessageKey) -> str:
    """What recall keeps of a message: its text, an assistant's calls as lines, a JSON tool result decoded."""
    if key.role == "assistant":
        lines = [f"[tool call {name}] {args}" for _, name, args in key.calls]
        return "\n".join([key.text, *lines] if key.text else lines)
    if key.role == "tool":
        return tool_result_text(key.text)
    return key.text


def is_baton_key(key: MessageKey) -> bool:
    """``is_baton_message`` of a message with this key: a block or notice an earlier compaction wrote."""
    return is_baton_role_text(key.role, key.text)


class EntryFacts(Protocol):
    key: MessageKey
    ref: str
    entry_text: str
    baton: bool


@dataclass(frozen=True)
class _Facts:
    key: MessageKey
    ref: str
    entry_text: str
    baton: bool


def entry_facts(message: Message) -> EntryFacts:
    key = message_key(message)
    return _Facts(key, ref_of(key), entry_text(key), is_baton_key(key))


def build_entries(messages: Iterable[Message], facts: Callable[[Message], EntryFacts] = entry_facts) -> list[Entry]:
    """Entries for the conversation messages (system messages and Baton's own blocks skipped).

    A tool result gets the name and arguments of the assistant call it answers (looked up in the same
    list: compaction regions are pair-safe). Repeated messages keep their first position. ``facts``: where
    each message's key, ref and text come from (compaction passes its memoised scan).
    """
    entries: list[Entry] = []
    seen: set[str] = set()
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant", "tool"):
            continue
        found = facts(message)
        if found.baton:
            continue
        text, tool_name, arguments = found.entry_text, None, None
        if role == "assistant":
            calls.update({call_id: (name, args) for call_id, name, args in found.key.calls if call_id})
        elif role == "tool":
            tool_name, arguments = calls.get(str(message.get("tool_call_id") or ""), (message.get("tool_name"), None))
        if found.ref in seen or not (text or arguments):
            continue
        seen.add(found.ref)
        entries.append(Entry(found.ref, len(entries), role, text, tool_name, arguments))
    return entries
