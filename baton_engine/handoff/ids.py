"""Identifiers and timestamps for handoff records.

Why one module: every writer (capture, lineage, store, CLI) must produce the same formats, so
the formats live in one place.

- Record ids are UUID v7 (time-ordered, from the ``uuid6`` package), lower-case canonical form.
  The package keeps ids strictly increasing by bumping the millisecond field when more than one id
  is made per millisecond, so under bursts the embedded time may run a little ahead of the clock.
- ``derived_record_id`` is the deterministic variant (the engine's compaction cycle): same v7 layout
  and millisecond time, but the 74 "random" bits come from a sha256 of the time and the record's
  content, so the same input at the same clock gives the same id and any other content or time a
  different one. Ids derived within one millisecond sort by hash, not by creation order.
- Timestamps are written in ONE format: RFC 3339 UTC with whole seconds, ``YYYY-MM-DDTHH:MM:SSZ``.
  ``parse_timestamp`` also reads fractional seconds and numeric offsets (other writers), always
  returning an aware UTC datetime.
- Structured item ids are ``<LETTER>-<3 digits>``: D decision, E evidence, O open item,
  F failed attempt; ``next_id`` hands out the next free number for a prefix.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import uuid6

from baton_engine.errors import UserInputError

DECISION = "D"
EVIDENCE = "E"
OPEN_ITEM = "O"
FAILED_ATTEMPT = "F"
STRUCTURED_PREFIXES = (DECISION, EVIDENCE, OPEN_ITEM, FAILED_ATTEMPT)
STRUCTURED_ID_RE = re.compile(r"^([A-Z])-(\d{3})$")
MAX_STRUCTURED_NUMBER = 999

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def new_record_id() -> str:
    """A fresh UUID v7 (monotonic within the process), canonical lower-case string."""
    return str(uuid6.uuid7())


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_MILLIS = (1 << 48) - 1


def derived_record_id(content: bytes, moment: datetime) -> str:
    """A UUID v7 at ``moment``'s millisecond whose 74 random bits are sha256(millis + ``content``)."""
    if not isinstance(content, bytes):
        raise UserInputError(f"derived_record_id() takes the record's canonical bytes, not {type(content).__name__}")
    if moment.tzinfo is None:
        raise UserInputError("timestamp has no timezone; pass an aware datetime (UTC)")
    millis = (moment - _EPOCH) // timedelta(milliseconds=1)
    if not 0 <= millis <= _MAX_MILLIS:
        raise UserInputError(f"{moment.isoformat()} is outside the UUID v7 time range (1970 to year 10889)")
    digest = hashlib.sha256(millis.to_bytes(6, "big") + content).digest()
    random_bits = int.from_bytes(digest[:10], "big") >> 6  # 74 bits: 12 for rand_a, 62 for rand_b
    value = (millis << 80) | (0x7 << 76) | ((random_bits >> 62) << 64) | (0b10 << 62) | (random_bits & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def is_uuid7(value: object) -> bool:
    """True for a canonical lower-case UUID string of version 7 and the RFC 4122 variant."""
    if not isinstance(value, str) or not _UUID_RE.match(value):
        return False
    parsed = uuid.UUID(value)
    return parsed.version == 7 and parsed.variant == uuid.RFC_4122


def uuid7_datetime(record_id: str) -> datetime:
    """The millisecond creation time embedded in a UUID v7 (UTC)."""
    if not is_uuid7(record_id):
        raise UserInputError(f"not a UUID v7 record id: {record_id!r}")
    millis = uuid.UUID(record_id).int >> 80
    return _EPOCH + timedelta(milliseconds=millis)  # exact: float seconds lose the millisecond after ~2100


def utc_now() -> datetime:
    """Now, aware UTC, truncated to whole seconds (the written precision)."""
    return datetime.now(UTC).replace(microsecond=0)


def format_timestamp(moment: datetime | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ``; naive datetimes are refused (they would silently mean local time)."""
    moment = utc_now() if moment is None else moment
    if moment.tzinfo is None:
        raise UserInputError("timestamp has no timezone; pass an aware datetime (UTC)")
    utc = moment.astimezone(UTC)
    # Explicit fields: strftime("%Y") does not zero-pad years before 1000 on glibc.
    return f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"


def now_timestamp() -> str:
    """The current time in the written format."""
    return format_timestamp(utc_now())


def parse_timestamp(text: str) -> datetime:
    """Read an RFC 3339 timestamp (``Z`` or offset, optional fraction) as aware UTC."""
    if not isinstance(text, str) or "T" not in text.upper():
        raise UserInputError(f"not an RFC 3339 timestamp: {text!r} (expected YYYY-MM-DDTHH:MM:SSZ)")
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise UserInputError(f"not an RFC 3339 timestamp: {text!r} (expected YYYY-MM-DDTHH:MM:SSZ)") from None
    if moment.tzinfo is None:
        raise UserInputError(f"timestamp {text!r} has no timezone; RFC 3339 needs Z or an offset")
    return moment.astimezone(UTC)


def file_stamp(timestamp: str | datetime) -> str:
    """``YYYYMMDDTHHMMSSZ`` for store file names, from a datetime or a written timestamp."""
    moment = parse_timestamp(timestamp) if isinstance(timestamp, str) else timestamp
    if moment.tzinfo is None:
        raise UserInputError("timestamp has no timezone; pass an aware datetime (UTC)")
    return format_timestamp(moment).replace("-", "").replace(":", "")


def next_id(prefix: str, existing_ids: Iterable[str]) -> str:
    """The next free ``<prefix>-###`` after the highest number already used with that prefix.

    Ids with other prefixes or other shapes are ignored, so a mixed list can be passed.
    """
    if not isinstance(prefix, str) or not re.fullmatch(r"[A-Z]", prefix):
        raise UserInputError(f"structured id prefix must be one upper-case letter (D, E, O, F), got {prefix!r}")
    highest = 0
    for existing in existing_ids:
        match = STRUCTURED_ID_RE.match(existing) if isinstance(existing, str) else None
        if match and match.group(1) == prefix:
            highest = max(highest, int(match.group(2)))
    if highest >= MAX_STRUCTURED_NUMBER:
        raise UserInputError(
            f"no free {prefix}-### id left ({prefix}-{MAX_STRUCTURED_NUMBER} is used); "
            "split the work into a new handoff with `continue`"
        )
    return f"{prefix}-{highest + 1:03d}"


def project_id(root: Path) -> str:
    """Stable project identity: ``sha256:`` of the resolved root path (no path text leaves the machine)."""
    canonical = str(Path(root).resolve()).encode("utf-8", "surrogateescape")
    return "sha256:" + hashlib.sha256(canonical).hexdigest()
