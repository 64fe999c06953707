"""Session lifecycle: the latest ready handoff noted at start (no brief rendered), draft checkpoint at end (never ready), reset keeps lineage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batontest.records import handoff_records as _records

from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.runtime import BatonRuntime, get_runtime, set_runtime
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
MESSAGES = [{"role": "user", "content": "Migrate the settings loader"},
            {"role": "assistant", "content": "Read the old loader; two call sites remain."}]


def _engine(project: Path, **block: object) -> BatonContextEngine:
    set_runtime(BatonRuntime(load_settings(hermes_block=block or None)))
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("m", 65536)
    return engine


def _eager_detector(project: Path) -> None:
    path = project / ".baton" / "config.json"
    config = json.loads(path.read_text())
    config["detector"]["recommend_threshold"] = 0.05
    path.write_text(json.dumps(config))


def test_new_session_continues_the_latest_ready_handoff_without_counting(project: Path) -> None:
    """Session start reads the store only: no brief is rendered (no tokenizer call, no git) until asked."""
    first = _engine(project)
    first.on_session_start("one")
    first.compress([*MESSAGES, {"role": "user", "content": "continue"}])
    ready = first.get_status()["latest_handoff"]
    second = _engine(project)
    counter = get_runtime().counter()
    calls = counter.stats().calls
    second.on_session_start("two")
    assert counter.stats().calls == calls and second.ledger.counted == 0
    assert second.get_status()["latest_handoff"]["id"] == ready["id"]
    second.compress([*MESSAGES, {"role": "user", "content": "next"}])
    assert second.get_status()["latest_handoff"]["parents"] == [ready["id"]]  # continues the staged handoff


def test_session_end_writes_a_draft_checkpoint_when_recommended(project: Path) -> None:
    _eager_detector(project)
    engine = _engine(project)
    engine.on_session_start("s")
    engine.last_prompt_tokens = 40_000
    engine.on_session_end("s", MESSAGES)
    records = _records(project)
    assert len(records) == 1 and records[0]["status"] == "draft"
    assert records[0]["work"]["objective"] == "Migrate the settings loader"


def test_session_end_respects_the_setting_and_the_detector(project: Path) -> None:
    _eager_detector(project)
    engine = _engine(project, auto_checkpoint_on_end=False)
    engine.on_session_start("s")
    engine.last_prompt_tokens = 40_000
    engine.on_session_end("s", MESSAGES)
    quiet = _engine(project)  # a detector that recommends nothing: no checkpoint
    quiet_config = json.loads((project / ".baton" / "config.json").read_text())
    quiet_config["detector"]["recommend_threshold"] = 0.99
    (project / ".baton" / "config.json").write_text(json.dumps(quiet_config))
    quiet.on_session_start("q")
    quiet.on_session_end("q", MESSAGES)
    assert _records(project) == []
    quiet.on_session_end("q", "garbage")  # type: ignore[arg-type]  never raises


def test_reset_clears_session_state_but_keeps_lineage(project: Path) -> None:
    engine = _engine(project)
    engine.on_session_start("s")
    engine.compress([*MESSAGES, {"role": "user", "content": "go"}])
    handoff = engine.get_status()["latest_handoff"]
    engine.objective, engine.turns, engine.last_prompt_tokens = "x", 9, 5000
    engine.on_session_reset()
    assert (engine.objective, engine.turns, engine.last_prompt_tokens) == (None, 0, 0)
    assert engine.policy.post_compaction_tokens is None
    assert engine.get_status()["latest_handoff"] == handoff and engine.compression_count == 1
