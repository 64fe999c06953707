"""The per-session metrics log: JSON lines of counts, decisions, ids, sources and timings, never prompt text.

Why a log of its own: a session is a story over time (prompt size against the window request by request, each
compaction, counting that degraded) that status and doctor only show as its last state. The engine emits one
line per event; ``baton report`` reads them back.

Where: ``.baton/metrics/<started>--<session>.jsonl`` next to the handoffs, written only in a project that ran
``baton init`` (like handoffs: nothing is created without it). Each file's first line of a segment is the
``session`` header (owner, model, versions), so a rotated file still says whose it is.

Bounded: a segment is rotated at ``SEGMENT_BYTES`` (the previous one kept as ``<file>.1``, the one before
dropped), so a session holds at most ``2 * SEGMENT_BYTES``; a project's logs are retired by age and total size
(``Retention``, from the ``metrics_*`` settings), but never a live one (a gateway serves many sessions at once:
a log this process still holds, or one written within the live window); a line over ``MAX_LINE_BYTES`` is
dropped. Never raises: a failed write is logged once and dropped.

Plain data (Hermes deep-copies engines): a path, a header and counters; the file is opened per event.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
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
MAX_LINE_BYTES = 4096
MIB = 1024 * 1024
FORMAT = 1
GITIGNORE = "*\n"  # local operational logs, never committed with the handoffs


def metrics_dir(data_dir: Path) -> Path:
    return data_dir / METRICS_DIR


def session_key(session_id: str | None) -> str:
    """The id a log is named by: the session id's hash (as records store it), shortened; random without one."""
    hashed = hash_session_id(session_id)
    return hashed.split(":", 1)[1][:12] if hashed else uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class Retention:
    """Which of a project's session logs are retired when a session starts (the ``metrics_*`` settings): those
    last written more than ``max_age_days`` ago, then the oldest while all of them exceed ``max_total_mb``; never
    one this process still holds nor one written within the last ``live_hours`` (another process's live session)."""

    max_age_days: int
    max_total_mb: int
    live_hours: int


Sink = Callable[["MetricsLog", dict[str, Any]], None]
_SINK: Sink | None = None  # the one process-wide reader of every event besides the files (telemetry.py)


def set_sink(sink: Sink | None) -> Sink | None:
    """Install the process's sink (it must never raise); returns the previous one."""
    global _SINK
    previous, _SINK = _SINK, sink
    return previous


_LIVE: weakref.WeakSet[MetricsLog] = weakref.WeakSet()  # this process's logs an engine still holds
_LIVE_LOCK = threading.Lock()


def _hold(log: MetricsLog) -> None:
    if log.path is not None:
        with _LIVE_LOCK:
            _LIVE.add(log)


def live_paths() -> set[str]:
    """The logs this process's engines still hold (a copy of an engine holds its own copy of the log)."""
    with _LIVE_LOCK:
        return {log.path for log in _LIVE if log.path is not None}


class MetricsLog:
    """One session's log; ``emit`` appends an event. A log without a path (no project) drops everything."""

    def __init__(self, path: Path | None = None, header: dict[str, Any] | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.header = dict(header or {})
        self.seq: dict[str, int] = {}  # events emitted per kind: the request / compaction numbers
        self.dropped = 0  # events that could not be written
        self._warned = False
        self._last: dict[str, dict[str, Any]] = {}  # emit_changed: the fields last emitted per kind
        _hold(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copy (Hermes deep-copies an agent's engine) holds the log live too."""
        self.__dict__.update(state)
        _hold(self)

    @classmethod
    def start(cls, project_dir: Path, *, session_id: str | None, header: dict[str, Any], retention: Retention,
              now: datetime | None = None) -> MetricsLog:
        """The log of a session starting now in ``project_dir``'s project; a log that drops everything when
        the project has no ``.baton/`` (or it cannot be read). Older logs are retired by ``retention``."""
        try:
            paths = find_project_root(Path(project_dir))
            if paths is None or paths.legacy:
                return cls(header=header)  # written nowhere; its header still names the model for a sink
            moment = (now or datetime.now(UTC)).astimezone(UTC)
            key = session_key(session_id)
            directory = metrics_dir(paths.data_dir)
            path = directory / f"{moment.strftime('%Y%m%dT%H%M%SZ')}--{key}{SUFFIX}"
            full = {"format": FORMAT, "session": key, "session_hash": hash_session_id(session_id),
                    "started": moment.isoformat().replace("+00:00", "Z"), **header}
            log = cls(path, full)
            retire(directory, retention, now=moment.timestamp())
            return log
        except (OSError, RuntimeError, ValueError) as exc:  # unreadable dir, symlink loop (3.11), NUL in path
            LOGGER.warning("baton metrics log not started type=%s", type(exc).__name__)
            return cls()

    def emit(self, event: str, **fields: Any) -> int:
        """Append one event (numbers, ids, short codes); its number among events of this kind (1, 2, ...).
        The process's sink (``set_sink``: OpenTelemetry, when configured) sees every event, written or not."""
        number = self.seq.get(event, 0) + 1
        self.seq[event] = number
        record = {"ev": event, "n": number, "t": round(time.time(), 3), **fields}
        sink = _SINK
        if sink is not None:
            sink(self, record)
        if self.path is None:
            return number
        try:
            line = _line(record)
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


def _files(log: Path) -> tuple[Path, Path, Path]:
    """A session's files: its segment, the rotated one before it, its report page."""
    return log, log.with_name(log.name + PREVIOUS), log.with_suffix(".html")


def retire(directory: Path, retention: Retention, *, now: float | None = None) -> list[Path]:
    """Retire the logs ``retention`` lets go (with their rotated segments and pages); returns them. A session's
    last write is its newest segment's mtime; the total counts every file of every session."""
    if not directory.is_dir():
        return []
    moment = time.time() if now is None else now
    held = live_paths()
    sessions = []  # (last write, log, bytes)
    for log in directory.glob(f"*{SUFFIX}"):
        stats = [path.stat() if path.is_file() else None for path in _files(log)]
        if stats[0] is not None:
            last = max(st.st_mtime for st in stats[:2] if st is not None)
            sessions.append((last, log, sum(st.st_size for st in stats if st is not None)))
    total = sum(size for _, _, size in sessions)
    live_since, old_before = moment - retention.live_hours * 3600, moment - retention.max_age_days * 86400
    retired = []
    for last, log, size in sorted(sessions, key=lambda s: (s[0], s[1].name)):
        if str(log) in held or last >= live_since:
            continue
        if last < old_before or total > retention.max_total_mb * MIB:
            for path in _files(log):
                path.unlink(missing_ok=True)
            total -= size
            retired.append(log)
    return retired
