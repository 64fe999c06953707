"""Hermes' ``compress`` hook at its boundary: whatever it is handed and whatever goes wrong inside, it answers Hermes
with a list, never an exception; a scan ahead that fails inside Hermes' estimator leaves the work to the compaction.

The compaction cycle itself is tested through a fake host (``tests/agent_core/test_compaction.py``). The cycle's
own catch of a bug and the scan ahead's swallowed fault are kept here as they were (the core's broad ``except``
handling is being revised).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import started_engine
from batontest.tool_rounds import conversation

from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import ExactEstimators
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes


def _engine(project: Path, **block: Any) -> BatonContextEngine:
    return started_engine(project, load_settings(hermes_block=block or None))


@pytest.mark.parametrize("garbage", [None, [], [{"bad": 1}], [{"role": "tool", "content": "orphan"}], "text"])
def test_compress_never_raises_on_garbage(project: Path, garbage: Any) -> None:
    engine = _engine(project)
    out = engine.compress(garbage)
    assert isinstance(out, list)


def test_a_bug_in_the_cycle_is_caught_at_the_host_boundary(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The core raises its bugs; compress() (Hermes' call) turns one into the degraded, pair-safe list."""
    from baton_engine.compaction import builder

    def bug(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a bug in the tail plan")

    monkeypatch.setattr(builder, "_build", bug)
    engine = _engine(project)
    messages = conversation("Harden the uploader", 8) + [{"role": "user", "content": "and now the retries"}]
    out = engine.compress(messages)
    status = engine.get_status()
    assert status["degradation"]["reason"] == "internal_error"
    assert status["degradation"]["detail"] == "internal error: RuntimeError"
    assert out[-1] == {"role": "user", "content": "and now the retries"}
    assert len(out) < len(messages) and all(isinstance(m, dict) for m in out)


class HostileDict(dict):
    """A message whose every read raises: no host sends one, compress() must still answer Hermes with a list."""

    def get(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("boom")


def test_a_hostile_message_never_raises_into_hermes(project: Path) -> None:
    engine = _engine(project)
    messages = [{"role": "user", "content": "Harden the uploader"}, HostileDict(role="user", content="x")]
    out = engine.compress(messages)
    assert isinstance(out, list) and out


def test_a_failing_scan_ahead_leaves_the_scan_to_the_compaction(project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing scan ahead never costs the exact estimate (Hermes calls it inside its loop: the plugin's estimator
    patch guards the scan apart from the count); the compaction then scans every message itself."""
    from baton_engine.compaction import scan

    scan.clear()
    engine = _engine(project, fresh_tail_tokens=200)
    messages = conversation("Refactor the app.", 6)
    monkeypatch.setattr(scan, "observe", lambda *_: (_ for _ in ()).throw(RuntimeError("boom")))
    estimated = in_agent(LoopAgent(engine), ExactEstimators()._count, messages)
    assert estimated is not None and estimated == engine.count_estimate(messages).tokens
    engine.compress(copy.deepcopy(messages))
    figures = engine.get_status()["last_compaction_scan"]
    assert engine.compaction.degradation_reason is None
    assert figures["scanned_at_compaction"] == figures["messages"] == len(messages)