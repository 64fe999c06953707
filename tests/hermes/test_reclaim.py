"""Hermes 0.22's ``prune_tool_results_only`` answered by the real engine (real Qwen3 tokenizer and chat template):
answered tool output reclaimed to stubs with exact figures, every API shape still valid, what was pruned one
``baton_recall`` away, and the newer hooks (``should_compress_preflight``, ``pending_compression_operation``,
``on_turn_complete``'s keywords) answered and guarded. On 0.19, which has no such hook, nothing calls it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine
from batontest.hermes_requests import BUILDERS, history
from batontest.validators import VALIDATORS

from baton_engine.hermes.config import installed_hermes_version
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.messages.markers import PRUNED_PREFIX
from baton_engine.operations.maintenance import report
from baton_engine.settings import BatonSettings, load_settings

pytestmark = pytest.mark.hermes
WINDOW = 131_072


def _engine(project: Path, **block: Any) -> BatonContextEngine:
    return started_engine(project, load_settings(hermes_block={"reclaim_trigger_tokens": 12_000,
                                                               "reclaim_min_tokens": 2_000, **block}), window=WINDOW)


def _feed(engine: BatonContextEngine, messages: list[dict[str, Any]], step: int = 6) -> list[dict[str, Any]]:
    """The session as Hermes 0.22's preflight feeds it: before each request, the hook on the list so far; a
    committed prune replaces the list (a new list, a non-zero count), as Hermes commits it."""
    current: list[dict[str, Any]] = []
    for start in range(0, len(messages), step):
        current = current + messages[start:start + step]
        pruned, count = engine.prune_tool_results_only(current, current_tokens=None)
        if count and pruned is not current:
            current = pruned
    return current


def test_the_hook_reclaims_answered_output_with_exact_figures_and_recall_pages_it_back(project: Path,
                                                                                      qwen3_env: Path) -> None:
    engine = _engine(project)
    session = history(40_000)[1:]  # compress() and the hook get the transcript without the system prompt
    final = _feed(engine, session)
    reclaim = engine.get_status()["reclaim"]
    assert reclaim["prunes_committed"] >= 1, reclaim
    assert reclaim["reclaimed_exact"] is True and reclaim["reclaimed_tokens"] > 2_000
    last = reclaim["last"]
    # the figure is the exact difference of the two requests' counts (the second is the next request's count)
    after = engine.requests.count(engine.requests.view_of(final))
    assert after.exact and last["reclaimed"] == last["before"] - last["after"]
    stubs = [m for m in final if m.get("role") == "tool" and str(m.get("content")).startswith(PRUNED_PREFIX)]
    assert stubs and all("baton_recall" in m["content"] for m in stubs)
    # the pruned list is a request every provider accepts, on every API shape
    for name, (api_mode, build) in BUILDERS.items():
        assert VALIDATORS[api_mode](build(final)) == [], name
    # what was pruned is one baton_recall away, whole
    stub = stubs[0]
    ref = stub["content"].split("ref=")[1].rstrip("]")
    original = next(m for m in session if m.get("tool_call_id") == stub["tool_call_id"])
    page = json.loads(engine.handle_tool_call("baton_recall", {"mode": "expand", "ref": ref,
                                                               "budget_tokens": 20_000}))
    assert page["ok"] is True, page
    assert page["complete"] is True and page["text"].strip() == original["content"].strip()


def test_baton_report_shows_the_account_status_shows(project: Path, qwen3_env: Path) -> None:
    """``baton report`` replays the session's metrics log (usage with the cache's fields, each prune) through the
    account status keeps: the same figures, from the log alone."""
    engine = _engine(project)
    system, *session = history(40_000)
    current: list[dict[str, Any]] = []
    for start in range(0, len(session), 6):
        current = current + session[start:start + 6]
        pruned, count = engine.prune_tool_results_only(current, current_tokens=None)
        if count and pruned is not current:
            current = pruned
        engine.on_request({"model": "qwen3", "messages": [system, *current], "max_tokens": 1024}, model="qwen3")
        sent = engine.requests.ledger.sent_count.tokens
        engine.update_from_response({"prompt_tokens": sent, "completion_tokens": 20,
                                     "prompt_tokens_details": {"cached_tokens": sent * 3 // 4}})
    status = engine.get_status()["reclaim"]
    assert status["prunes_committed"] >= 1 and status["responses"] > 1 and status["cache_read_tokens"] > 0, status
    summary = report(project)["summary"]
    keys = ("prompt_tokens", "cache_read_tokens", "cache_write_tokens", "uncached_prompt_tokens", "responses",
            "responses_reporting_cache", "reclaimed_tokens", "reclaimed_exact", "prunes_committed", "prunes_declined")
    assert {key: summary[key] for key in keys} == {key: status[key] for key in keys}


def test_no_prune_inside_a_compaction_or_on_a_request_that_must_compact(project: Path, qwen3_env: Path) -> None:
    session = history(40_000)[1:]
    engine = _engine(project)
    engine.compaction.compacting = True
    assert engine.prune_tool_results_only(session) == (session, 0)
    engine.compaction.compacting = False
    small = started_engine(project, load_settings(hermes_block={"reclaim_trigger_tokens": 1_000}), window=32_768)
    messages, count = small.prune_tool_results_only(session)
    assert messages is session and count == 0
    assert small.get_status()["reclaim"]["prunes_declined"] == {"must_compact": 1}


def test_reclamation_is_off_at_a_zero_trigger(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project, reclaim_trigger_tokens=0)
    session = history(40_000)[1:]
    assert _feed(engine, session) == session
    assert engine.get_status()["reclaim"]["prunes_committed"] == 0


def test_hermes_pruning_keys_apply_below_the_baton_block(tmp_path: Path) -> None:
    compression = {"proactive_prune_tokens": 48_000, "proactive_prune_min_reclaim_tokens": 8_192}
    settings = load_settings(env={}, compression=compression)
    assert (settings.reclaim_trigger_tokens, settings.reclaim_min_tokens) == (48_000, 8_192)
    assert dict(settings.origins)["reclaim_trigger_tokens"] == "compression.proactive_prune_tokens in config.yaml"
    # 0 is Hermes 0.22's default (its own pruning off), not Baton's
    default = BatonSettings().reclaim_trigger_tokens
    assert load_settings(env={}, compression={"proactive_prune_tokens": 0}).reclaim_trigger_tokens == default
    block = load_settings(env={}, hermes_block={"reclaim_trigger_tokens": 20_000}, compression=compression)
    assert block.reclaim_trigger_tokens == 20_000


def test_should_compress_preflight_answers_from_the_exact_count(project: Path, qwen3_env: Path) -> None:
    engine = started_engine(project, load_settings(), window=65_536)
    small = history(8_000)[1:]
    assert engine.should_compress_preflight(small) is False
    large = history(60_000)[1:]
    assert engine.should_compress_preflight(large) is True
    assert engine.should_compress_preflight("not a list") is False
    assert engine.pending_compression_operation(large) is None


def test_an_interrupted_or_failed_turn_leaves_the_anchor(project: Path, qwen3_env: Path) -> None:
    engine = started_engine(project, load_settings(), window=65_536)
    engine.on_request({"model": "qwen3", "messages": history(4_000)[:5], "max_tokens": 1024}, model="qwen3")
    usage = {"prompt_tokens": 1_234, "completion_tokens": 10, "cache_read_tokens": 1_000}
    engine.on_turn_complete([], usage, turn_id="t1", task_id="x", api_call_count=1, interrupted=True, failed=False,
                            turn_exit_reason="interrupted")
    engine.on_turn_complete([], usage, turn_id="t2", failed=True, turn_exit_reason="provider_error")
    assert not engine.requests.ledger.usage_observed()
    assert engine.get_status()["reclaim"]["responses"] == 0
    engine.on_turn_complete([], usage, turn_id="t3", interrupted=False, failed=False, turn_exit_reason="done")
    assert engine.requests.ledger.usage_observed()
    reclaim = engine.get_status()["reclaim"]
    assert (reclaim["prompt_tokens"], reclaim["cache_read_tokens"], reclaim["uncached_prompt_tokens"]) == \
        (1_234, 1_000, 234)


def test_the_new_hooks_are_guarded(project: Path, qwen3_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine(project)
    session = history(20_000)[1:]

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a bug in Baton")

    monkeypatch.setattr(engine.pruner, "prune", broken)
    monkeypatch.setattr(engine.requests, "count", broken)
    assert engine.prune_tool_results_only(session, current_tokens=30_000) == (session, 0)
    assert engine.should_compress_preflight(session) is False
    assert engine.get_status()["internal_errors"]


@pytest.mark.skipif(not (installed_hermes_version() or "").startswith("0.19"), reason="Hermes 0.19's own code")
def test_hermes_019_never_calls_the_hook() -> None:
    import agent
    import run_agent

    sources = [Path(run_agent.__file__), *Path(agent.__file__).parent.rglob("*.py")]
    assert not any("prune_tool_results_only" in path.read_text(encoding="utf-8") for path in sources)


def test_a_new_session_starts_its_own_cache_account_and_a_rotation_keeps_it(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project)
    _feed(engine, history(30_000)[1:])
    committed = engine.get_status()["reclaim"]["prunes_committed"]
    assert committed >= 1
    engine.on_session_start("session-1b", boundary_reason="compression", old_session_id="session-1")
    assert engine.get_status()["reclaim"]["prunes_committed"] == committed
    engine.on_session_start("session-2", platform="cli")
    fresh = engine.get_status()["reclaim"]
    assert (fresh["prunes_committed"], fresh["reclaimed_tokens"], fresh["prompt_tokens"], fresh["last"]) == \
        (0, 0, 0, None)
