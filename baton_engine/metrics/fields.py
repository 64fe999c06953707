"""What each metrics event's fields are (their JSON types), and the check that keeps only what fits.

Why: ``baton report`` reads logs it did not write in this process: another Baton version's, a line torn by a
crash, a hand-edited file. A field of the wrong type is read as absent (None), an unknown event or field is
left out, and the report says what it skipped by count and field NAME, never a value (a value could be anything).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

INT, NUMBER, TEXT, FLAG, MAPPING, LIST = (int,), (int, float), (str,), (bool,), (dict,), (list,)
FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "session": {"format": INT, "session": TEXT, "session_hash": TEXT, "started": TEXT, "owner": MAPPING,
                "model": TEXT, "window": INT, "window_source": TEXT, "baton_version": TEXT, "adapter": TEXT},
    "request": {"prompt": INT, "mode": TEXT, "source": TEXT, "fallback": TEXT, "window": INT, "window_source": TEXT,
                "cap_asked": INT, "cap_sent": INT, "action": TEXT, "short": FLAG, "shortened": FLAG,
                "breaker": TEXT, "ms": NUMBER, "model": TEXT, "provider": TEXT},
    # cache_read None: the route does not report its cache (then uncached is None too)
    "usage": {"request": INT, "reported": INT, "output": INT, "flipped": FLAG, "route_check": MAPPING,
              "cache_read": INT, "cache_write": INT, "uncached": INT},
    "refusal": {"request": INT, "kind": TEXT, "window": INT, "prompt": INT},
    "compaction": {"request": INT, "before": INT, "after": INT, "mode": TEXT, "kept": INT, "stubbed": INT,
                   "recallable": INT, "compacted": INT, "handoff": TEXT, "short_id": TEXT, "status": TEXT,
                   "validation": TEXT, "degraded": TEXT, "brief_tokens": INT, "ms": NUMBER},
    # what Baton's tool schemas add to every request, as the session's status measured it
    "tools": {"offered": LIST, "schema_tokens": INT, "counted_by": TEXT},
    # a prune of answered tool output, committed or declined (reason), with its exact figures
    "prune": {"request": INT, "committed": FLAG, "reason": TEXT, "before": INT, "after": INT, "reclaimed": INT,
              "exact": FLAG, "messages": INT, "first_changed": INT, "net": INT},
}
FIELDS["aux_request"] = FIELDS["request"]
COMMON = {"ev": TEXT, "n": INT, "t": NUMBER}
ROUTE_CHECK = {"verdict": TEXT, "requests_seen": INT, "mismatches": INT, "last_counted": INT, "last_reported": INT,
               "ratio": NUMBER, "calibrated_after_requests": INT, "advice": TEXT, "media_requests": INT,
               "media_ratio": NUMBER, "truncations": INT, "last_truncation": MAPPING}


class Skipped:
    """What a reading left out: unknown events (by count), unknown and wrong-typed fields (by name and count)."""

    def __init__(self) -> None:
        self.unknown_events = 0
        self.unknown_fields: Counter[str] = Counter()
        self.wrong_type: Counter[str] = Counter()

    def as_dict(self) -> dict[str, Any]:
        return {"unknown_events": self.unknown_events, "unknown_fields": dict(sorted(self.unknown_fields.items())),
                "wrong_type_fields": dict(sorted(self.wrong_type.items()))}


def _name(kind: str, key: Any) -> str:
    """A field's name as the report shows it: ``kind.field``, or ``kind.(other)`` for a key no writer uses."""
    shown = key if isinstance(key, str) and key.isidentifier() and len(key) <= 40 else "(other)"
    return f"{kind}.{shown}"


def _fits(value: Any, types: tuple[type, ...]) -> bool:
    if value is None:
        return True
    if isinstance(value, bool) and bool not in types:
        return False  # JSON true is no count
    if isinstance(value, float) and not math.isfinite(value):
        return False  # NaN / Infinity (Python's json reads them) are no figures
    return isinstance(value, types)


def checked(event: dict[str, Any], skipped: Skipped) -> dict[str, Any] | None:
    """``event`` with only its kind's known fields of the right type (a wrong one becomes None); None for an
    event of an unknown kind."""
    kind = event.get("ev")
    known = FIELDS.get(kind) if isinstance(kind, str) else None
    if known is None:
        skipped.unknown_events += 1
        return None
    out: dict[str, Any] = {}
    for key, value in event.items():
        types = COMMON.get(key) or known.get(key)
        if types is None:
            skipped.unknown_fields[_name(kind, key)] += 1
        elif not _fits(value, types):
            skipped.wrong_type[_name(kind, key)] += 1
            out[key] = None
        else:
            out[key] = value
    if isinstance(out.get("route_check"), dict):
        out["route_check"] = _route_check(out["route_check"], skipped)
    return out


def _route_check(check: dict[str, Any], skipped: Skipped) -> dict[str, Any]:
    out = {}
    for key, value in check.items():
        types = ROUTE_CHECK.get(key)
        if types is None:
            continue  # a verdict's further details: the report reads none of them
        if _fits(value, types):
            out[key] = value
        else:
            skipped.wrong_type[_name("usage.route_check", key)] += 1
    return out
