"""Hermes' ``on_session_reset`` (``/new``, ``/reset``): Hermes' usage counters reset as its built-in resets them, and
the session's state with them.

The session lifecycle itself (start, end, reset, lineage) is tested through a fake host:
``tests/agent_core/test_lifecycle.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes


def test_reset_clears_hermes_counters_and_the_session_state(project: Path) -> None:
    set_runtime(BatonRuntime(load_settings()))
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("m", 65536)
    engine.on_session_start("s")
    engine.compaction.objective, engine.compaction.turns = "x", 9
    engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens = 5000, 20, 5020
    engine.on_session_reset()
    assert (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens) == (0, 0, 0)
    assert (engine.compaction.objective, engine.compaction.turns) == (None, 0)
