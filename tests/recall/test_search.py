"""Recall search and expand over the in-process index: ranking, refs, redaction, exact budgets."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from batontest.transcripts import SECRET, coding_session

from baton_engine.errors import NotFoundError, UserInputError
from baton_engine.messages.entry import ref_for
from baton_engine.recall import MAX_BUDGET_TOKENS, MemoryIndex, expand, parse_query, search
from baton_engine.recall.search import LEXICAL_PLACE_AT, LEXICAL_PLACES, MAX_LIMIT
from baton_engine.tokens.rough import estimate_tokens_rough as rough


def test_query_keeps_paths_identifiers_and_phrases_whole() -> None:
    query = parse_query('where is src/ledger/settle.py "hard rule" retry_budget 9f2c3a1b pkg.mod.fn the')
    assert [(t.kind, t.text) for t in query.terms] == [
        ("phrase", "hard rule"), ("path", "src/ledger/settle.py"), ("identifier", "retry_budget"),
        ("identifier", "9f2c3a1b"), ("identifier", "pkg.mod.fn"),
    ]


@pytest.mark.parametrize("bad", ["", "   ", "the what is", "x" * 1001, " ".join(f"w{n}x" for n in range(40))])
def test_unusable_queries_are_input_errors(source, bad: str) -> None:
    with pytest.raises(UserInputError):
        search(source, bad, 5, rough)


@pytest.mark.parametrize("limit", [0, MAX_LIMIT + 1, True, "3"])
def test_bad_limits_are_input_errors(source, limit) -> None:
    with pytest.raises(UserInputError):
        search(source, "settle", limit, rough)


def test_a_tool_result_is_found_with_the_call_that_produced_it(source) -> None:
    hits = search(source, "AssertionError", 3, rough)
    top = hits[0]
    assert (top.role, top.tool_name) == ("tool", "terminal")
    assert json.loads(top.arguments) == {"command": "pytest -q tests/test_settle.py"}
    assert "AssertionError: settle() returned 3" in top.snippet
    assert top.line == 3  # "output:" then "F." then the error line
    entry = source.get(top.ref)
    assert top.tokens == rough(entry.text)


def _ordered_but_the_places(hits: list) -> bool:
    """Score, then position, for every hit but the exact lookups' places (``LEXICAL_PLACES`` from
    ``LEXICAL_PLACE_AT``): a message holding the query's identifier, path or phrase as written may be placed there."""
    places = range(LEXICAL_PLACE_AT, LEXICAL_PLACE_AT + LEXICAL_PLACES)
    keys = [(-h.score, h.position) for n, h in enumerate(hits) if n not in places]
    return keys == sorted(keys)


def test_order_is_score_then_position_and_repeatable(source) -> None:
    hits = search(source, "settle.py", 10, rough)
    assert _ordered_but_the_places(hits) and len(hits) >= 4
    assert search(source, "settle.py", 10, rough) == hits
    positions = [h.position for h in hits]  # the read of src/ledger/settle.py (the path as written) is placed ahead
    assert positions.index(2) < positions.index(8)  # of a test run that FTS5 matched by `tests/test_settle.py`


def test_a_word_finds_the_words_it_begins_and_a_short_word_only_itself() -> None:
    """``times`` finds ``Timestamps`` (stemming alone does not: the regex BM25 before FTS5 did, 9dba563); a word
    under ``PREFIX_WORD_CHARS`` letters begins too many others (``use``: ``etl_user``) and matches only itself."""
    index = MemoryIndex()
    index.add("k", [{"role": "user", "content": "Timestamps in the raw feed are in America/Chicago."},
                    {"role": "user", "content": "Run psql as etl_user."}])
    hits = search(index.source("k"), "What zone are the source times recorded in?", 5, rough)
    assert [h.snippet for h in hits] == ["Timestamps in the raw feed are in America/Chicago."]
    assert search(index.source("k"), "use", 5, rough) == []


def test_every_hit_is_redacted(source) -> None:
    hits = search(source, "deploy key API_KEY", 5, rough)
    assert hits and all(SECRET not in json.dumps(h.to_dict()) for h in hits)
    assert "[REDACTED:" in hits[0].snippet


def test_refs_are_content_addressed(source) -> None:
    messages = coding_session()
    assert source.get(ref_for(messages[0])).text == messages[0]["content"]


def test_expand_returns_the_whole_message_when_it_fits(source) -> None:
    ref = search(source, "settle.py", 1, rough)[0].ref
    whole = expand(source, ref, MAX_BUDGET_TOKENS, rough)
    assert whole.complete and whole.text == source.get(ref).text and whole.tokens == rough(whole.text)


def test_expand_pages_the_lines_around_a_line_within_the_budget(source) -> None:
    read = search(source, "step_60", 1, rough)[0]
    assert read.tool_name == "read_file" and read.line == 61  # "content:" is line 1
    part = expand(source, read.ref, 60, rough, around=read.line)
    assert not part.complete and part.first_line <= 61 <= part.last_line
    assert "60|def step_60(x)" in part.text and part.tokens <= 60
    by_query = expand(source, read.ref, 60, rough, query="step_60")
    assert by_query.text == part.text


def test_a_line_longer_than_the_budget_is_cut_to_a_prefix(source) -> None:
    ref = search(source, "step_1", 1, rough)[0].ref
    tiny = expand(source, ref, 2, rough, around=5)
    assert tiny.tokens <= 2 and source.get(ref).text.split("\n")[4].startswith(tiny.text) and tiny.text


@pytest.mark.parametrize("budget", [0, -5, MAX_BUDGET_TOKENS + 1, True, 2.5])
def test_absurd_budgets_are_input_errors(source, budget) -> None:
    ref = search(source, "settle", 1, rough)[0].ref
    with pytest.raises(UserInputError):
        expand(source, ref, budget, rough)


def test_unknown_refs_and_lines_are_clear_errors(source) -> None:
    with pytest.raises(NotFoundError):
        expand(source, "msg-0000000000000000", 100, rough)
    ref = search(source, "settle", 1, rough)[0].ref
    with pytest.raises(UserInputError, match="line number from 1 to"):
        expand(source, ref, 100, rough, around=10_000)


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.text(alphabet="abc xyz_019|\t{}é漢", min_size=0, max_size=60), min_size=1, max_size=80),
       budget=st.integers(min_value=1, max_value=300), around=st.integers(min_value=1, max_value=80))
def test_expand_never_exceeds_the_budget_with_a_real_tokenizer(qwen_count, lines, budget, around) -> None:
    index = MemoryIndex()
    (ref,) = index.add("k", [{"role": "user", "content": "\n".join(["start", *lines])}])
    part = expand(index.source("k"), ref, budget, qwen_count, around=min(around, len(lines) + 1))
    assert part.tokens == (qwen_count(part.text) if part.text else 0) <= budget
    assert part.text in index.source("k").get(ref).text


def test_a_match_only_in_the_call_arguments_shows_them_in_the_snippet() -> None:
    index = MemoryIndex()
    index.add("k", [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "baton_capture", "arguments": json.dumps(
                {"kind": "evidence", "item": {"claim": "checksum mismatch at row 7"}})}}]},
        {"role": "tool", "tool_call_id": "c", "content": json.dumps({"ok": True, "recorded": True})},
    ])
    hits = search(index.source("k"), '"checksum mismatch"', 5, rough)
    tool_hit = next(h for h in hits if h.role == "tool")
    assert tool_hit.tool_name == "baton_capture" and "checksum mismatch at row 7" in tool_hit.snippet


TOKEN = st.sampled_from("ledger settle retry_budget src/a.py 9f2c3a1b error build-42 the a".split())


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(st.lists(TOKEN, min_size=1, max_size=12).map(" ".join), min_size=1, max_size=30),
       query=st.lists(TOKEN, min_size=1, max_size=3).map(" ".join), limit=st.integers(1, MAX_LIMIT))
def test_search_is_deterministic_ordered_and_only_returns_matches(texts, query, limit) -> None:
    index = MemoryIndex()
    index.add("k", [{"role": "user", "content": text} for text in texts])
    assume(set(query.split()) - {"the", "a"})  # a query of stop words only is an input error (tested above)
    terms = parse_query(query).terms
    hits = search(index.source("k"), query, limit, rough)
    assert hits == search(index.source("k"), query, limit, rough) and len(hits) <= limit
    assert _ordered_but_the_places(hits)
    for hit in hits:
        assert any(term.pattern.search(index.source("k").get(hit.ref).text) for term in terms)
    matching = sum(any(t.pattern.search(e.text) for t in terms) for e in index.source("k").entries())
    assert len(hits) == min(limit, matching)


def test_nested_tool_results_are_searched_and_paged_by_their_own_lines() -> None:
    """Hermes' ``todo`` answers with a list of items whose texts span lines: ``\\n`` escapes must not glue a
    line's first word to the previous one (that word was unfindable) nor make the whole list one line."""
    def todo(round_no: int) -> list[dict]:
        items = [{"id": f"r{round_no}-t0", "content": "\n".join(f"r{round_no}i0 L{n:03d}: cache span {n}"
                                                                for n in range(8)), "status": "in_progress"}]
        call = {"id": f"c{round_no}", "type": "function",
                "function": {"name": "todo", "arguments": json.dumps({"todos": items})}}
        return [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{round_no}", "content": json.dumps({"todos": items})}]

    index = MemoryIndex()
    index.add("lineage", [{"role": "user", "content": "audit"}, *todo(1), *todo(6)])
    source = index.source("lineage")
    hit = search(source, "r1i0 L003", 3, rough)[0]
    assert hit.role == "tool" and "r1i0 L003: cache span 3" in hit.snippet, hit
    shown = expand(source, hit.ref, 12, rough, around=hit.line)
    assert "r1i0 L003: cache span 3" in shown.text.split("\n") and shown.total_lines > 8
