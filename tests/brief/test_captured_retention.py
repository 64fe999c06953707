"""Every captured record survives the compaction brief's budget (benchmark issue 5).

The record is a real handoff stored by the benchmark's 500k-token session (13 decisions and 14
evidence items captured through ``baton_capture``), measured with the real Qwen3 tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from brief.records import minimal_data, record

from baton_engine.handoff.model import HandoffRecord
from baton_engine.handoff.render import DEFAULT_MAX_TOKENS, render_brief
from batontest import assets

BENCH_RECORD = Path(__file__).parent / "data" / "bench-500k-handoff.json"


@pytest.fixture(scope="module")
def qwen3_count() -> Callable[[str], int]:
    backend = assets.hf_backend(assets.qwen3_dir())

    def count(text: str) -> int:
        tokens = backend.count_text(text).tokens
        assert tokens is not None
        return tokens

    return count


@pytest.fixture(scope="module")
def bench_record() -> HandoffRecord:
    return HandoffRecord.model_validate(json.loads(BENCH_RECORD.read_text(encoding="utf-8")))


def test_all_captured_records_of_the_500k_session_fit_in_1200_tokens(bench_record, qwen3_count) -> None:
    assert len(bench_record.decisions) == 13 and len(bench_record.evidence) == 14
    full = render_brief(bench_record, verbose=True, max_tokens=100_000, count_tokens=qwen3_count)
    assert full.tokens > DEFAULT_MAX_TOKENS  # the budget really bites
    brief = render_brief(bench_record, verbose=True, count_tokens=qwen3_count)
    assert brief.tokens == qwen3_count(brief.text) <= DEFAULT_MAX_TOKENS
    for decision in bench_record.decisions:
        assert f"- {decision.id}: {decision.decision}\n" in brief.text
    for evidence in bench_record.evidence:
        assert f"- {evidence.id}: {evidence.claim}\n" in brief.text
    assert "more not shown" not in brief.text
    # The spec's protected parts survive, and the marker says where the full text is.
    for kept in ("# Resume brief: Hermes session", "## Objective", "## First next action", "## Verify freshness"):
        assert kept in brief.text
    assert f"Full record: `baton handoff show {bench_record.short_id}`" in brief.text
    assert render_brief(bench_record, verbose=True, count_tokens=qwen3_count).text == brief.text


def _many_records(count: int) -> HandoffRecord:
    """``count`` records of the benchmark's shape, split over the four captured kinds."""
    data = minimal_data()
    stamp = data["created_at"]
    data["decisions"] = [{"id": f"D-{n:03d}", "decision": f"Decision heron-{n:05d}: settle heron payouts in "
                          "integer cents", "rationale": "floating point rounding lost cents", "made_at": stamp}
                         for n in range(count // 2)]
    data["evidence"] = [{"id": f"E-{n:03d}", "type": "test", "claim": f"The settlement test fails: "
                         f"HeronLedgerError: checksum mismatch at row {n:05d}", "ref": "pytest -q",
                         "result": "1 failed", "captured_at": stamp} for n in range(count - count // 2)]
    data["failed_attempts"] = [{"id": "F-001", "attempt": "Round to two decimals with float.",
                                "outcome": "Lost cents again.", "recorded_at": stamp}]
    data["open_items"] = [{"id": f"O-{n:03d}", "priority": "medium", "description": f"Backfill ledger shard {n}."}
                          for n in range(3)]
    return record(data)


@pytest.mark.parametrize("count", [26, 36])  # 36 (+1 failed attempt, 2 open items) is the measured maximum
def test_records_clipped_before_any_is_left_out(count: int, qwen3_count) -> None:
    brief = render_brief(_many_records(count), verbose=True, count_tokens=qwen3_count)
    assert brief.tokens <= DEFAULT_MAX_TOKENS
    ids = [f"D-{n:03d}" for n in range(count // 2)] + [f"E-{n:03d}" for n in range(count - count // 2)]
    assert all(f"- {ident}: " in brief.text for ident in ids), "every captured record keeps its line"
    assert "- F-001: Round to two decimals with float." in brief.text


def test_when_too_many_records_the_most_fit_and_the_rest_are_counted(qwen3_count) -> None:
    many = _many_records(200)
    brief = render_brief(many, verbose=True, count_tokens=qwen3_count)
    assert brief.tokens <= DEFAULT_MAX_TOKENS
    shown_decisions = sum(f"- D-{n:03d}: " in brief.text for n in range(100))
    shown_evidence = sum(f"- E-{n:03d}: " in brief.text for n in range(100))
    # Decisions outrank evidence: evidence is left out first, and what is left out is counted.
    assert shown_decisions > 0 and shown_evidence < 100
    left = [label for label in brief.omitted if label.endswith(" of 100 evidence")]
    assert left == [f"{100 - shown_evidence} of 100 evidence"]
    assert f"… {100 - shown_evidence} more not shown" in brief.text or shown_evidence == 0
    assert f"{100 - shown_evidence} of 100 evidence" in brief.text.split("[Truncated: ", 1)[1]
    # Keep as many as possible: one more record would not fit.
    assert render_brief(many, verbose=True, count_tokens=qwen3_count).text == brief.text
    assert "## First next action" in brief.text and "## Verify freshness" in brief.text
