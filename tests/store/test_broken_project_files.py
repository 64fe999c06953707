"""A broken session draft or project config on disk: the detector answers without readiness / without a detector,
and never raises into the agent loop (``compaction.session``). Each kind of broken file is a real file in a real
project, read through the path the engine uses; the catches name exactly these kinds."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.operations.handoffs import init
from baton_engine.results import call
from baton_engine.compaction import session
from baton_engine.handoff import store
from baton_engine.handoff.config import CONFIG_FILE_NAME

TOO_MANY_DIGITS = b'{"n": ' + b"1" * 5000 + b"}"  # json.loads: ValueError (int's digit limit), not JSONDecodeError
TOO_DEEP = b"[" * 100_000 + b"]" * 100_000  # json.loads: RecursionError
as_root = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    result, _code = call(init, tmp_path)
    assert result["ok"], result
    return tmp_path


def _paths(project: Path) -> store.ProjectPaths:
    paths = store.find_project_root(project)
    assert paths is not None
    return paths


def _draft(project: Path) -> tuple[str, Path]:
    payload = {"title": "t", "objective": "keep the loop alive", "summary": {"current_state": "started"}}
    result, _code = call(checkpoint_create, project, payload,
                                    origin={"harness": "generic", "session_id": "s"})
    assert result["ok"], result
    draft_id = result["handoff"]["id"]
    return draft_id, store.HandoffStore(_paths(project)).path_of(draft_id)


def _write(content: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(content)


def _directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def _invalid_record(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["work"] = "not an object"
    path.write_text(json.dumps(data), encoding="utf-8")


def _unreadable(path: Path) -> None:
    path.chmod(0)


def _unsearchable_handoffs_dir(path: Path) -> None:
    path.parent.chmod(0)  # listing it fails, and so does stat'ing the draft in it (PermissionError)


def _looping_handoffs_dir(path: Path) -> None:
    handoffs = path.parent
    shutil.rmtree(handoffs)
    handoffs.symlink_to(handoffs.name)  # the handoffs directory points at itself: pathlib raises RuntimeError


DRAFT_BREAKS = {
    "truncated-json": lambda path: path.write_bytes(path.read_bytes()[:40]),  # UserInputError / NotFoundError
    "not-utf8": _write(b"\xff\xfe{}"),
    "invalid-record": _invalid_record,
    "too-many-digits": _write(TOO_MANY_DIGITS),  # ValueError through the store's reader
    "too-deep": _write(TOO_DEEP),  # RecursionError through the store's reader
    "directory": _directory,
    "deleted": lambda path: path.unlink(),  # NotFoundError
    "looping-handoffs-dir": _looping_handoffs_dir,  # RuntimeError
    "unreadable": pytest.param(_unreadable, marks=as_root),  # UserInputError / NotFoundError
    "unsearchable-handoffs-dir": pytest.param(_unsearchable_handoffs_dir, marks=as_root),  # OSError
}


@pytest.mark.parametrize("known", [False, True], ids=["new-session", "draft-already-read"])
@pytest.mark.parametrize("breaks", DRAFT_BREAKS.values(), ids=DRAFT_BREAKS.keys())
def test_a_broken_draft_has_no_readiness_and_the_detector_still_answers(
        project: Path, breaks: Callable[[Path], None], known: bool) -> None:
    draft_id, path = _draft(project)
    if known:  # the draft's file is memoised: the broken file is found by reading it again, not by listing
        assert session.readiness(_paths(project), draft_id) is not None
    breaks(path)
    assert session.readiness(_paths(project), draft_id) is None
    result = session.evaluate_detector(project, tokens=10, window=100, turns=1, elapsed_seconds=1.0,
                                       explicit=False, state={}, draft_id=draft_id, now=store.ids.utc_now())
    assert result is not None and result.readiness is None


CONFIG_BREAKS = {
    "truncated-json": _write(b'{"detector": {'),
    "not-utf8": _write(b"\xff\xfe{}"),
    "not-an-object": _write(b"[]"),
    "invalid-setting": _write(b'{"detector": {"recommend_threshold": 5}}'),
    "too-many-digits": _write(TOO_MANY_DIGITS),  # ValueError: load_config does not wrap it
    "too-deep": _write(TOO_DEEP),  # RecursionError: load_config does not wrap it
    "directory": _directory,
    "unreadable": pytest.param(_unreadable, marks=as_root),
}


@pytest.mark.parametrize("breaks", CONFIG_BREAKS.values(), ids=CONFIG_BREAKS.keys())
def test_a_broken_config_gives_no_detector(project: Path, breaks: Callable[[Path], None]) -> None:
    def evaluate() -> object:
        return session.evaluate_detector(project, tokens=10, window=100, turns=1, elapsed_seconds=1.0,
                                         explicit=False, state={}, draft_id=None, now=store.ids.utc_now())

    assert evaluate() is not None  # the project's detector, before the config breaks
    breaks(_paths(project).data_dir / CONFIG_FILE_NAME)
    assert evaluate() is None
