"""Ranking in the user's words (issue 32): stemming, the relevance floor ("not found"), the answer-bearing lines
of a long tool result, the per-call budget with paging, and lineages that never share an index."""

from __future__ import annotations

import json

from baton_engine.recall import MemoryIndex, recall_tool, search
from baton_engine.recall.tool import SEARCH_BUDGET_TOKENS
from baton_engine.results import dumps


def _read(call_id: str, path: str, lines: list[str]) -> list[dict]:
    call = {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}
    content = "\n".join(f"{n:6d}|{line}" for n, line in enumerate(lines, 1))
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"content": content})}]


def _filler(tag: str, count: int) -> list[str]:
    return [f"def {tag}_step_{n}(frame): return frame.merge(limit={n})" for n in range(count)]


def _session() -> list[dict]:
    lines = _filler("ledger", 150)
    lines[79] = "ROUNDING = decimal.ROUND_HALF_EVEN  # banker's rounding, required by the auditors"
    return [{"role": "user", "content": "Review src/billing/invoice.py please."},
            *_read("c1", "src/billing/invoice.py", lines),
            {"role": "user", "content": "We settled the staging pooler on DB_PORT=6543, agreed with ops."},
            *_read("c2", "src/cart/views.py", _filler("cart", 120))]


def _source():
    index = MemoryIndex()
    index.add("k", _session())
    return index.source("k")


def test_a_stemmed_word_finds_the_answer_bearing_lines_not_the_first_ones(qwen_count) -> None:
    hit = search(_source(), "which mode of rounding do totals use?", 3, qwen_count)[0]
    assert hit.tool_name == "read_file" and "ROUND_HALF_EVEN" in hit.snippet
    assert hit.first_line <= hit.line <= hit.last_line and hit.first_line > 1
    assert "ledger_step_0(" not in hit.snippet  # the window of the match, not the file's first lines


def test_nothing_relevant_is_not_found_but_the_closest_hits_come_back_weak(qwen_count) -> None:
    absent = recall_tool(_source(), {"mode": "search", "query": "which vendor sends our text messages?"}, qwen_count)
    assert absent["ok"] and absent["found"] is False and all(hit["weak"] for hit in absent["hits"])
    stated = recall_tool(_source(), {"mode": "search", "query": "DB_PORT staging pooler"}, qwen_count)
    assert stated["found"] is True and "DB_PORT=6543" in stated["hits"][0]["snippet"]
    assert not stated["hits"][0]["weak"]


def test_an_answer_stays_within_the_budget_and_next_offset_pages_on(qwen_count) -> None:
    source = _source()
    seen: list[str] = []
    calls = 0
    args = {"mode": "search", "query": "frame merge limit step", "budget_tokens": 250}
    for _ in range(4):
        answer = recall_tool(source, args, qwen_count)
        calls += 1
        assert answer["hits"] and qwen_count(dumps(answer)) <= 250
        refs = [f"{hit['ref']}:{hit['first_line']}" for hit in answer["hits"]]
        assert not set(refs) & set(seen)
        seen += refs
        if "next_offset" not in answer:
            break
        args["offset"] = answer["next_offset"]
    assert len(seen) == 2 and calls == 2  # the two file reads mentioning frames: one per page at this budget
    default = recall_tool(source, {"mode": "search", "query": "frame merge limit step"}, qwen_count)
    assert qwen_count(dumps(default)) <= SEARCH_BUDGET_TOKENS


def test_conversations_opening_with_the_same_message_never_share_an_index(qwen_count) -> None:
    index = MemoryIndex()
    opening = {"role": "user", "content": "hi"}
    index.add("a", [opening, {"role": "user", "content": "the canary build id is zebra-77"}])
    index.add("b", [opening, {"role": "user", "content": "nothing about builds here, only giraffes"}])
    assert search(index.source("a"), "zebra-77", 5, qwen_count)
    hits = search(index.source("b"), "zebra-77", 5, qwen_count)
    assert all("zebra" not in hit.snippet for hit in hits)
