"""What a compaction reads from each message, computed once per message and remembered by content.

Why: ``compress()`` walked the compacted region three times (anchors, recall entries, the user's words),
decoding every JSON tool result twice and hashing every message twice: at 200k tokens most of its time.
A message's facts are a function of its ``MessageKey`` (role, text, tool call id, tool calls), so they are
computed once, when the message first reaches a request the engine counts (``observe``) or else at the
compaction, and looked up by key afterwards. The key holds the host's own strings (whose hashes Python
caches), so a lookup costs the key's construction, not a pass over the text.

Bounded: least recently used scans are dropped beyond ``MAX_SCAN_CHARS`` characters (each scan counts its
message's text, its recall text and a fixed overhead). Thread-safe. In memory only.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from baton_engine.compaction.anchors import AnchorFacts, anchor_facts
from baton_engine.compaction.user_words import user_text
from baton_engine.messages.entry import MessageKey, entry_text, is_baton_key, json_object, message_key, ref_of

PATH_KEYS = ("path", "file_path", "filepath", "filename", "file")  # tool arguments that name a file

MAX_SCAN_CHARS = 32 * 1024 * 1024
# What a scan costs beyond its texts (its objects, facts, tokens and the key's tuples), counted per message, so the
# bound holds for many short messages; measured with tracemalloc (the figure: benchmarks/FINDINGS.md, "Figures
# behind the code's constants", compaction scan).
SCAN_OVERHEAD_CHARS = 1_300
# Text scanned ahead per request beyond its first new message: bounds what a resumed long history adds to each
# request while the scan catches up (the cost per KB: benchmarks/results/REPORT.md, `scan ahead ms / KB`).
OBSERVE_CHARS = 16 * 1024


@dataclass(frozen=True)
class MessageScan:
    key: MessageKey
    ref: str
    entry_text: str  # what recall keeps of it
    anchors: AnchorFacts
    user_text: str | None  # a user message's own words, redacted
    call_paths: tuple[tuple[str, str], ...]  # (tool name, path argument) of an assistant's calls
    baton: bool  # one of Baton's own blocks or notices


def scan(key: MessageKey) -> MessageScan:
    return MessageScan(key, ref_of(key), entry_text(key), anchor_facts(key),
                       user_text(key.text) if key.role == "user" else None, call_paths(key), is_baton_key(key))


def call_paths(key: MessageKey) -> tuple[tuple[str, str], ...]:
    """Every path-like argument (``PATH_KEYS``) of the message's tool calls, with the tool's name."""
    found = []
    for _call_id, name, arguments in key.calls if key.role == "assistant" else ():
        parsed = json_object(arguments)
        for field in PATH_KEYS if parsed is not None else ():
            value = parsed.get(field)
            if isinstance(value, str) and value.strip() and "\x00" not in value:
                found.append((name, value))
    return tuple(found)


def _size(found: MessageScan) -> int:
    return len(found.key.text) + len(found.entry_text) + SCAN_OVERHEAD_CHARS


_memo: LRUCache[MessageKey, MessageScan] = LRUCache(maxsize=MAX_SCAN_CHARS, getsizeof=_size)
_lock = threading.Lock()


def scan_of(message: dict[str, Any]) -> MessageScan:
    """The message's scan, from the memo when a message with the same key was scanned before."""
    return _lookup(message)[0]


def scan_all(messages: Sequence[Any]) -> tuple[list[MessageScan | None], int]:
    """Each message's scan (None for what is not a dict) and how many of them had to be scanned now."""
    found = [_lookup(m) if isinstance(m, dict) else (None, False) for m in messages]
    return [item for item, _fresh in found], sum(fresh for _item, fresh in found)


def _lookup(message: dict[str, Any]) -> tuple[MessageScan, bool]:
    key = message_key(message)
    try:
        with _lock:
            found = _memo.get(key)
    except TypeError:  # an unhashable role or tool call id: scanned, never remembered
        return scan(key), True
    if found is not None:
        return found, False
    found = scan(key)
    if _size(found) <= MAX_SCAN_CHARS:
        with _lock:
            _memo[key] = found
    return found, True


def observe(messages: Sequence[Any], start: int, budget_chars: int = OBSERVE_CHARS) -> int:
    """Scan the messages a growing conversation added since position ``start``, ahead of the compaction, and
    return the position to start from next time. At most ``budget_chars`` characters of text are scanned per
    call (always one message at least), so a long history seen for the first time (a resumed session) spreads
    over several requests instead of delaying one; what is still unscanned at a compaction is scanned then.
    A list shorter than ``start`` (compacted since) continues from its end."""
    position = min(start, len(messages))
    spent = 0
    while position < len(messages) and (spent < budget_chars or position == start):
        message = messages[position]
        if isinstance(message, dict):
            spent += len(scan_of(message).key.text)
        position += 1
    return position


def clear() -> None:
    with _lock:
        _memo.clear()
