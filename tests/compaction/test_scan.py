"""The compaction scan: each message scanned once (ahead, as requests carry it), bounded per request and in
memory, and keyed by what its facts are computed from."""

from __future__ import annotations

import json

import pytest
from cachetools import LRUCache

from baton_engine.compaction import scan


def _tool_result(n: int, chars: int) -> dict:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": json.dumps({"output": f"run_{n} " + "x" * chars})}


@pytest.fixture(autouse=True)
def empty_memo():
    scan.clear()
    yield
    scan.clear()


def test_a_growing_conversation_is_scanned_once_per_message():
    history = [{"role": "user", "content": "fix build-4821"}, _tool_result(1, 100)]
    position = scan.observe(history, 0)
    assert position == 2
    history.append({"role": "assistant", "content": "done with run_1"})
    position = scan.observe(history, position)
    assert position == 3
    _, fresh = scan.scan_all(history)
    assert fresh == 0  # the compaction finds every message already scanned
    copies = [dict(m) for m in history]  # Hermes' api copies: same strings, new dicts
    assert scan.scan_all(copies)[1] == 0


def test_the_scan_ahead_is_bounded_per_request_and_resumes():
    history = [_tool_result(n, 10_000) for n in range(6)]
    first = scan.observe(history, 0)
    assert first == 2  # 16 KB of text per request: two 10 KB results, then the next request goes on
    assert scan.observe(history, first) == 4
    assert scan.observe(history[:3], 4) == 3  # a shorter (compacted) list continues from its end
    assert scan.scan_all(history)[1] == 2  # what no request scanned yet is scanned by the compaction
    huge = [_tool_result(9, 50_000)]
    assert scan.observe(huge, 0) == 1  # one message per request at least, however large


def test_facts_come_from_the_key_and_are_shared_by_equal_keys():
    message = {"role": "user", "content": "deadline is Friday; never touch prod-7"}
    same = {**message, "timestamp": 5, "_flag": True}
    assert scan.scan_of(message) is scan.scan_of(same)
    assert scan.scan_of({**message, "content": "other"}) is not scan.scan_of(message)
    unhashable = {"role": "tool", "tool_call_id": ["not", "hashable"], "content": "x"}
    assert scan.scan_all([unhashable])[1] == 1 and scan.scan_all([unhashable])[1] == 1  # scanned, not kept


def test_the_memo_is_bounded_by_characters(monkeypatch):
    memo = LRUCache(maxsize=3 * (10_000 + scan.SCAN_OVERHEAD_CHARS) * 2, getsizeof=scan._size)
    monkeypatch.setattr(scan, "_memo", memo)
    messages = [{"role": "user", "content": f"{n} " + "y" * 10_000} for n in range(10)]
    scan.scan_all(messages)
    assert memo.currsize <= memo.maxsize and len(memo) < len(messages)
    assert scan.scan_all(messages[-2:])[1] == 0 and scan.scan_all(messages[:1])[1] == 1  # oldest dropped first
