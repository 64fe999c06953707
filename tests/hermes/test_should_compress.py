"""Hermes' ``should_compress`` hooks over the core's decision (``Agent.compaction_decision``, whose truth table is
``tests/agent_core/test_compaction_decision.py``): no size means Hermes' last prompt size, its ``-1`` mark means a
request awaits real usage (0 is then no size), and the reason is given only for a request held back (Hermes 0.22
warns with it). The failure cooldown is reported to Hermes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
CONTEXT = 100_000  # threshold = min(75,000, 100,000 - 5,120) = 75,000


def _engine(tmp_path: Path) -> BatonContextEngine:
    set_runtime(BatonRuntime(load_settings(env={})))
    engine = BatonContextEngine(project_dir=tmp_path)  # no .baton/: the detector is unavailable
    engine.update_model("m", CONTEXT)
    return engine


@pytest.mark.parametrize(
    ("last_prompt_tokens", "post_compaction_tokens", "prompt", "expected", "reason"),
    [
        (0, None, 75_000, True, ">= threshold 75000"),  # the size Hermes passes
        (80_000, None, None, True, ">= threshold"),  # None: the engine's own number (Hermes' last prompt)
        (0, None, 0, False, "below trigger"),
        (-1, None, 0, False, "awaiting real usage"),  # -1: a request awaits its usage; 0 is no size then
        (-1, None, -1, False, "awaiting real usage"),
        (0, 74_000, 75_000, False, "cooldown"),  # held back: the reason is Hermes' warning
    ],
)
def test_the_hooks_pass_hermes_numbers_to_the_decision(tmp_path: Path, last_prompt_tokens: int,
                                                       post_compaction_tokens: int | None, prompt: int | None,
                                                       expected: bool, reason: str) -> None:
    engine = _engine(tmp_path)
    engine.last_prompt_tokens = last_prompt_tokens
    engine.compaction.policy = replace(engine.compaction.policy, post_compaction_tokens=post_compaction_tokens)
    decision, why = engine.should_compress_info(prompt)
    assert decision is expected
    assert reason in engine.compaction.last_decision
    assert why == (engine.compaction.last_decision if reason == "cooldown" else None)
    assert engine.should_compress(prompt) is expected
    assert reason in engine.get_status()["last_decision"]


def test_failure_cooldown_is_reported_to_the_host(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    assert engine.get_active_compression_failure_cooldown() is None
    engine.compaction.failure_until = 10**12
    assert engine.get_active_compression_failure_cooldown()["remaining_seconds"] > 0
