"""The should_compress truth table: explicit request, token fallback, window threshold, detector, cooldown, -1."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
CONTEXT = 100_000  # threshold = min(75,000, 100,000 - 5,120) = 75,000


def _engine(tmp_path: Path, **block: object) -> BatonContextEngine:
    set_runtime(BatonRuntime(load_settings(env={}, hermes_block=block or None)))
    engine = BatonContextEngine(project_dir=tmp_path)  # no .baton/: the detector is unavailable
    engine.update_model("m", CONTEXT)
    return engine


@pytest.mark.parametrize(
    ("block", "state", "prompt", "expected", "reason"),
    [
        ({}, {}, 10_000, False, "below trigger"),
        ({}, {}, 74_999, False, "below trigger"),
        ({}, {}, 75_000, True, ">= threshold 75000"),
        ({}, {"explicit": True}, 10, True, "explicit"),
        ({"fallback_token_threshold": 20_000}, {}, 20_000, True, "fallback_token_threshold"),
        ({"fallback_token_threshold": 20_000}, {}, 19_999, False, "below trigger"),
        ({}, {"last_prompt_tokens": -1}, -1, False, "awaiting real usage"),
        ({}, {"last_prompt_tokens": -1}, 0, False, "awaiting real usage"),
        ({}, {"last_prompt_tokens": 80_000}, None, True, ">= threshold"),  # None -> the engine's own number
        # cooldown: after a compaction to 74,000 tokens, 75,000 is not real growth (needs 7,500) ...
        ({}, {"post_compaction_tokens": 74_000}, 75_000, False, "cooldown"),
        ({}, {"post_compaction_tokens": 74_000}, 81_500, True, ">= threshold"),
        # ... but the explicit request and the hard ceiling (no room for output) bypass it
        ({}, {"post_compaction_tokens": 94_000, "explicit": True}, 95_000, True, "explicit"),
        ({}, {"post_compaction_tokens": 94_000}, 96_000, True, "output tokens"),
    ],
)
def test_truth_table(tmp_path: Path, block: dict, state: dict, prompt: int | None, expected: bool,
                     reason: str) -> None:
    engine = _engine(tmp_path, **block)
    policy_fields = {k: v for k, v in state.items() if k in ("explicit", "post_compaction_tokens")}
    engine.compaction.policy = replace(engine.compaction.policy, **policy_fields)
    for name, value in state.items():
        if name not in policy_fields:
            setattr(engine, name, value)
    decision, why = engine.should_compress_info(prompt)
    assert decision is expected
    assert reason in engine.compaction.last_decision
    # Hermes 0.22 warns with the reason: given only for a request held back at or above the trigger
    assert why == (engine.compaction.last_decision if reason == "cooldown" else None)
    assert engine.should_compress(prompt) is expected
    assert reason in engine.get_status()["last_decision"]


def test_detector_recommendation_needs_readiness(project: Path) -> None:
    """Below the token threshold the project's detector decides; it needs an auto-prepare-ready record."""
    config_path = project / ".baton" / "config.json"
    config = json.loads(config_path.read_text())
    config["detector"].update(recommend_threshold=0.3, auto_prepare_threshold=0.3, auto_prepare_min_readiness=0.5)
    config_path.write_text(json.dumps(config))
    set_runtime(BatonRuntime(load_settings(env={})))
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("m", CONTEXT)
    messages = [{"role": "user", "content": "Build the parser"}]
    assert engine.should_compress_info(60_000) == (False, None)  # no record: readiness None
    assert "no handoff record yet" in " ".join(engine.get_status()["detector"]["reasons"])
    answer = json.loads(engine.handle_tool_call("baton_capture", {"kind": "open_item", "item": {
        "description": "parser", "suggested_action": "write it", "acceptance_check": "tests pass"}},
        messages=messages))
    assert answer["ok"], answer
    decision, _ = engine.should_compress_info(60_000)
    assert decision and "detector pressure" in engine.compaction.last_decision


def test_tool_can_request_a_handoff(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    assert not engine.should_compress(10)
    assert json.loads(engine.handle_tool_call("baton_capture", {"kind": "request_handoff"}))["ok"]
    assert engine.should_compress(10)


def test_failure_cooldown_is_reported_to_the_host(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    assert engine.get_active_compression_failure_cooldown() is None
    engine.compaction.failure_until = 10**12
    assert engine.get_active_compression_failure_cooldown()["remaining_seconds"] > 0
