"""What real Hermes (hermes-agent 0.19.0) does to a compacted list after ``compress()`` returns.

The host inserts the last real user message when it thinks none survived, repairs role
alternation and orphan tool pairs in the live history, and sanitises every request. A list that
needs none of these repairs is one Hermes sends exactly as Baton built it.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton_engine.compaction import build_compacted_messages, degrade
from compaction.conversations import block, cl100k_messages, conversations, latest_real_request

pytestmark = pytest.mark.hermes
compression = pytest.importorskip("agent.conversation_compression")
runtime_helpers = pytest.importorskip("agent.agent_runtime_helpers")

HOST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def assert_host_changes_nothing(original: list, compacted: list) -> None:
    latest = latest_real_request(original)
    if latest is not None:
        assert latest in compacted and compression._is_real_user_message(latest)
        anchored = copy.deepcopy(compacted)
        compression._ensure_compressed_has_user_turn(original, anchored)
        assert anchored == compacted, "Hermes thought the latest user request was lost"
    repaired = copy.deepcopy(compacted)
    assert runtime_helpers.repair_message_sequence(None, repaired) == 0
    assert repaired == compacted
    assert runtime_helpers.sanitize_api_messages(copy.deepcopy(compacted)) == compacted


@HOST
@given(messages=conversations(clean=True), fresh_tail_tokens=st.sampled_from([0, 60, 400, 3_000]))
def test_hermes_keeps_a_compacted_clean_transcript_unchanged(messages: list, fresh_tail_tokens: int) -> None:
    result = build_compacted_messages(
        messages, block=block(), fresh_tail_tokens=fresh_tail_tokens, count_tokens=cl100k_messages
    )
    assert_host_changes_nothing(messages, result.messages)


@HOST
@given(messages=conversations(), fresh_tail_tokens=st.sampled_from([0, 60, 400, 3_000]))
def test_hermes_finds_no_orphan_pairs_in_a_compacted_corrupted_transcript(
    messages: list, fresh_tail_tokens: int
) -> None:
    result = build_compacted_messages(
        messages, block=block(), fresh_tail_tokens=fresh_tail_tokens, count_tokens=cl100k_messages
    )
    assert runtime_helpers.sanitize_api_messages(copy.deepcopy(result.messages)) == result.messages
    anchored = copy.deepcopy(result.messages)
    compression._ensure_compressed_has_user_turn(messages, anchored)
    if latest_real_request(messages) is not None:
        assert anchored == result.messages


@HOST
@given(messages=conversations(clean=True), keep_recent=st.integers(0, 8))
def test_hermes_keeps_a_degraded_clean_transcript_unchanged(messages: list, keep_recent: int) -> None:
    result = degrade(
        messages, reason="validation_failed", keep_recent=keep_recent, max_tokens=2_000, count_tokens=cl100k_messages
    )
    assert_host_changes_nothing(messages, result.messages)
