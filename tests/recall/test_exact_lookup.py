"""Exact lookups are never lost (issue 46 item 1): every fact of the paraphrase corpus asked in its OWN words (the
stated value itself: an identifier, number, path or phrase) is in the one call's answer, without an embedder and
with one whatever it says: here an embedder that scores every line holding an answer as far from the question as
it can be and every other line as close, so ranking by meaning alone would never show one."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import pytest

from benchmarks.harness import paraphrase_corpus as corpus

from baton_engine.recall import MemoryIndex, dense, recall_tool
from baton_engine.recall.query import parse_query
from baton_engine.recall.search import DENSE_FLOOR

ANSWERS = tuple(fact.answer for fact in corpus.FACTS)


class Adversary:
    """Lines holding an answer point away from every question; every other line points at it (cosine 1.0: far
    above the floor, so each of them is a confident hit by meaning)."""

    name = "adversary:exact-lookup"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.0, 1.0] if text in ANSWERS else [0.0, -1.0] if any(a in text for a in ANSWERS) else [0.0, 1.0]
                for text in texts]


@pytest.fixture(scope="module")
def source():
    index = MemoryIndex(max_bytes=1 << 30)
    index.add("lineage", corpus.build_session().messages)
    return index.source("lineage")


def _shown(answer: dict) -> str:
    return "\n".join(f"{hit['snippet']}\n{hit['arguments'] or ''}" for hit in answer["hits"])


@pytest.mark.parametrize("embedder", [None, Adversary()], ids=["lexical", "adversarial embedder"])
def test_every_fact_asked_in_its_own_words_is_in_the_answer(source, qwen_count, embedder) -> None:
    if embedder is not None:
        recall_tool(source, {"mode": "search", "query": "warm up"}, qwen_count, embedder)  # queues the vectors
        dense.wait_idle()
    missed = []
    for answer_text in ANSWERS:
        answer = recall_tool(source, {"mode": "search", "query": answer_text}, qwen_count, embedder)
        assert answer["ok"], answer
        if answer_text not in _shown(answer):
            missed.append(answer_text)
    assert missed == [], f"{len(missed)} of {len(ANSWERS)} own-words lookups lost: {missed}"


SHARING_AN_IDENTIFIER = tuple(fact for fact in corpus.FACTS if fact.shared and
                              parse_query(fact.shared).terms[0].kind != "word")


@pytest.mark.parametrize("embedder", [None, Adversary()], ids=["lexical", "adversarial embedder"])
def test_a_question_holding_an_identifier_gets_its_statement(source, qwen_count, embedder) -> None:
    """A question in other words that shares only an identifier with its statement (``Why did we back out
    a41f9c2?``) gets the message holding it, whatever the question's other words match (``back`` begins
    ``backoff``: a user's line outscores the commit's) or the embedder says."""
    assert len(SHARING_AN_IDENTIFIER) == 3
    if embedder is not None:
        recall_tool(source, {"mode": "search", "query": "warm up"}, qwen_count, embedder)
        dense.wait_idle()
    for fact in SHARING_AN_IDENTIFIER:
        answer = recall_tool(source, {"mode": "search", "query": fact.question}, qwen_count, embedder)
        assert fact.answer in _shown(answer), (fact.question, answer)


def test_the_adversary_really_ranks_the_answers_last(source, qwen_count) -> None:
    """Without the exact lookup's place the adversary's hits hide the answer: the test above is not vacuous."""
    search_module = importlib.import_module("baton_engine.recall.search")

    embedder = Adversary()
    recall_tool(source, {"mode": "search", "query": "warm up"}, qwen_count, embedder)
    dense.wait_idle()
    places = search_module.LEXICAL_PLACES
    search_module.LEXICAL_PLACES = 0
    try:
        answer = recall_tool(source, {"mode": "search", "query": "DB_PORT=6543"}, qwen_count, embedder)
    finally:
        search_module.LEXICAL_PLACES = places
    assert "DB_PORT=6543" not in _shown(answer)
    assert answer["hits"][0]["score"] >= DENSE_FLOOR
