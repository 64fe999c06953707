"""Fuzzing every other engine entry Hermes calls inside the agent loop: ``should_compress``,
``update_from_response``, the ``llm_request`` middleware and ``handle_tool_call``. None may raise;
each answers in its documented shape; no input is mutated."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batontest.engine_kit import TIKTOKEN_ENV, installed_runtime, make_engine
from compaction.conversations import conversations

pytestmark = pytest.mark.hermes
pytest.importorskip("agent.context_engine")

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                      max_size=4), max_leaves=12)
numbers = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(), st.text(max_size=5))


@pytest.fixture
def runtime() -> Iterator[Any]:
    with installed_runtime(TIKTOKEN_ENV, context_length=65536, model="m", base_url="http://127.0.0.1:9/v1") as rt:
        yield rt


@FUZZ
@given(usage=st.one_of(json_values, st.dictionaries(st.sampled_from(
    ["prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens"]), numbers)),
    prompt_tokens=numbers)
def test_turn_checks_never_raise(bare_project: Path, runtime: Any, usage: Any, prompt_tokens: Any) -> None:
    engine = make_engine(bare_project)
    engine.update_from_response(usage)
    assert all(isinstance(v, int) and v >= 0 for v in (engine.last_prompt_tokens, engine.last_completion_tokens))
    decision, reason = engine.should_compress_info(prompt_tokens)
    assert isinstance(decision, bool) and (reason is None or (isinstance(reason, str) and reason))
    assert isinstance(engine.compaction.last_decision, str) and engine.compaction.last_decision
    assert engine.should_compress(prompt_tokens) is decision


request_fields = st.fixed_dictionaries({"messages": st.one_of(conversations(max_turns=3), json_values)}, optional={
    "model": st.sampled_from(["m", "other"]), "max_tokens": numbers, "max_completion_tokens": numbers,
    "tools": json_values, "extra_body": st.one_of(json_values, st.fixed_dictionaries({}, optional={
        "max_tokens": numbers, "max_output_tokens": numbers}))})


@FUZZ
@given(request=st.one_of(request_fields, json_values))
def test_llm_request_middleware_never_raises_and_never_mutates(runtime: Any, request: Any) -> None:
    from baton_engine.hermes.patches import Activation

    activation = Activation()
    activation.active = True  # the middleware only; Hermes' modules stay unpatched
    original = copy.deepcopy(request)
    answer = activation.llm_request(request=request, original_request=original, model="m",
                                    base_url="http://127.0.0.1:9/v1")
    assert repr(request) == repr(original)
    if answer is not None:
        sent = answer["request"]
        assert isinstance(sent, dict) and sent["messages"] == request["messages"]
        extra = sent.get("extra_body")
        budgets = [v for k, v in [*sent.items(), *(extra.items() if isinstance(extra, dict) else [])]
                   if k in ("max_tokens", "max_completion_tokens", "max_output_tokens")]
        assert len(budgets) == 1 and isinstance(budgets[0], int) and 0 < budgets[0] < 65536


@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["baton_capture", "baton_resume", "baton_status", "baton_shell", ""]),
       args=st.one_of(json_values, st.fixed_dictionaries({"kind": st.sampled_from(
           ["decision", "evidence", "failed_attempt", "open_item", "objective", "request_handoff", "nope"])},
           optional={"item": json_values, "objective": json_values, "ref": json_values, "max_tokens": numbers})),
       messages=st.one_of(st.none(), conversations(max_turns=2)))
def test_tool_calls_always_answer_json(project: Path, runtime: Any, name: str, args: Any, messages: Any) -> None:
    engine = make_engine(project)
    answer = engine.handle_tool_call(name, args, messages=messages)
    data = json.loads(answer)
    assert isinstance(data, dict) and isinstance(data.get("ok"), bool)
    if not data["ok"]:
        assert data["error"]["kind"] != "internal_error", data
        assert data["error"]["message"]
