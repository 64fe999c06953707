"""Baton's own text never becomes the user's: a session full of Baton's stubs, blocks and tool answers gives
no error line and no recurring identifier of Baton's (issue 22: ``baton resume`` listed "Error seen: [Result
elided by Baton at compaction: todo(...)" and handoff ids, ``in_progress`` and ``open_item`` as the session's
recurring identifiers). A real error and a real recurring id beside them still surface: the test can fail."""

from __future__ import annotations

import json
from typing import Any

from batontest.transcripts import call, result

from baton_engine.compaction import continuity
from baton_engine.compaction.anchors import extract_anchors
from baton_engine.handoff.render import _continuity_lines
from baton_engine.messages.markers import end_line, inflight_stub, notice_text, provenance_line
from baton_engine.tokens.rough import estimate_tokens_rough

SHORT_ID = "0509d3b1"
REF = "msg-15aa953754c4d04f"
BATONS_OWN = {SHORT_ID, "in_progress", "open_item", "open_items", REF, "pre_compaction", "failed_attempt"}


def todo_args(n: int) -> dict[str, Any]:
    """Hermes' todo call: its items carry error words and ``in_progress`` states."""
    return {"todos": [{"id": f"t{n}", "content": f"fix the parse error in round {n}; the retry failed",
                       "status": "in_progress"}]}


def stubbed_todo(n: int) -> list[dict[str, Any]]:
    args = todo_args(n)
    stub = inflight_stub("todo", json.dumps(args), 2_400, 0)
    return [{"role": "assistant", "content": f"Updating the task list, round {n}.",
             "tool_calls": [call(f"todo{n}", "todo", **args)]},
            {"role": "tool", "tool_call_id": f"todo{n}", "content": stub}]


def baton_capture(n: int) -> list[dict[str, Any]]:
    answer = {"ok": True, "handoff": {"id": f"0190f5c2-7b1e-7c3d-9a4f-{SHORT_ID}0000", "short_id": SHORT_ID,
                                      "status": "draft"}, "item": {"id": f"O{n}", "kind": "open_item"},
              "counts": {"open_items": n}, "ref": REF, "error": None}
    return [{"role": "assistant", "content": f"Recording this in handoff {SHORT_ID}.",
             "tool_calls": [call(f"cap{n}", "baton_capture", kind="open_item",
                                 item={"description": "latency benchmark", "status": "in_progress"})]},
            result(f"cap{n}", **answer)]


def session() -> list[dict[str, Any]]:
    block = f"{provenance_line(SHORT_ID, 'ready', '2026-12-02T00:37:28Z')}\n\n# Resume brief\n\n{end_line(SHORT_ID)}"
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": block},
        {"role": "assistant", "content": notice_text(SHORT_ID)},
        {"role": "user", "content": "Audit the inventory logs and keep build-4821 green."},
    ]
    for n in range(1, 4):
        messages += stubbed_todo(n) + baton_capture(n)
    messages += [
        {"role": "assistant", "content": "Running the suite for build-4821.",
         "tool_calls": [call("t", "terminal", command="pytest -q")]},
        result("t", output="E   ValueError: bad header in src/parser.py", exit_code=1, error=None),
    ]
    return messages


def test_baton_stubs_blocks_and_tool_answers_give_no_error_and_no_identifier() -> None:
    anchors = extract_anchors(session())
    identifiers = {text for text, _count in anchors.identifiers}
    assert not any("Baton" in line or "elided" in line for line in anchors.errors), anchors.errors
    assert not identifiers & BATONS_OWN, identifiers
    assert anchors.errors == ("E   ValueError: bad header in src/parser.py",)  # the real error still surfaces
    assert "build-4821" in identifiers  # and a real recurring id


def test_the_brief_section_of_the_compacted_part_carries_none_of_it() -> None:
    """What ``baton resume`` and the compaction's block show: the record's continuity state, rendered."""
    kept = continuity.collect(session(), continuity.Recall(None, lambda: []), 1_500, estimate_tokens_rough)
    state = kept.to_state()
    lines = _continuity_lines(state) + kept.fitted(1_500, estimate_tokens_rough)[0].splitlines()
    errors = [line for line in lines if "Error seen" in line]
    assert errors and not any("Result elided" in line or "Baton" in line for line in errors), errors
    recurring = " ".join(line for line in lines if "Recurring id" in line)
    assert "build-4821" in recurring and not any(own in recurring for own in BATONS_OWN), recurring
