"""The in-process index: bounded by UTF-8 size plus a cost per entry, LRU by lineage, thread-safe, shared across
deep copies."""

from __future__ import annotations

import copy

from batontest.threads import run_in_threads

from baton_engine.recall import MemoryIndex
from baton_engine.recall.memory import ENTRY_OVERHEAD_BYTES as OVERHEAD


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_size_is_the_utf8_size_of_what_is_stored_plus_the_entry_cost() -> None:
    index = MemoryIndex()
    index.add("a", [user("héllo"), {"role": "system", "content": "not indexed"}])
    assert index.size_bytes == len("héllo".encode()) + OVERHEAD
    index.add("b", [{"role": "system", "content": "not indexed"}])
    assert index.keys() == ["a"], "a lineage with nothing indexed is not kept"


def test_the_least_recently_used_lineage_goes_first() -> None:
    index = MemoryIndex(max_bytes=30 + 2 * OVERHEAD)
    index.add("a", [user("a" * 10)])
    index.add("b", [user("b" * 10)])
    index.source("a").entries()  # reading a lineage counts as use
    index.add("c", [user("c" * 15)])
    assert index.keys() == ["a", "c"] and index.size_bytes == 25 + 2 * OVERHEAD


def test_one_lineage_over_the_bound_loses_its_oldest_messages() -> None:
    index = MemoryIndex(max_bytes=25 + 2 * OVERHEAD)
    refs = index.add("a", [user(f"message {n:02d}") for n in range(5)])
    kept = [entry.ref for entry in index.source("a").entries()]
    assert kept == refs[-2:] and index.size_bytes == 20 + 2 * OVERHEAD
    assert index.add("a", [user("y" * 1000)]) == []  # alone larger than the bound: not kept


def test_repeated_messages_are_stored_once_with_stable_positions() -> None:
    index = MemoryIndex()
    index.add("a", [user("one"), user("two")])
    second = index.add("a", [user("two"), user("three")])
    entries = index.source("a").entries()
    assert second == [entries[2].ref]
    assert [(e.text, e.position) for e in entries] == [("one", 0), ("two", 1), ("three", 2)]


def test_carry_over_and_drop() -> None:
    index = MemoryIndex()
    index.add("old", [user("kept across rotation")])
    index.carry_over("old", "new")
    assert index.keys() == ["new"] and index.source("new").entries()[0].text == "kept across rotation"
    index.drop("new")
    assert index.keys() == [] and index.size_bytes == 0


def test_a_deep_copied_engine_shares_the_index() -> None:
    index = MemoryIndex()
    holder = {"index": index}
    assert copy.deepcopy(holder)["index"] is index


def test_concurrent_adds_keep_the_size_consistent() -> None:
    index = MemoryIndex(max_bytes=5_000 + 10 * OVERHEAD)

    def work(worker: int) -> None:
        for n in range(200):
            index.add(f"k{worker % 3}", [user(f"worker {worker} message {n}")])
            index.source(f"k{(worker + 1) % 3}").entries()

    run_in_threads(work, 6)
    stored = sum(e.size_bytes + OVERHEAD for key in index.keys() for e in index.source(key).entries())
    assert stored == index.size_bytes <= 5_000 + 10 * OVERHEAD
