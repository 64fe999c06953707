"""The benchmark workload generator: deterministic, protocol-valid, needles planted verbatim."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness import workload
from batontest.model_server import protocol_problem

from baton_engine.tokens.rough import estimate_messages_tokens_rough


def test_same_parameters_give_the_same_bytes() -> None:
    first = workload.session_of_turns(40, seed=3, scale=0.3)
    second = workload.session_of_turns(40, seed=3, scale=0.3)
    assert json.dumps(first.messages()) == json.dumps(second.messages())
    assert first.needles == second.needles and first.files == second.files
    other = workload.session_of_turns(40, seed=4, scale=0.3)
    assert json.dumps(other.messages()) != json.dumps(first.messages())


def test_every_turn_is_a_valid_tool_round_with_one_to_three_model_calls() -> None:
    session = workload.session_of_turns(60, scale=0.3)
    assert protocol_problem(session.messages()) is None
    for turn in session.turns:
        roles = [m["role"] for m in turn.messages]
        assert roles[0] == "user" and roles[1] == "assistant" and roles[-1] == "assistant"
        calls = turn.messages[1]["tool_calls"]
        model_calls = [c for c in calls if c["function"]["name"] != "baton_capture"]
        assert 1 <= len(model_calls) <= 3
        assert len(calls) == len(turn.captures) + len(model_calls)
        assert roles[2:-1] == ["tool"] * len(calls)


def test_needles_appear_verbatim_where_planted_and_captures_carry_decisions_and_errors() -> None:
    session = workload.session_of_turns(60, scale=0.3)
    assert {n.kind for n in session.needles} == set(workload.NEEDLE_KINDS)
    for needle in session.needles:
        turn = session.turns[needle.turn - 1]
        assert needle.text in json.dumps(list(turn.messages)), needle
        captured = json.dumps(list(turn.captures))
        assert (needle.text in captured) == (needle.kind in ("decision", "error"))
        others = [t for t in session.turns if t.index != needle.turn]
        assert all(needle.text not in json.dumps(list(t.messages)) for t in others)
    paths = [n.text for n in session.needles if n.kind == "path"]
    assert all(path in session.files for path in paths)


@pytest.mark.parametrize("target", [10_000, 50_000])
def test_sized_sessions_reach_their_target(target: int) -> None:
    session = workload.sized_session(target, estimate_messages_tokens_rough, scale=0.5)
    size = estimate_messages_tokens_rough(session.messages())
    assert target <= size < target + estimate_messages_tokens_rough(list(session.turns[-1].messages)) + 1
