"""The paraphrase corpus keeps its own rules (benchmarks/harness/paraphrase_corpus.py): each question shares at most one
content word with the statement (the one it declares), each answer is stated exactly once in the session, and the
absent questions' topics are not there."""

from __future__ import annotations

from benchmarks.harness import paraphrase_corpus as corpus


def test_every_question_shares_at_most_the_one_word_it_declares() -> None:
    for fact in corpus.FACTS:
        shared = corpus.shared_words(fact.statement, fact.question)
        assert len(shared) <= 1, (fact.question, shared)
        assert bool(shared) == bool(fact.shared), (fact.question, shared)


def test_the_rule_counts_what_a_reader_would_count() -> None:
    assert corpus.shared_words("DB_PORT=6543 agreed", "which port did we settle on?") == {"port"}
    assert corpus.shared_words("banker's rounding", "which round mode?") == {"round"}
    assert corpus.shared_words("partition_key: event_date", "Which column is partition_key set to?") == \
        {"partition_key"}


def test_each_answer_is_stated_exactly_once_and_in_its_own_kind_of_message() -> None:
    session = corpus.build_session()
    for fact in corpus.FACTS:
        holders = [m for m in session.messages if fact.answer in (m.get("content") or "")]
        assert len(holders) == 1, fact.answer
        assert holders[0]["role"] == ("user" if fact.where == "user" else "tool")
    assert len(corpus.FACTS) >= 35 and len(corpus.ABSENT) >= 9
    assert {fact.domain for fact in corpus.FACTS} >= {"review", "ops", "data"}


def test_a_fact_in_a_tool_result_sits_in_the_middle_of_a_long_output() -> None:
    session = corpus.build_session()
    for fact in corpus.FACTS:
        if fact.where == "user":
            continue
        (holder,) = [m for m in session.messages if fact.answer in (m.get("content") or "")]
        text = holder["content"].replace("\\n", "\n")
        before = text[: text.index(fact.answer)]
        assert before.count("\n") + before.count('"path":') >= 15, fact.answer  # lines, or search matches
