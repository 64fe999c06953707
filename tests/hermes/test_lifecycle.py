"""Session lifecycle: the handoff a session continues noted at start (no brief rendered), draft checkpoint at end (never ready), reset keeps lineage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batontest.records import handoff_records as _records

from baton_engine.agent.runtime import BatonRuntime, get_runtime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
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


def test_a_resumed_session_continues_its_own_handoff_without_counting(project: Path) -> None:
    """Session start reads the store only: no brief is rendered (no tokenizer call, no git) until asked.
    A session resumed by id (``hermes --resume``, ``/resume``) continues the handoff it wrote."""
    first = _engine(project)
    first.on_session_start("one", platform="cli")
    first.compress([*MESSAGES, {"role": "user", "content": "continue"}])
    ready = first.get_status()["latest_handoff"]
    again = _engine(project)
    counter = get_runtime().counter()
    calls = counter.stats().calls
    again.on_session_start("one", platform="cli")
    assert counter.stats().calls == calls and again.requests.ledger.counted == 0
    assert again.get_status()["latest_handoff"]["id"] == ready["id"]
    again.compress([*MESSAGES, {"role": "user", "content": "next"}])
    assert again.get_status()["latest_handoff"]["parents"] == [ready["id"]]  # continues its own lineage


def test_a_new_cli_session_starts_its_own_lineage_until_it_resumes(project: Path) -> None:
    """A fresh ``hermes chat -q`` on another task must not say "continue of <previous id>" nor carry the
    previous task's decisions; ``baton_resume`` (project-wide on the CLI) is how it takes the lineage up."""
    first = _engine(project)
    first.on_session_start("one", platform="cli")
    first.compress([*MESSAGES, {"role": "user", "content": "continue"}])
    ready = first.get_status()["latest_handoff"]
    other = _engine(project)
    other.on_session_start("two", platform="cli")
    assert other.get_status()["latest_handoff"] is None
    other.compress([{"role": "user", "content": "Write the release notes"},
                    {"role": "assistant", "content": "Drafted the notes."}, {"role": "user", "content": "go"}])
    assert other.get_status()["latest_handoff"]["parents"] == []
    resumer = _engine(project)
    resumer.on_session_start("three", platform="cli")
    answer = json.loads(resumer.handle_tool_call("baton_resume", {"ref": ready["short_id"]}))
    assert answer["ok"] and answer["handoff"]["id"] == ready["id"]
    resumer.compress([*MESSAGES, {"role": "user", "content": "carry on"}])
    assert resumer.get_status()["latest_handoff"]["parents"] == [ready["id"]]


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
    engine.compaction.objective, engine.compaction.turns, engine.last_prompt_tokens = "x", 9, 5000
    engine.on_session_reset()
    assert (engine.compaction.objective, engine.compaction.turns, engine.last_prompt_tokens) == (None, 0, 0)
    assert engine.compaction.policy.post_compaction_tokens is None
    assert engine.get_status()["latest_handoff"] == handoff and engine.compression_count == 1
