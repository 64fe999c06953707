"""A session's metrics log read back as the report's data: requests, compactions, prunes, counting-mode changes,
breaker events, refusals, the route's verdict and a summary.

Why derived here and not logged: a mode change or a breaker event is a difference between two requests; the
log states each request once and this module finds the changes, so the two can never disagree. The prompt cache's
figures (sent, read from the cache, uncached, reclaimed) are the log's usage and prune events replayed through the
session's own account (``prompt_cache.CacheBook``), so the report and the engine's status share one definition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton_engine.handoff.capture import hash_session_id
from baton_engine.handoff.model import Owner
from baton_engine.handoff.owner import Scope
from baton_engine.metrics import fields
from baton_engine.metrics.log import PREVIOUS, SUFFIX, metrics_dir
from baton_engine.prompt_cache import CacheBook

MAX_READ_BYTES = 4 * 1024 * 1024  # larger than any log the writer keeps: a bigger file is not one of its logs


@dataclass(frozen=True)
class SessionLog:
    """One session's log file and its header (the first ``session`` line)."""

    path: Path
    header: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name[: -len(SUFFIX)]

    @property
    def owner(self) -> Owner | None:
        owner = self.header.get("owner")
        try:
            return Owner(**owner) if isinstance(owner, dict) else None
        except ValueError:
            return None


def sessions(data_dir: Path, scope: Scope | None = None) -> list[SessionLog]:
    """The project's session logs that ``scope`` sees, oldest first."""
    directory = metrics_dir(data_dir)
    found = []
    for path in sorted(directory.glob(f"*{SUFFIX}")) if directory.is_dir() and not directory.is_symlink() else []:
        if path.is_symlink() or not path.is_file():
            continue
        header = next((e for e in _events(path) if e.get("ev") == "session"), {})
        log = SessionLog(path, header)
        if scope is None or scope.admits_owner(log.owner):
            found.append(log)
    return sorted(found, key=lambda log: (str(log.header.get("started", "")), log.name))  # to the microsecond


def find_session(logs: list[SessionLog], ref: str | None) -> SessionLog | None:
    """The latest log (``ref`` None), else the one whose file name, session key (or a prefix of either) or
    raw session id matches ``ref``; None when none or several match."""
    if not logs:
        return None
    if ref is None:
        return logs[-1]
    wanted = ref.strip()
    hashed = hash_session_id(wanted)
    exact = [log for log in logs if wanted in (log.name, log.header.get("session"))
             or (hashed and log.header.get("session_hash") == hashed)]
    if exact:
        return exact[-1]
    prefixed = [log for log in logs
                if log.name.startswith(wanted) or str(log.header.get("session", "")).startswith(wanted)]
    return prefixed[0] if len(prefixed) == 1 else None


def missing(data_dir: Path, scope: Scope | None, ref: str | None) -> str:
    """Why no log was found, true to what exists: the logs ``scope`` sees, else the ones it hides (their
    platforms and latest names) and how to name one. Why: "none yet" beside another platform's logs misleads."""
    seen = sessions(data_dir, scope)
    what = "no session log" if ref is None else f"no single session log matches {ref!r}"
    if scope is not None and not scope.project_wide:
        what += " for " + " and ".join(part for part in (
            f"platform {scope.platform!r}" if scope.platform else "",
            "this session key" if scope.conversation_id is not None else "") if part)
    where = f"{what} in {metrics_dir(data_dir)}"
    if seen:
        return f"{where}; latest sessions: {', '.join(log.name for log in seen[-5:])}"
    hidden = sessions(data_dir) if scope is not None and not scope.project_wide else []
    if not hidden:
        return f"{where}; latest sessions: none yet (a session writes one as it runs)"
    platforms: dict[str, int] = {}
    for log in hidden:
        name = log.owner.platform if log.owner is not None else "no owner"
        platforms[name] = platforms.get(name, 0) + 1
    counts = ", ".join(f"{name} {n}" for name, n in sorted(platforms.items()))
    return (f"{where}; {len(hidden)} other session log(s) exist ({counts}): name one with `baton report NAME` "
            f"without --platform/--session-key, or filter by its platform; latest: "
            f"{', '.join(log.name for log in hidden[-5:])}")


def events(log: SessionLog) -> tuple[list[dict[str, Any]], int]:
    """The session's events in order (the rotated segment first) and how many lines could not be read."""
    previous = log.path.with_name(log.path.name + PREVIOUS)
    lines: list[dict[str, Any]] = []
    bad = 0
    for path in (previous, log.path):
        if path.is_file() and not path.is_symlink():
            segment = _events(path)
            bad += sum(1 for e in segment if e.get("ev") is None)
            lines += [e for e in segment if e.get("ev") is not None]
    return lines, bad


def _events(path: Path) -> list[dict[str, Any]]:
    if path.stat().st_size > MAX_READ_BYTES:
        return []
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        out.append(event if isinstance(event, dict) else {})
    return out


REQUEST_FIELDS = ("n", "t", "prompt", "mode", "source", "fallback", "window", "window_source", "cap_asked",
                  "cap_sent", "action", "short", "shortened", "breaker", "ms")
TOOLS_FIELDS = tuple(fields.FIELDS["tools"])  # what Baton's tool schemas add to every request
COMPACTION_FIELDS = ("n", "t", "request", "before", "after", "mode", "kept", "stubbed", "recallable", "compacted",
                     "handoff", "short_id", "status", "validation", "degraded", "brief_tokens", "ms")
PRUNE_FIELDS = ("n", "t", *fields.FIELDS["prune"])


def report_data(log: SessionLog) -> dict[str, Any]:
    """Everything the page and ``--json`` show, from the log alone; what did not fit (``fields``) is skipped and
    said (``skipped``: counts and field names)."""
    raw, unreadable = events(log)
    skipped = fields.Skipped()
    lines = [event for event in (fields.checked(line, skipped) for line in raw) if event is not None]
    header = fields.checked({**log.header, "ev": "session"}, fields.Skipped()) or {}  # counted with its line
    requests: list[dict[str, Any]] = []
    by_number: dict[int, dict[str, Any]] = {}
    auxiliary, compactions, refusals, checks, usages, prunes = [], [], [], [], [], []
    tools: dict[str, Any] | None = None
    for event in lines:
        kind = event.get("ev")
        if kind == "request":
            entry = {key: event.get(key) for key in REQUEST_FIELDS} | {"reported": None}
            requests.append(entry)
            by_number[int(event.get("n") or 0)] = entry
        elif kind == "aux_request":
            auxiliary.append({key: event.get(key) for key in REQUEST_FIELDS})
        elif kind == "usage":
            entry = by_number.get(int(event.get("request") or 0))
            if entry is not None:
                entry["reported"] = event.get("reported")
            checks.append({"request": event.get("request"), **(event.get("route_check") or {})})
            usages.append(event)
        elif kind == "compaction":
            compactions.append({key: event.get(key) for key in COMPACTION_FIELDS})
        elif kind == "prune":
            prunes.append({key: event.get(key) for key in PRUNE_FIELDS})
        elif kind == "refusal":
            refusals.append({key: event.get(key) for key in ("request", "t", "kind", "window", "prompt")})
        elif kind == "tools":  # the latest figure the session's status measured
            tools = {key: event.get(key) for key in TOOLS_FIELDS}
    first = requests[0]["n"] if requests else None
    data = {
        "session": header.get("session"), "log": str(log.path), "header": header,
        "requests": requests, "auxiliary_requests": auxiliary, "compactions": compactions, "prunes": prunes,
        "mode_changes": _changes(requests, "mode", reason="fallback"),
        "breaker_events": _changes(requests, "breaker"),
        "refusals": refusals, "route_check": checks[-1] if checks else None, "tools": tools,
        "earlier_requests_rotated_out": (first - 1) if isinstance(first, int) and first > 1 else 0,
        "unreadable_lines": unreadable, "skipped": skipped.as_dict(),
    }
    data["summary"] = _summary(data) | prompt_cache_summary(usages, prunes)
    return data


def _changes(requests: list[dict[str, Any]], key: str, *, reason: str | None = None) -> list[dict[str, Any]]:
    """Each request whose ``key`` differs from the request before it (the first request sets the start)."""
    changes = []
    for before, after in zip(requests, requests[1:], strict=False):
        if before.get(key) != after.get(key):
            change = {"request": after["n"], "from": before.get(key), "to": after.get(key)}
            if reason is not None:
                change["reason"] = after.get(reason)
            changes.append(change)
    return changes


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    requests = data["requests"]
    prompts = [(r["prompt"], r["window"]) for r in requests if isinstance(r.get("prompt"), int) and r.get("window")]
    peak = max(prompts, key=lambda pw: pw[0] / pw[1], default=None)
    compared = [r for r in requests if isinstance(r.get("reported"), int) and isinstance(r.get("prompt"), int)]
    worst = max(compared, key=lambda r: abs(r["reported"] - r["prompt"]), default=None)
    times = [r["t"] for r in requests if isinstance(r.get("t"), (int, float))]
    check = data["route_check"] or {}
    return {
        "requests": len(requests), "auxiliary_requests": len(data["auxiliary_requests"]),
        "compactions": len(data["compactions"]),
        "handoffs": sum(1 for c in data["compactions"] if c.get("handoff")),
        "degraded_compactions": sum(1 for c in data["compactions"] if c.get("degraded")),
        "peak_prompt": peak[0] if peak else None, "peak_window": peak[1] if peak else None,
        "peak_share": round(peak[0] / peak[1], 4) if peak else None,
        "over_window": sum(1 for r in requests if isinstance(r.get("prompt"), int) and r.get("window")
                           and r["prompt"] + (r.get("cap_sent") or 0) > r["window"]),
        "caps_lowered": sum(1 for r in requests if r.get("action") == "lower_cap_to"),
        "short_caps": sum(1 for r in requests if r.get("short")),
        "requests_shortened": sum(1 for r in requests if r.get("shortened")),
        "counting_mode": requests[-1].get("mode") if requests else None,
        "mode_changes": len(data["mode_changes"]), "breaker_events": len(data["breaker_events"]),
        "refusals": len(data["refusals"]), "reported_requests": len(compared),
        "largest_count_gap": (worst["reported"] - worst["prompt"]) if worst else None,
        "route_verdict": check.get("verdict"), "route_ratio": check.get("ratio"),
        "tool_schema_tokens": (data["tools"] or {}).get("schema_tokens"),
        "duration_seconds": round(times[-1] - times[0], 1) if len(times) > 1 else 0.0,
    }


def prompt_cache_summary(usages: list[dict[str, Any]], prunes: list[dict[str, Any]]) -> dict[str, Any]:
    """The session's prompts as its provider read them and what reclamation took out: the usage and prune events
    replayed through ``CacheBook`` (the figures ``get_status()["reclaim"]`` shows). A figure the log cannot give is
    None, not 0: the cache's when no response reported it (the route does not say, or a Baton before issue 44), the
    prompt's when no response reported a size, the reclaimed tokens when no prune was logged, the exactness when
    none committed."""
    book = CacheBook()
    for usage in usages:
        if isinstance(usage.get("reported"), int):
            book.observe(usage["reported"], usage.get("cache_read"), usage.get("cache_write") or 0)
    for prune in prunes:
        if prune.get("committed") is True:  # a figure missing from a committed prune is no exact count
            reclaimed = prune.get("reclaimed")
            book.committed(reclaimed or 0, exact=prune.get("exact") is True and isinstance(reclaimed, int))
        elif prune.get("committed") is False:
            book.declined[prune.get("reason") or "unknown"] += 1
    figures = book.summary()
    reported, cache = book.responses > 0, book.cache_reported > 0
    return {
        "prompt_tokens": figures["prompt_tokens"] if reported else None,
        "cache_read_tokens": figures["cache_read_tokens"] if cache else None,
        "cache_write_tokens": figures["cache_write_tokens"] if cache else None,
        "uncached_prompt_tokens": figures["uncached_prompt_tokens"] if cache else None,
        "responses": figures["responses"], "responses_reporting_cache": figures["responses_reporting_cache"],
        "reclaimed_tokens": figures["reclaimed_tokens"] if prunes else None,
        "reclaimed_exact": figures["reclaimed_exact"] if book.prunes_committed else None,
        "prunes_committed": figures["prunes_committed"], "prunes_declined": figures["prunes_declined"],
    }


def latest_route_check(data_dir: Path, scope: Scope | None = None) -> dict[str, Any] | None:
    """The route verdict (``RouteCheck`` state after the last reported response: verdict, counted vs reported,
    ratio) of the latest session ``scope`` sees that has one, for ``baton doctor``; None when no session has."""
    for log in reversed(sessions(data_dir, scope)):
        read = (fields.checked(e, fields.Skipped()) for e in events(log)[0])
        checks = [e for e in read if e is not None and e.get("ev") == "usage" and isinstance(e.get("route_check"), dict)]
        if checks:
            return {"session": log.header.get("session"), "request": checks[-1].get("request"),
                    **checks[-1]["route_check"]}
    return None
