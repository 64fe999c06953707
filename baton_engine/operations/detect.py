"""``detect``: handoff pressure for an event's signals, and the detector's cooldown state file it keeps.

Why its own module: the only command that keeps state outside the records (``.baton/cache/detector.json``,
rebuildable: a missing or unreadable file starts fresh).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from baton_engine.errors import BatonError
from baton_engine.handoff import capture, detector, store, validate
from baton_engine.handoff.ids import utc_now
from baton_engine.handoff.project import open_project
from baton_engine.handoff.summary import redactions_of, summary_of

DETECTOR_STATE_FILE = "detector.json"


def _detector_state_path(paths: store.ProjectPaths) -> Path:
    return paths.data_dir / "cache" / DETECTOR_STATE_FILE


def _load_detector_state(paths: store.ProjectPaths) -> detector.DetectorState:
    """Cached cooldown state; a missing or unreadable cache is rebuildable, so it just starts fresh."""
    path = _detector_state_path(paths)
    if path.is_symlink() or path.parent.is_symlink():  # never read a cache that points out of the project
        return detector.DetectorState()
    try:
        data = json.loads(path.read_text("utf-8"))
        return detector.DetectorState.from_json_dict(data)
    except (OSError, ValueError, BatonError):
        return detector.DetectorState()


def _save_detector_state(paths: store.ProjectPaths, state: detector.DetectorState) -> None:
    target = _detector_state_path(paths)
    if target.parent.is_symlink():  # a rebuildable cache is skipped rather than written out of the project
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    # atomic_write renames over the target: a symlink planted there is replaced, never written through
    store.atomic_write(target, (json.dumps(state.to_json_dict(), sort_keys=True) + "\n").encode("utf-8"))


def detect(
    start: Path | str | None = None,
    *,
    event: dict[str, Any] | None = None,
    capture_payload: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Handoff pressure for the signals in ``event``; by default creates nothing but the cooldown cache.

    With ``capture_payload``, a recommended handoff (an explicit request always is) is captured as a draft
    whose ``automation`` block holds the score, the inputs used/unused and the reasons, for audit.
    Readiness is that of the latest draft (None without one, so nothing is ever auto-prepared blindly).
    """
    paths, handoffs, config = open_project(start)
    signals = detector.DetectorSignals.from_mapping(event or {}, source="--event")
    if capture_payload is not None:
        capture.parse_payload(capture_payload)  # a bad payload fails before any state changes
    draft = handoffs.latest("draft")
    readiness = None
    if draft is not None:
        readiness = detector.readiness(draft, validate.validate_record(draft, paths.root, config))
    result = detector.evaluate(signals, config.detector, _load_detector_state(paths),
                               now=now or utc_now(), readiness=readiness)
    created, redactions = None, []
    if capture_payload is not None and result.recommend:
        trigger = "manual" if signals.explicit else "threshold"
        record, found = capture.build_draft(capture_payload, paths.root, automation=result.to_automation(trigger),
                                            now=now)
        handoffs.save(record)
        created, redactions = summary_of(record), redactions_of(found)
    _save_detector_state(paths, result.new_state)
    evaluated = result.to_json_dict()
    evaluated.pop("state")
    return {"ok": True, **evaluated, "latest_draft": summary_of(draft) if draft else None,
            "created": created, "redactions": redactions}
