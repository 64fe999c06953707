"""The user's own words of a compacted region, within a share of the brief budget."""

from __future__ import annotations

import json

from batontest.transcripts import SECRET
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_engine.compaction.user_words import DEFAULT_SHARE, HEADER, collect_user_words, tier
from baton_engine.messages.entry import ref_for
from baton_engine.recall import MemoryIndex, expand

from benchmarks.harness import chat_workload

BRIEF_TOKENS_8K = 1200  # Baton's default brief budget (brief_max_tokens), about 15% of an 8,192-token window


def user(text: str, **extra) -> dict:
    return {"role": "user", "content": text, **extra}


def test_everything_verbatim_when_it_fits(qwen_count) -> None:
    messages = [user("Never deploy on Fridays."), {"role": "assistant", "content": "Noted."}, user("ok"),
                user("[Baton handoff 0193abcd | status: ready | captured x]\nbrief"),
                user("todo snapshot", _todo_synthetic=True), user("What is the cache for?"), user("ok")]
    words = collect_user_words(messages, 1200, qwen_count)
    assert words.lines() == [HEADER, '- "Never deploy on Fridays."', '- "What is the cache for?"', '- "ok"']
    assert words.collected == 3 and words.omitted == 0 and words.tokens == qwen_count("\n".join(words.lines()))
    assert [item.ref for item in words.items] == [ref_for(messages[0]), ref_for(messages[5]), ref_for(messages[6])]


def test_tiers() -> None:
    assert [tier(t) for t in ("Always use httpx.", "The host is db-prod-7.", "How does it work?", "ok thanks")] == [
        0, 1, 2, 3]


def test_when_tight_instructions_and_facts_win_and_a_clip_carries_its_recall_ref(qwen_count) -> None:
    long_fact = "The staging host is stage-4 and " + "it has many details worth keeping " * 8 + "at the end."
    messages = [user("Do not touch billing_v1."), user(long_fact), user("How does the cache work?"), user("thanks")]
    words = collect_user_words(messages, 150, qwen_count, share=0.4)
    assert words.tokens <= 60 == words.budget_tokens
    assert [item.position for item in words.items] == [0, 1]  # the question and the acknowledgement are left out
    assert words.items[0].text == "Do not touch billing_v1." and not words.items[0].clipped
    clipped = words.items[1]
    assert clipped.clipped and long_fact.startswith(clipped.text) and len(clipped.text) >= 24
    assert f"ref={ref_for(messages[1])}" in words.lines()[2]
    index = MemoryIndex()
    index.add("k", messages)
    assert expand(index.source("k"), clipped.ref, 1000, qwen_count).text == long_fact  # the ref pages it back in


def test_secrets_are_redacted(qwen_count) -> None:
    words = collect_user_words([user(f"use API_KEY={SECRET} for the deploy")], 1200, qwen_count)
    assert SECRET not in json.dumps(words.to_state()) and "[REDACTED:" in words.items[0].text


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(alphabet="abc DEF 012 ?.,_-/\"", min_size=1, max_size=120), max_size=25),
       brief=st.integers(min_value=0, max_value=600), share=st.floats(min_value=0.05, max_value=1.0))
def test_the_share_is_never_exceeded_and_the_answer_is_deterministic(qwen_count, texts, brief, share) -> None:
    messages = [user(text) for text in texts]
    words = collect_user_words(messages, brief, qwen_count, share)
    lines = words.lines()
    assert words.tokens == (qwen_count("\n".join(lines)) if lines else 0) <= int(brief * share)
    assert collect_user_words(messages, brief, qwen_count, share) == words
    assert all(item.text in messages[item.position]["content"] for item in words.items)  # verbatim prefixes


def test_a_200_turn_chat_keeps_all_12_early_facts_in_an_8k_window_brief(qwen_count) -> None:
    session = chat_workload.chat_session(200)
    assert len(session.facts) == 12
    region = list(session.messages[:-20])  # the last 10 exchanges stay as the verbatim tail
    words = collect_user_words(region, BRIEF_TOKENS_8K, qwen_count)
    assert words.budget_tokens == int(BRIEF_TOKENS_8K * DEFAULT_SHARE) == 420
    assert words.collected > 150 and words.tokens <= 420
    kept = "\n".join(words.lines())
    missing = [needle for _, needle in session.facts if needle not in kept]
    assert missing == []


def test_the_chat_corpus_is_deterministic() -> None:
    assert chat_workload.chat_session(200) == chat_workload.chat_session(200)
    assert chat_workload.chat_session(200, seed=6) != chat_workload.chat_session(200)
    roles = [m["role"] for m in chat_workload.chat_session(200).messages]
    assert roles == ["user", "assistant"] * 200


def test_a_short_chat_states_only_the_facts_of_its_turns() -> None:
    assert len(chat_workload.chat_session(3).facts) == 1  # turn 1 only
    assert len(chat_workload.chat_session(24).facts) == 12
    short = chat_workload.chat_session(24)
    stated = [m["content"] for m in short.messages if m["role"] == "user"]
    assert all(sentence in stated for sentence, _ in short.facts)


def test_at_a_later_compaction_the_lineage_in_the_index_still_holds_the_early_words(qwen_count) -> None:
    """The recipe for the engine: index each region, then collect the user words of the whole lineage."""
    session = chat_workload.chat_session(200)
    first, second = list(session.messages[:200]), list(session.messages[200:380])
    index = MemoryIndex()
    index.add("lineage", first)
    index.add("lineage", second)
    lineage_users = [{"role": "user", "content": e.text} for e in index.source("lineage").entries() if e.role == "user"]
    words = collect_user_words(lineage_users, BRIEF_TOKENS_8K, qwen_count)
    assert [needle for _, needle in session.facts if needle not in "\n".join(words.lines())] == []
    originals = {ref_for(m) for m in first + second}
    assert {item.ref for item in words.items} <= originals  # the refs point at the original messages


def test_a_todo_snapshot_hermes_merged_into_a_user_turn_is_not_the_users_words(qwen_count) -> None:
    """Hermes appends its todo snapshot to the user turn before it; neither the words nor the anchors
    may copy that task list (tool payload) into the handoff."""
    from baton_engine.compaction.anchors import extract_anchors
    from baton_engine.compaction.sanitize import HERMES_TODO_SNAPSHOT

    merged = {"role": "user", "content": f"Keep the cache keyed by hash.\n\n{HERMES_TODO_SNAPSHOT}\n"
                                         "- [>] r4i0 L005: parse error in the loader"}
    words = collect_user_words([merged], 1200, qwen_count)
    assert [item.text for item in words.items] == ["Keep the cache keyed by hash."]
    assert extract_anchors([merged]).errors == ()


UNANCHORED_SPECIFIC = r"\d|[\w-]+[/._][\w.-]+|(?<=[a-z,;] )[A-Z][a-z]+|\"[^\"]+\""  # before the soak found it quadratic


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ_-./ ,;\"1", max_size=40))
def test_tier_is_the_unanchored_verdict(text: str) -> None:
    """Anchoring the path-like alternative at a word run's start (linear instead of quadratic on a long run)
    gives the same verdict on every text."""
    import re

    import baton_engine.compaction.user_words as user_words

    assert bool(user_words._SPECIFIC_RE.search(text)) == bool(re.search(UNANCHORED_SPECIFIC, text))
