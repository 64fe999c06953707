"""Anchors of a compacted region: what Hermes' tools really produce, verbatim, redacted, bounded."""

from __future__ import annotations

import json
from typing import Any

from brief.records import minimal_data, record
from batontest.transcripts import SECRET, call, coding_session, result
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_engine.compaction.anchors import extract_anchors
from baton_engine.compaction.user_words import collect_user_words
from baton_engine.handoff.redact import contains_secret
from baton_engine.handoff.validate import _check_transcript
from batontest.schemas import assert_conforms


def test_hermes_tool_calls_become_files_commands_and_errors() -> None:
    anchors = extract_anchors(coding_session())
    files = [(f.path, f.action, f.lines, f.pattern) for f in anchors.files]
    assert files == [
        ("src/ledger/settle.py", "read", ((1, 119),), None),
        ("src/ledger/settle.py", "written", (), None),
        ("src/ledger", "searched", (), "round\\("),
    ]
    assert [(c.command, c.exit_code) for c in anchors.commands] == [
        ("pytest -q tests/test_settle.py", 1), ("pytest -q tests/test_settle.py", 0)]
    assert anchors.errors == ("E   AssertionError: settle() returned 3, expected 4",
                              "FAILED tests/test_settle.py::test_round - AssertionError", "1 failed, 1 passed")
    assert ("9f2c3a1b", 2) in anchors.identifiers


def test_terminal_reads_and_v4a_patches_and_failed_calls() -> None:
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [
            call("a", "terminal", command="cat README.md | head -5 && sed -n '20,40p' src/app.py"),
            call("b", "patch", mode="patch", patch="*** Begin Patch\n*** Update File: src/x.py\n@@\n-a\n+b\n"
                                                   "*** Add File: src/y.py\n+new\n*** End Patch"),
            call("c", "read_file", path="missing.py")]},
        result("a", output="# readme", exit_code=0, error=None),
        result("b", success=True, diff="..."),
        result("c", error="File not found: missing.py"),
    ]
    anchors = extract_anchors(messages)
    assert [(f.path, f.action, f.lines) for f in anchors.files] == [
        ("README.md", "read", ()), ("src/app.py", "read", ((20, 40),)), ("src/x.py", "written", ()),
        ("src/y.py", "written", ())]
    assert anchors.errors == ()  # "File not found" is no error-pattern line; the failed read is no file anchor


def test_secrets_are_redacted_and_baton_blocks_skipped() -> None:
    block = {"role": "user", "content": "[Baton handoff 0193abcd | status: ready | captured x]\nError: old block"}
    messages = [block, {"role": "assistant", "content": None, "tool_calls": [
        call("a", "terminal", command=f"curl -H 'Authorization: Bearer {SECRET}' https://api.example.org")]},
        result("a", output=f"error: token {SECRET} rejected", exit_code=22, error=None)]
    state = json.dumps(extract_anchors(messages).to_state())
    assert SECRET not in state and "[REDACTED:" in state and "old block" not in state


def test_render_drops_in_the_documented_order(qwen_count) -> None:
    anchors = extract_anchors(coding_session())
    full = anchors.render(10_000, qwen_count)
    kinds = [line.split(":")[0] for line in full]
    assert kinds[:6] == ["Wrote", "Read", "Searched", "Ran", "Ran", "Error seen"] and kinds[-1] == "Recurring id"
    tight = anchors.render(qwen_count("\n".join(full)) - 1, qwen_count)
    assert tight == full[:-1]  # the (only) recurring id goes first
    no_ids = [line for line in full if not line.startswith("Recurring id")]
    assert anchors.render(qwen_count("\n".join(no_ids)), qwen_count) == no_ids
    assert anchors.render(qwen_count("\n".join(no_ids)) - 1, qwen_count) == [
        line for line in no_ids if not line.startswith("Searched")]
    only = anchors.render(qwen_count("Wrote: src/ledger/settle.py"), qwen_count)
    assert only == ["Wrote: src/ledger/settle.py"]
    assert anchors.render(1, qwen_count) == []


def _decoded_texts(messages: list[dict[str, Any]]) -> str:
    """Every text the transcript shows, JSON-decoded (contents, argument values, result fields)."""
    out: list[str] = []

    def leaves(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
            try:
                leaves(json.loads(value))
            except ValueError:
                pass
        elif isinstance(value, dict):
            for item in value.values():
                leaves(item)
        elif isinstance(value, list):
            for item in value:
                leaves(item)

    leaves(messages)
    return "\n".join(out)


WORD = st.sampled_from("settle ledger error failed Traceback build 9f2c3a1b run_id_42 src/a.py ok x".split())
LINE = st.lists(WORD, min_size=1, max_size=6).map(" ".join)


@st.composite
def sessions(draw) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(draw(st.integers(min_value=1, max_value=6))):
        tool = draw(st.sampled_from(["read_file", "write_file", "terminal", "search_files", "patch"]))
        argument = {"read_file": "path", "write_file": "path", "terminal": "command", "search_files": "pattern",
                    "patch": "path"}[tool]
        messages.append({"role": "user", "content": "\n".join(draw(st.lists(LINE, min_size=1, max_size=3)))})
        messages.append({"role": "assistant", "content": draw(LINE),
                         "tool_calls": [call(f"c{n}", tool, **{argument: draw(LINE)})]})
        output = "\n".join(draw(st.lists(LINE, min_size=1, max_size=4)))
        messages.append(result(f"c{n}", output=output, exit_code=draw(st.integers(-1, 2)), error=None))
    return messages


@settings(max_examples=60, deadline=None)
@given(messages=sessions(), budget=st.integers(min_value=1, max_value=200))
def test_anchors_are_verbatim_deterministic_and_rendered_within_budget(qwen_count, messages, budget) -> None:
    anchors = extract_anchors(messages)
    assert extract_anchors(json.loads(json.dumps(messages))) == anchors
    transcript = _decoded_texts(messages)
    strings = [f.path for f in anchors.files] + [f.pattern for f in anchors.files if f.pattern]
    strings += [c.command for c in anchors.commands] + list(anchors.errors) + [t for t, _ in anchors.identifiers]
    assert all(s in transcript for s in strings)
    for keys in ([(f.path, f.action, f.pattern) for f in anchors.files], [(c.command, c.exit_code) for c in anchors.commands],
                 list(anchors.errors), [t for t, _ in anchors.identifiers]):
        assert len(keys) == len(set(keys))  # deduplicated
    lines = anchors.render(budget, qwen_count)
    assert not lines or qwen_count("\n".join(lines)) <= budget


def test_a_record_with_the_continuity_extra_field_still_conforms(qwen_count) -> None:
    data = minimal_data()
    data["continuity"] = {
        "anchors": extract_anchors(coding_session()).to_state(),
        "user_words": collect_user_words(coding_session(), 1200, qwen_count).to_state(),
    }
    dumped = record(data).model_dump(mode="json", by_alias=True, exclude_none=False)
    assert dumped["continuity"] == data["continuity"]  # the model keeps unknown fields
    assert_conforms(dumped)  # the reference schema allows additional top-level properties
    assert _check_transcript(dumped, 20_000).status == "pass"  # not a transcript: no chat shape, no chat keys
    assert contains_secret(dumped) == []


def test_the_rarest_recurring_id_is_dropped_first(qwen_count) -> None:
    messages = [{"role": "user", "content": "build 9f2c3a1b and PROJ-4821"} for _ in range(2)]
    messages = [{**m, "content": m["content"] + f" run {n}"} for n, m in enumerate(messages)]
    messages.append({"role": "user", "content": "again 9f2c3a1b"})
    anchors = extract_anchors(messages)
    assert anchors.identifiers == (("9f2c3a1b", 3), ("PROJ-4821", 2))
    full = anchors.render(1000, qwen_count)
    assert anchors.render(qwen_count("\n".join(full)) - 1, qwen_count) == ["Recurring id: 9f2c3a1b (x3)"]


_LINE_TEXT = st.lists(st.sampled_from(["E   assert 1 == 2", "all good", "Traceback (most recent call last):",
                                       "KestrelLedgerError: boom", "3 FAILED", "İstanbul error", "fatal: x",
                                       "", "  E  spaced", "E x"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(lines=_LINE_TEXT, separator=st.sampled_from(["\n", "\r\n", "\x85", "\n\n"]), tail=st.booleans())
def test_error_lines_found_by_search_equal_a_line_by_line_scan(lines, separator, tail) -> None:
    """The substring search of candidate lines picks exactly the lines a scan of every line would."""
    from baton_engine.compaction import anchors

    text = separator.join(lines) + (separator if tail else "")
    expected = {}
    for line in text.splitlines():
        if anchors._ERROR_RE.search(line):
            expected.setdefault(line.strip(), None)
    assert list(dict.fromkeys(anchors._error_lines(text))) == list(expected)
