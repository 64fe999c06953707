"""Anchors from memoised per-message facts equal anchors computed from the messages themselves, for any
transcript (including malformed and hostile ones), and facts are a function of the message key alone."""

from __future__ import annotations

import copy

from compaction.conversations import conversations, hostile_conversations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton_engine.compaction.anchors import anchor_facts, extract_anchors
from baton_engine.compaction.scan import scan_of
from baton_engine.messages.entry import message_key

TRANSCRIPTS = st.one_of(hostile_conversations(), conversations(), conversations(clean=True))


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(TRANSCRIPTS)
def test_memoised_facts_give_the_same_anchors(messages):
    dicts = [m for m in messages if isinstance(m, dict)]
    direct = extract_anchors(messages)
    memoised = extract_anchors(messages, [scan_of(m).anchors for m in dicts])
    again = extract_anchors(copy.deepcopy(messages), [scan_of(m).anchors for m in copy.deepcopy(dicts)])
    assert direct == memoised == again


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(TRANSCRIPTS)
def test_facts_depend_on_the_key_only(messages):
    for message in messages:
        if isinstance(message, dict):
            extra = {**message, "timestamp": 1, "tool_name": "other", "_flag": True}
            assert anchor_facts(message_key(extra)) == anchor_facts(message_key(message))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=60), max_size=30), st.integers(0, 400), st.booleans())
def test_fitted_keeps_the_longest_prefix_that_fits(extra_lines, budget, with_anchors):
    """Bisection gives what dropping one line at a time from the end gives (heading and recall line kept; an
    anchors header never left alone at the end)."""
    from baton_engine.compaction import continuity
    from baton_engine.compaction.anchors import Anchors
    from baton_engine.compaction.user_words import UserWords
    from baton_engine.tokens.rough import estimate_tokens_rough

    middle = len(extra_lines) // 2
    lines = [continuity.HEADING, continuity.RECALL_LINE, *extra_lines[:middle],
             *([continuity.ANCHORS_HEADER] if with_anchors else []), *extra_lines[middle:]]
    section = continuity.Continuity(Anchors(), UserWords((), 0, 0, 0), "", 0, tuple(lines))
    kept = list(lines)
    while len(kept) > 2 and estimate_tokens_rough("\n".join(kept)) > budget:
        kept.pop()
        if kept[-1] == continuity.ANCHORS_HEADER:
            kept.pop()
    assert section.fitted(budget, estimate_tokens_rough) == ("\n".join(kept), estimate_tokens_rough("\n".join(kept)))
