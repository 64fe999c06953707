"""What a hit shows and costs, redacted once per content-addressed ref, and prepared off the request path.

Why: a hit's ``tokens`` is the exact count of its whole message redacted (what expanding it costs), and redacting a
160-line tool result takes milliseconds (tens on a loaded CPU): done on the request path the first time a message
is a hit, it was most of a first search's time (benchmarks/recall/recall_latency_bench.py, FINDINGS 18). So a lineage's
new messages are redacted by one background thread when its index grows (``prepare``: at compaction, or at the
first search of a lineage read from Hermes' store), and a search finds them ready. Refs are content-addressed, so a
redacted text never goes stale. Kept per message: the redacted text only when redaction changed it (most messages
hold no secret: then a marker), so 100,000 messages cost a few MB, not their text again.
The count itself is the route's counter's, asked on the request path for the hits an answer holds only
(``tool._packed`` counts each hit as it tries it): a count kept here under a counter's identity went stale across
route switches. What moves off the request path is the counter's own work: at compaction the region's messages are
counted once in the background with the route's counter (``count_ahead``), whose cache (a local tokenizer's pieces)
then answers a hit's count; a remote tokenizer that keeps nothing gains nothing and is asked once more per message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from cachetools import LRUCache

from baton_engine.handoff.redact import redact_text
from baton_engine.messages.entry import Entry
from baton_engine.recall.passages import Passage

ENTRY_BYTES = 100  # what a kept ref costs beyond a changed text (the key, the LRU's bookkeeping)
MESSAGES_BYTES = 16 * 1024 * 1024
_SAME = ""  # redaction changed nothing (a message with text is never redacted to the empty string)
_PASSAGES: LRUCache[tuple[str, int, int], str] = LRUCache(maxsize=4096)
_MESSAGES: LRUCache[str, str] = LRUCache(maxsize=MESSAGES_BYTES, getsizeof=lambda text: ENTRY_BYTES + len(text))
_LOCK = threading.Lock()
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="baton-redact")


def passage_text(passage: Passage) -> str:
    """``passage``'s text redacted (kept for the 4,096 passages shown last)."""
    key = (passage.entry.ref, passage.first_line, passage.last_line)
    with _LOCK:
        found = _PASSAGES.get(key)
    if found is None:
        found = redact_text(passage.text)[0]
        with _LOCK:
            _PASSAGES[key] = found
    return found


def message_text(entry: Entry) -> str:
    """``entry``'s whole text redacted: from the cache when ``prepare`` (or an earlier hit) did it."""
    with _LOCK:
        found = _MESSAGES.get(entry.ref)
    if found is not None:
        return found or entry.text
    text = redact_text(entry.text)[0]
    kept = _SAME if text == entry.text else text
    if ENTRY_BYTES + len(kept) <= MESSAGES_BYTES:
        with _LOCK:
            _MESSAGES[entry.ref] = kept
    return text


def _prepare(entries: Sequence[Entry]) -> None:
    for entry in entries:
        with _LOCK:
            known = entry.ref in _MESSAGES
        if not known:
            message_text(entry)


def prepare(entries: Sequence[Entry]) -> None:
    """Redact ``entries``' texts in the background (a lineage's new messages: off the request path)."""
    if entries:
        _WORKER.submit(_prepare, list(entries))


def _count(entries: Sequence[Entry], count_text: Callable[[str], int]) -> None:
    for entry in entries:
        count_text(message_text(entry))


def count_ahead(entries: Sequence[Entry], count_text: Callable[[str], int]) -> None:
    """Redact and count ``entries`` (a compacted region) in the background with the route's ``count_text``."""
    if entries:
        _WORKER.submit(_count, list(entries), count_text)


def wait_idle() -> None:
    """Block until everything queued so far is redacted (benchmarks and tests)."""
    _WORKER.submit(lambda: None).result()
