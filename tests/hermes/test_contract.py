"""The engine against the real ContextEngine ABC and host helpers of hermes-agent 0.19.0."""

from __future__ import annotations

import copy
import inspect
import json

import pytest
from agent.context_engine import ContextEngine
from agent.conversation_compression import _supported_compression_kwargs

from baton_engine.hermes.engine import BatonContextEngine

pytestmark = pytest.mark.hermes


def test_is_a_real_context_engine_with_every_abstract_member() -> None:
    engine = BatonContextEngine()
    assert isinstance(engine, ContextEngine)
    assert not getattr(BatonContextEngine, "__abstractmethods__", None)
    assert engine.name == "baton"


def test_host_attributes_are_ints_and_the_threshold_reserves_output() -> None:
    engine = BatonContextEngine()
    engine.update_model("m", 131072)
    for name in ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens", "threshold_tokens",
                 "context_length", "compression_count", "protect_first_n", "protect_last_n"):
        assert isinstance(getattr(engine, name), int), name
    assert engine.context_length == 131072
    # 0.75 * 131072 = 98304 fits below 131072 - (4096 + 1024)
    assert engine.threshold_tokens == 98304
    engine.update_model("m", 8192)  # below Hermes' 64K floor: Hermes refuses, the engine itself must not
    # the reply and margin it reserves are clamped to the window (1,024 + 256 at 8K), and below 32K the room Hermes'
    # 75% keeps free shrinks with the window (8192 - 8192 * 0.25 * 8192 / 32768 = 7,680): the ceiling less the
    # margin is the lower (docs/compaction.md)
    assert engine.threshold_tokens == min(7680, 8192 - 1024 - 256) == 6912


def test_compress_accepts_every_host_keyword_and_unknown_ones() -> None:
    engine = BatonContextEngine()
    kwargs = _supported_compression_kwargs(engine.compress, current_tokens=10, focus_topic="x", force=True,
                                           memory_context="memo")
    assert kwargs == {"current_tokens": 10, "focus_topic": "x", "force": True, "memory_context": "memo"}
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(engine.compress).parameters.values())


def test_update_from_response_reads_legacy_and_new_usage_keys() -> None:
    engine = BatonContextEngine()
    engine.update_from_response({"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230})
    assert (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens) == (1200, 30, 1230)
    engine.update_from_response({"input_tokens": 50, "output_tokens": 5, "total_tokens": 55,
                                 "cache_read_tokens": 10})
    assert (engine.last_prompt_tokens, engine.last_completion_tokens) == (50, 5)
    engine.update_from_response("not a dict")  # type: ignore[arg-type]
    assert engine.last_prompt_tokens == 50


def test_engine_survives_deepcopy_after_use(project, fresh_runtime) -> None:
    engine = BatonContextEngine(project_dir=project)
    engine.on_session_start("session-a")
    fresh_runtime.counter()  # a live counter exists in the process runtime, never on the engine
    engine.compaction.objective = "ship it"
    copied = copy.deepcopy(engine)
    assert copied is not engine and copied.compaction.objective == "ship it" and copied.name == "baton"
    copied.compaction.objective = "changed"
    assert engine.compaction.objective == "ship it"


def test_session_rotation_at_compaction_keeps_state_and_a_new_session_resets_it(project) -> None:
    engine = BatonContextEngine(project_dir=project)
    engine.on_session_start("s1", platform="cli")
    engine.compaction.objective, engine.compaction.session_draft_id, engine.compaction.turns = "goal", "draft-id", 7
    engine.compaction.last_handoff = {"id": "h1"}
    engine.on_session_start("s2", boundary_reason="compression", old_session_id="s1", platform="cli")
    assert (engine.compaction.session_id, engine.compaction.objective, engine.compaction.session_draft_id, engine.compaction.turns) == ("s2", "goal", "draft-id", 7)
    assert engine.compaction.session_rotations == 1
    engine.on_session_start("s3", platform="cli")  # a genuinely new session
    assert (engine.compaction.objective, engine.compaction.session_draft_id, engine.compaction.turns) == (None, None, 0)


def test_status_has_the_standard_fields_plus_baton_fields() -> None:
    engine = BatonContextEngine()
    engine.last_prompt_tokens = -1  # the host's sentinel must not leak into status as a negative
    status = engine.get_status()
    base = ContextEngine.get_status(engine)
    assert set(base) <= set(status)
    assert status["last_prompt_tokens"] == 0
    for key in ("latest_handoff", "tokenizer", "detector", "cooldown", "degradation", "route", "window", "trigger",
                "output_budget"):
        assert key in status
    assert status["tokenizer"]["source"]


def test_tool_schemas_and_unknown_tool_answer_json() -> None:
    engine = BatonContextEngine()
    names = [schema["name"] for schema in engine.get_tool_schemas()]
    assert names == ["baton_capture", "baton_resume", "baton_status", "baton_recall"]
    for schema in engine.get_tool_schemas():
        assert schema["parameters"]["type"] == "object"
    answer = json.loads(engine.handle_tool_call("shell", {"cmd": "ls"}))
    assert answer["ok"] is False and "unknown Baton tool" in answer["error"]["message"]
    assert json.loads(engine.handle_tool_call("baton_status", "not a dict"))["ok"] is False  # type: ignore[arg-type]


def test_has_content_to_compress() -> None:
    engine = BatonContextEngine()
    assert not engine.has_content_to_compress([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}])
    assert engine.has_content_to_compress([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    assert engine.should_defer_preflight_to_real_usage(10**9) is False
