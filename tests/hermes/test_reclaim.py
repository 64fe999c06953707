"""Hermes 0.22's ``prune_tool_results_only`` answered by the real engine (real Qwen3 tokenizer and chat template):
the pruned list valid on every transport Hermes has, Hermes' own pruning keys in config.yaml, and the newer hooks
(``should_compress_preflight``, ``pending_compression_operation``, ``on_turn_complete``'s keywords) answered and
guarded. On 0.19, which has no such hook, nothing calls it. The prune itself (figures, recall, the cache account,
when it may run) is tested through a fake host: ``tests/agent_core/test_reclaim.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine
from batontest.hermes_requests import BUILDERS, history
from batontest.validators import VALIDATORS

from baton_engine.hermes.config import installed_hermes_version
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.messages.markers import PRUNED_PREFIX
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


def test_a_pruned_list_is_a_valid_request_on_every_hermes_transport(project: Path, qwen3_env: Path) -> None:
    """The hook's pruned list, as each of Hermes' transports sends it: a request every provider accepts."""
    final = _feed(_engine(project), history(40_000)[1:])
    assert any(str(m.get("content")).startswith(PRUNED_PREFIX) for m in final)
    for name, (api_mode, build) in BUILDERS.items():
        assert VALIDATORS[api_mode](build(final)) == [], name


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


def test_the_preflight_hooks_answer_the_cores_decision(project: Path, qwen3_env: Path) -> None:
    engine = started_engine(project, load_settings(), window=65_536)
    large = history(60_000)[1:]
    assert engine.should_compress_preflight(history(8_000)[1:]) is False
    assert engine.should_compress_preflight(large) is True
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
