"""A working session's handoff state in a project: its capture draft, the detector's view, the latest handoff.

Why in the core: the Hermes engine, the MCP server and the CLI all keep a session that records into a
draft and asks the project's detector whether to hand off; the host only supplies ids, counts and times.
Nothing here raises for a missing or broken project: it answers None (no detector, no draft).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cachetools import LRUCache

from baton_engine.compaction import cycle
from baton_engine.errors import BatonError
from baton_engine.handoff import capture, detector, lineage, store
from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.handoff.config import CONFIG_FILE_NAME, load_config
from baton_engine.handoff.filememo import FileMemo
from baton_engine.handoff.model import HandoffRecord
from baton_engine.handoff.owner import Scope
from baton_engine.handoff.summary import summary_of
from baton_engine.results import call

LOGGER = logging.getLogger("baton_engine.compaction")
NO_OBJECTIVE = {"ok": False, "error": {
    "kind": "input_error", "message": "no objective yet: record one first with baton_capture kind=objective"}}


def _paths(project_dir: Path) -> store.ProjectPaths | None:
    return store.find_project_root(project_dir.resolve())


# Bounds of the hot path's memos: a process holds a few sessions (one draft each) in a few projects.
DRAFT_MEMO_ENTRIES = 64
CONFIG_MEMO_ENTRIES = 16
_DRAFT_PATHS: LRUCache[tuple[Path, str], Path] = LRUCache(maxsize=DRAFT_MEMO_ENTRIES)
_DRAFT_PATHS_LOCK = threading.Lock()
_DRAFT_READINESS = FileMemo(DRAFT_MEMO_ENTRIES)
_CONFIGS = FileMemo(CONFIG_MEMO_ENTRIES)


def readiness(paths: store.ProjectPaths, draft_id: str | None) -> float | None:
    """How complete the session draft is for a handoff (None without a draft).

    Asked below the threshold at every check, so it lists the store only once per draft (to find its
    file) and then re-reads the file only when it changed (``filememo``)."""
    if not draft_id:
        return None
    try:
        handoffs = store.HandoffStore(paths)
        key = (paths.data_dir, draft_id)
        with _DRAFT_PATHS_LOCK:
            path = _DRAFT_PATHS.get(key)  # type: ignore[arg-type]
        if path is None:
            path = handoffs.path_of(draft_id)  # type: ignore[arg-type]
            with _DRAFT_PATHS_LOCK:
                _DRAFT_PATHS[key] = path  # type: ignore[index]
        return _DRAFT_READINESS.get(path, lambda: detector.readiness(handoffs.load(str(path))))
    # What finding and reading a broken draft raises: the store's typed errors (no such draft; a file that is not
    # UTF-8 JSON, not a regular file or fails the record schema), OSError (a file or directory that cannot be
    # stat'ed or read), and what the store's reader lets through: json.loads' ValueError (a number over int's
    # digit limit) and RecursionError (nesting past the recursion limit), and pathlib's RuntimeError for a
    # symlink loop (a handoffs directory that points at itself); RuntimeError covers both.
    except (BatonError, OSError, ValueError, RuntimeError):
        return None


def evaluate_detector(project_dir: Path, *, tokens: int, window: int, turns: int, elapsed_seconds: float,
                      explicit: bool, state: dict[str, Any], draft_id: str | None,
                      now: datetime) -> detector.DetectorResult | None:
    """The project's detector on this session's signals; None without a project or with a broken config."""
    paths = _paths(project_dir)
    if paths is None:
        return None
    try:
        config = _CONFIGS.get(paths.data_dir / CONFIG_FILE_NAME, lambda: load_config(paths.data_dir)).detector
    # What load_config raises for a broken config: a UserInputError for everything it wraps (unreadable, a
    # directory, malformed JSON, invalid settings), and json.loads' ValueError (a number over int's digit limit)
    # and RecursionError (nesting past the recursion limit), which it does not wrap.
    except (BatonError, ValueError, RecursionError):
        return None
    signals = detector.DetectorSignals(context_tokens=max(tokens, 0), context_window=max(window, 1), turns=turns,
                                       elapsed_seconds=max(elapsed_seconds, 0.0), explicit=explicit or None)
    previous = detector.DetectorState.model_validate(state) if state else None
    return detector.evaluate(signals, config, previous, now=now, readiness=readiness(paths, draft_id))


def automation(result: detector.DetectorResult | None, reason: str, decision: str | None) -> dict[str, Any]:
    """The record's ``automation`` block for a pre-compaction handoff: the detector's view when the project
    has one (plus why the host compacted), else the host's reason alone."""
    if result is None:
        return {"trigger": "pre_compaction", "score": None, "reasons": [reason]}
    block = result.to_automation("pre_compaction").model_dump(mode="json")
    block["reasons"] = [*block["reasons"], *[r for r in [decision] if r]]
    return block


def latest_ready_summary(project_dir: Path, scope: Scope | None = None,
                         sessions: Collection[str] | None = None) -> dict[str, Any] | None:
    """The latest ready handoff's summary (ids and status only) among ``scope``'s records, without rendering
    anything; with ``sessions`` (hashed session ids) only one those sessions wrote: the handoff a session
    continues is its own lineage's, never merely the project's latest."""
    paths = _paths(project_dir)
    if paths is None:
        return None
    scope = scope or Scope.project()
    wanted = None if sessions is None else frozenset(sessions)

    def admits(record: HandoffRecord) -> bool:
        return scope.admits(record) and (wanted is None or record.origin.session_id in wanted)

    latest = store.HandoffStore(paths).latest("ready", admits)
    return summary_of(latest) if latest is not None else None


def create_draft(project_dir: Path, *, objective: str | None, messages: Sequence[Any], previous_handoff_id: str | None,
                 origin: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """A new session draft for ``baton_capture`` to record into: a continuation of the previous handoff when
    there is one (it inherits its items, so nothing recorded is forgotten), else a fresh checkpoint.
    Returns ``(draft id, None)`` or ``(None, the error result)``."""
    objective = objective or cycle.latest_user_request(messages)
    if not objective:
        return None, NO_OBJECTIVE
    payload = {
        "title": "Hermes session: " + cycle._one_line(objective.splitlines()[0], cycle.TITLE_CHARS),
        "objective": objective[: cycle.OBJECTIVE_CHARS],
        "summary": {"current_state": cycle.current_state(messages)},
    }
    continued = _continue_previous(project_dir, previous_handoff_id, payload, origin)
    if continued is not None:
        return continued, None
    result, _code = call(checkpoint_create, project_dir, payload, origin=origin)
    if not result.get("ok"):
        return None, result
    return result["handoff"]["id"], None


def _continue_previous(project_dir: Path, previous_id: str | None, payload: dict[str, Any],
                       origin: dict[str, Any]) -> str | None:
    paths = _paths(project_dir)
    if not previous_id or paths is None:
        return None
    try:
        handoffs = store.HandoffStore(paths)
        changes = {
            "work": {"title": payload["title"], "objective": payload["objective"]},
            "summary": payload["summary"],
            "origin": {**origin, "session_id": capture.hash_session_id(origin["session_id"])},
        }
        draft = capture.redacted(lineage.continue_from(handoffs.load(previous_id), changes=changes))
        handoffs.save(draft)
    except (BatonError, OSError) as exc:
        LOGGER.warning("baton could not continue the previous handoff type=%s", type(exc).__name__)
        return None
    return draft.id
