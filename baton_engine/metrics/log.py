"""The per-session metrics log: JSON lines of counts, decisions, ids, sources and timings, never prompt text.

Why a log of its own: a session is a story over time (prompt size against the window request by request, each
compaction, counting that degraded) that status and doctor only show as its last state. The engine emits one
line per event; ``baton report`` reads them back.

Where: ``.baton/metrics/<started>--<session>.jsonl`` next to the handoffs, written only in a project that ran
``baton init`` (like handoffs: nothing is created without it). Each file's first line of a segment is the
``session`` header (owner, model, versions), so a rotated file still says whose it is.

Bounded: a segment is rotated at ``SEGMENT_BYTES`` (the previous one kept as ``<file>.1``, the one before
dropped), so a session holds at most ``2 * SEGMENT_BYTES``; a project keeps the ``KEEP_SESSIONS`` newest
sessions; a line over ``MAX_LINE_BYTES`` is dropped. Never raises: a failed write is logged once and dropped.

Plain data (Hermes deep-copies engines): a path, a header and counters; the file is opened per event.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from baton_engine.handoff.capture import hash_session_id
from baton_engine.handoff.store import find_project_root

LOGGER = logging.getLogger("baton_engine.metrics")
METRICS_DIR = "metrics"
SUFFIX = ".jsonl"
PREVIOUS = ".1"  # the rotated segment: <file>.jsonl.1
SEGMENT_BYTES = 512 * 1024
KEEP_SESSIONS = 20
MAX_LINE_BYTES = 4096
FORMAT = 1
GITIGNORE = "*\n"  # local operational logs, never committed with the handoffs


def metrics_dir(data_dir: Path) -> Path:
    return data_dir / METRICS_DIR


def session_key(session_id: str | None) -> str:
    """The id a log is named by: the session id's hash (as records store it), shortened; random without one."""
    hashed = hash_session_id(session_id)
    return hashed.split(":", 1)[1][:12] if hashed else uuid.uuid4().hex[:12]


class MetricsLog:
    """One session's log; ``emit`` appends an event. A log without a path (no project) drops everything."""

    def __init__(self, path: Path | None = None, header: dict[str, Any] | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.header = dict(header or {})
        self.seq: dict[str, int] = {}  # events emitted per kind: the request / compaction numbers
        self.dropped = 0  # events that could not be written
        self._warned = False
        self._last: dict[str, dict[str, Any]] = {}  # emit_changed: the fields last emitted per kind

    @classmethod
    def start(cls, project_dir: Path, *, session_id: str | None, header: dict[str, Any],
              now: datetime | None = None) -> MetricsLog:
        """The log of a session starting now in ``project_dir``'s project; a log that drops everything when
        the project has no ``.baton/`` (or it cannot be read)."""
        try:
            paths = find_project_root(Path(project_dir))
            if paths is None or paths.legacy:
                return cls()
            moment = (now or datetime.now(UTC)).astimezone(UTC)
            key = session_key(session_id)
            directory = metrics_dir(paths.data_dir)
            path = directory / f"{moment.strftime('%Y%m%dT%H%M%SZ')}--{key}{SUFFIX}"
            full = {"format": FORMAT, "session": key, "session_hash": hash_session_id(session_id),
                    "started": moment.isoformat().replace("+00:00", "Z"), **header}
            log = cls(path, full)
            _retire_old(directory)
            return log
        except (OSError, RuntimeError, ValueError) as exc:  # unreadable dir, symlink loop (3.11), NUL in path
            LOGGER.warning("baton metrics log not started type=%s", type(exc).__name__)
            return cls()

    def emit(self, event: str, **fields: Any) -> int:
        """Append one event (numbers, ids, short codes); its number among events of this kind (1, 2, ...)."""
        number = self.seq.get(event, 0) + 1
        self.seq[event] = number
        if self.path is None:
            return number
        try:
            line = _line({"ev": event, "n": number, "t": round(time.time(), 3), **fields})
            if len(line) > MAX_LINE_BYTES:
                raise ValueError("metrics line too long")
            self._append(Path(self.path), line)
        except (OSError, ValueError, TypeError) as exc:  # write failed, line too long, a key not JSON: dropped
            self.dropped += 1
            if not self._warned:
                self._warned = True
                LOGGER.warning("baton metrics event dropped event=%s type=%s", event, type(exc).__name__)
        return number

    def emit_changed(self, event: str, **fields: Any) -> int | None:
        """``emit`` a state (not an occurrence) only when it differs from the last one of its kind in this log:
        a figure read off many times is logged once. Returns the event's number, None when unchanged."""
        if self._last.get(event) == fields:
            return None
        self._last[event] = dict(fields)
        return self.emit(event, **fields)

    def _append(self, path: Path, line: bytes) -> None:
        """Append under the project's ``.baton/`` only: a symlinked directory or file is refused, never followed
        (a write outside the project is worse than a lost event)."""
        directory = path.parent
        if directory.is_symlink() or directory.parent.is_symlink():
            raise OSError("metrics directory is a symlink")
        if not directory.is_dir():
            directory.mkdir(exist_ok=True)
            (directory / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
        fd = _open_append(path)
        try:
            size = os.fstat(fd).st_size
            if size and size + len(line) > SEGMENT_BYTES:
                os.close(fd)
                fd = -1
                os.replace(path, path.with_name(path.name + PREVIOUS))
                fd, size = _open_append(path), 0
            os.write(fd, (_line({"ev": "session", "n": 0, "t": round(time.time(), 3), **self.header}) if size == 0
                          else b"") + line)
        finally:
            if fd >= 0:
                os.close(fd)


def _open_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)


def _line(event: dict[str, Any]) -> bytes:
    return (json.dumps(event, separators=(",", ":"), sort_keys=False, default=str) + "\n").encode("utf-8")


def _retire_old(directory: Path) -> None:
    """Keep the ``KEEP_SESSIONS - 1`` newest logs (the session starting now is the last one) and their pages."""
    if not directory.is_dir():
        return
    logs = sorted(p for p in directory.glob(f"*{SUFFIX}") if p.is_file())
    for old in logs[:max(len(logs) - (KEEP_SESSIONS - 1), 0)]:
        for path in (old, old.with_name(old.name + PREVIOUS), old.with_suffix(".html")):
            path.unlink(missing_ok=True)
