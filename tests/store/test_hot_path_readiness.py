"""Below the threshold the detector's checks touch no store listing: the draft's readiness and the project
config are re-read only when their file changed (issue 13, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton_engine.compaction import session
from baton_engine.handoff import filememo, store
from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.handoff.config import CONFIG_FILE_NAME
from baton_engine.operations.handoffs import init
from baton_engine.results import call


@pytest.fixture
def project(tmp_path: Path) -> Path:
    call(init, tmp_path)
    return tmp_path


def _draft(project: Path) -> str:
    payload = {"title": "t", "objective": "keep the store fast", "summary": {"current_state": "started"}}
    result, _code = call(checkpoint_create, project, payload,
                                    origin={"harness": "generic", "session_id": "s"})
    assert result["ok"], result
    return result["handoff"]["id"]


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = store.HandoffStore.list

    def counted(self: store.HandoffStore) -> store.ListResult:
        calls[0] += 1
        return real(self)

    monkeypatch.setattr(store.HandoffStore, "list", counted)
    return calls


def test_readiness_lists_the_store_once_per_draft_then_follows_the_file(project: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    draft_id = _draft(project)
    listings = _count_listings(monkeypatch)
    first = session.readiness(store.find_project_root(project), draft_id)
    for _ in range(20):
        assert session.readiness(store.find_project_root(project), draft_id) == first
    assert listings[0] == 0  # the draft's file found by its id's name, never by listing the store

    paths = store.find_project_root(project)
    handoffs = store.HandoffStore(paths)  # type: ignore[arg-type]
    draft = handoffs.load(draft_id)
    status = "warn" if draft.validation.status == "pass" else "pass"
    handoffs.save(draft.model_copy(update={"validation": draft.validation.model_copy(update={"status": status})}))
    changed = session.readiness(store.find_project_root(project), draft_id)
    assert changed is not None and changed != first  # the change is seen at once
    assert listings[0] == 0  # neither the load, the save nor readiness listed the store


def test_a_changed_config_is_read_again(project: Path) -> None:
    result = session.evaluate_detector(project, tokens=10, window=100, turns=1, elapsed_seconds=1.0,
                                       explicit=False, state={}, draft_id=None, now=store.ids.utc_now())
    assert result is not None
    config_path = store.find_project_root(project).data_dir / CONFIG_FILE_NAME  # type: ignore[union-attr]
    config_path.write_text("{ not json", encoding="utf-8")
    broken = session.evaluate_detector(project, tokens=10, window=100, turns=1, elapsed_seconds=1.0,
                                       explicit=False, state={}, draft_id=None, now=store.ids.utc_now())
    assert broken is None  # a broken config is noticed, not served from the memo


def test_file_memo_reloads_on_replace_and_not_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"v": 1}), encoding="utf-8")
    memo = filememo.FileMemo(max_entries=2)
    loads = []

    def load() -> int:
        loads.append(1)
        return json.loads(path.read_text(encoding="utf-8"))["v"]

    assert [memo.get(path, load) for _ in range(3)] == [1, 1, 1] and len(loads) == 1
    replacement = tmp_path / ".f.tmp"
    replacement.write_text(json.dumps({"v": 2}), encoding="utf-8")
    replacement.replace(path)  # how the store writes: a new file renamed over the old one
    assert memo.get(path, load) == 2 and len(loads) == 2
    path.unlink()
    with pytest.raises(FileNotFoundError):
        memo.get(path, load)  # a missing file is never served from the memo
