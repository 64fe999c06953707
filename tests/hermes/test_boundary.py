"""Nothing Baton does raises into Hermes: with the core failing under every hook, each entry point Hermes calls
answers what Hermes' built-in would, and says each kind of fault once, by type (issue 33 item 3)."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import activated, hermes_estimator, started_engine
from batontest.failing_core import fail_core, fault_type

from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.guard import internal_errors
from baton_engine.hermes.refusal_patch import observing_refusals
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
PROMPT = "PROMPT-TEXT-never-in-a-log"
MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": PROMPT},
            {"role": "assistant", "content": "Reading it."}, {"role": "user", "content": "go on"}]
TOOLS = [{"type": "function", "function": {"name": "todo", "description": "track tasks",
                                           "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture
def engine(project: Path) -> BatonContextEngine:
    return started_engine(project, load_settings(hermes_block={"tokenizer": {"backend": "rough"}}))


def test_every_engine_hook_answers_the_builtins_fallback_when_the_core_fails(
        engine: BatonContextEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    replaced = fail_core(monkeypatch.setattr, fault_type("CoreFaultHooks"))
    assert {"RequestBudgeter.on_request", "CompactionRunner.decide", "ToolHandler.handle"} <= set(replaced)
    caplog.set_level(logging.DEBUG, logger="baton_engine")

    engine.update_model("other-model", 32768, base_url="http://127.0.0.1:9/v1", provider="custom")
    assert (engine.context_length, engine.threshold_tokens) == (32768, int(32768 * engine.threshold_percent))
    engine.update_model("other-model", None)  # type: ignore[arg-type]  # Hermes' default window, as Baton's
    assert engine.context_length > 0
    engine.update_model("other-model", 32768)
    threshold = engine.threshold_tokens

    # update_from_response runs inside Hermes' API try: Hermes' counters as its built-in sets them, no raise
    for _ in range(2):
        assert engine.update_from_response({"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}) \
            is None
    assert (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens) == (1200, 30, 1230)
    engine.update_from_response("not a dict")  # type: ignore[arg-type]

    # should_compress: the built-in's threshold rule on the numbers Hermes gave
    assert engine.should_compress(threshold) is True and engine.should_compress(threshold - 1) is False
    assert engine.should_compress() is False  # Hermes' last prompt (1200) is below the threshold
    assert engine.should_compress_info(threshold) == (True, None)
    assert engine.has_content_to_compress(MESSAGES) is True  # ContextEngine's default
    compacted = engine.compress(MESSAGES, current_tokens=threshold)
    assert compacted == MESSAGES and compacted is not MESSAGES and engine._last_compression_made_progress is False
    assert engine.select_context(MESSAGES, conversation_messages=MESSAGES) is None  # the request as built
    assert engine.on_turn_complete(MESSAGES, usage={"prompt_tokens": 1}) is None
    assert engine.get_automatic_compaction_status_message(phase="compress", default_message="x") is None
    assert engine.get_active_compression_failure_cooldown() is None

    engine.on_session_start("session-2", platform="telegram", model="other-model")
    engine.bind_session_state(object(), "session-2")
    engine.on_session_end("session-2", MESSAGES)
    engine.on_session_reset()
    assert (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens) == (0, 0, 0)

    assert engine.get_tool_schemas() == []
    answer = json.loads(engine.handle_tool_call("baton_status", {}, messages=MESSAGES))
    assert answer["ok"] is False and answer["error"]["kind"] == "internal_error"
    status = engine.get_status()
    assert status["status_error"] == "internal_error" and status["context_length"] == 32768
    assert status["internal_errors"]["update_from_response: CoreFaultHooks"] == 2  # not a dict: no core call
    assert isinstance(engine.clone_for_agent(), BatonContextEngine)  # an agent's engine is still built

    # each kind said once, by type; the fault's own text (it quotes the prompt) never
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("update_from_response failed type=CoreFaultHooks" in line for line in warnings) == 1
    assert len(warnings) == len(set(warnings))
    assert all(PROMPT not in r.getMessage() for r in caplog.records)


def test_the_patches_and_middleware_answer_hermes_own_values_when_the_core_fails(
        engine: BatonContextEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = LoopAgent(engine, TOOLS)
    with activated() as activation:
        aux = importlib.import_module("agent.auxiliary_client")
        in_agent(agent, aux._build_call_kwargs, "nvidia", "qwen3", MESSAGES[1:], max_tokens=65536)  # awaits its reply
        fail_core(monkeypatch.setattr, fault_type("CoreFaultPatches"))
        reply = SimpleNamespace(model="qwen3", choices=[SimpleNamespace(message=SimpleNamespace(content="A title"))],
                                usage=SimpleNamespace(prompt_tokens=90, completion_tokens=4, total_tokens=94))
        assert aux._validate_llm_response(reply, "title_generation") is reply  # Hermes' own validation
        loop = importlib.import_module("agent.conversation_loop")
        for patched, args, kwargs in (  # where each tested Hermes' loop reads them (batontest.engines)
                (hermes_estimator("estimate_request_tokens_rough"), (MESSAGES[1:],),
                 {"system_prompt": "S", "tools": TOOLS}),
                (hermes_estimator("estimate_messages_tokens_rough"), (MESSAGES,), {}),
                (loop._estimate_tools_tokens_rough, (TOOLS,), {})):  # after a fallen-back message estimate
            assert in_agent(agent, patched, *args, **kwargs) == patched.__baton_original__(*args, **kwargs), patched
        request = {"model": "qwen3", "messages": MESSAGES, "max_tokens": 65536}
        assert in_agent(agent, activation.llm_request, request=request, model="qwen3") is None  # unchanged
        response = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=120, completion_tokens=8))
        assert in_agent(agent, activation.llm_execution, next_call=lambda: response, session_id=None,
                        provider="custom", api_mode="chat_completions") is response  # Hermes' own response
        built = in_agent(agent, aux._build_call_kwargs, "nvidia", "qwen3", MESSAGES[1:], max_tokens=65536)
        assert built == aux._build_call_kwargs.__baton_original__("nvidia", "qwen3", MESSAGES[1:], max_tokens=65536)
    errors = internal_errors()
    assert {"exact estimate: CoreFaultPatches", "llm_request middleware: CoreFaultPatches",
            "auxiliary clamp: CoreFaultPatches", "response usage: CoreFaultPatches",
            "auxiliary reply usage: CoreFaultPatches"} <= set(errors), errors


def test_the_refusal_observer_returns_hermes_classification_when_the_engine_fails(
        engine: BatonContextEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    fail_core(monkeypatch.setattr, fault_type("CoreFaultRefusal"))
    error = RuntimeError("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens "
                         "(39000 in the messages, 1000 in the completion).")
    classify = observing_refusals(lambda exc, *_a, **_k: ("classified", type(exc).__name__), BatonContextEngine)
    assert in_agent(LoopAgent(engine), classify, error) == ("classified", "RuntimeError")
    assert internal_errors().get("refusal observer: CoreFaultRefusal") == 1
