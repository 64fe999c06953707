"""Handoff record v0.1 as pydantic models.

Every object keeps unknown fields (``extra="allow"``) so records written by newer or other
implementations round-trip unchanged. Serialise with ``record.to_json_dict()``: it emits
the ``$schema`` alias and keeps explicit nulls, as the published schema requires.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from baton_engine.errors import ConflictError
from baton_engine.handoff.ids import now_timestamp

SCHEMA_ID = "https://baton.dev/schemas/handoff/v0.1.json"
LEGACY_SCHEMA_ID = "https://threadline.dev/schemas/handoff/v0.1.json"
ACCEPTED_SCHEMA_IDS = (SCHEMA_ID, LEGACY_SCHEMA_ID)
SCHEMA_VERSION = "0.1"
STRUCTURED_ID_PATTERN = r"^[A-Z]-\d{3}$"
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Changed by a status transition; everything else is content, frozen once a record is ready.
TRANSITION_FIELDS = frozenset({"status", "updated_at", "status_history"})

Status = Literal["draft", "validated", "ready", "resumed", "superseded", "archived"]
Flag = Literal["invalid", "conflicted"]
Harness = Literal["codex", "claude-code", "cursor", "gemini-cli", "generic"]
ActorType = Literal["agent", "human", "mixed"]
ArtifactRole = Literal["modified", "created", "read", "generated"]
EvidenceType = Literal["command", "test", "file", "commit", "url", "human"]
Priority = Literal["high", "medium", "low"]
CheckStatus = Literal["pass", "warn", "fail", "skipped"]
ValidationStatus = Literal["pass", "warn", "fail", "not_run"]
Relation = Literal["root", "continue", "fork", "merge", "amend"]
Trigger = Literal["manual", "threshold", "hook", "timeout", "pre_compaction"]

# Allowed status moves. ``ready`` and later are immutable in content: a change is a new record.
STATUS_TRANSITIONS: dict[str, frozenset[str]] = {
    "draft": frozenset({"validated", "ready", "archived"}),
    "validated": frozenset({"draft", "ready", "archived"}),
    "ready": frozenset({"resumed", "superseded", "archived"}),
    "resumed": frozenset({"superseded", "archived"}),
    "superseded": frozenset({"archived"}),
    "archived": frozenset(),
}
IMMUTABLE_STATUSES = frozenset({"ready", "resumed", "superseded", "archived"})


class _Open(BaseModel):
    """Base: unknown fields preserved, assignment validated."""

    model_config = ConfigDict(
        extra="allow",
        validate_assignment=True,
        populate_by_name=True,
        # The generated schema lists every written key as required, like the published one.
        json_schema_serialization_defaults_required=True,
    )


class Repository(_Open):
    vcs: str | None = None
    remote_hint: str | None = None
    head: str | None = None
    dirty: bool | None = None


class Project(_Open):
    id: str = Field(min_length=1)
    root_hint: str
    repository: Repository | None = None


class Actor(_Open):
    type: ActorType
    name: str | None = None


class Owner(_Open):
    """Baton extension (``origin.owner``): the platform and the hashed gateway session key (the conversation)
    a handoff belongs to; ``conversation_id`` is None for a local session (see ``handoff/owner.py``)."""

    platform: str = Field(min_length=1)
    conversation_id: str | None = None


class Origin(_Open):
    harness: Harness = "generic"
    adapter_version: str | None = None
    session_id: str | None = None
    model: str | None = None
    actor: Actor | None = None
    owner: Owner | None = None  # Baton extension (the reference schema allows extra origin fields)


class Work(_Open):
    title: str = Field(min_length=1)
    objective: str = Field(min_length=1)
    scope: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    definition_of_done: list[str] = Field(default_factory=list)


class Summary(_Open):
    completed: list[str] = Field(default_factory=list)
    current_state: str = Field(min_length=1)
    why_it_matters: str | None = None


class Decision(_Open):
    id: str = Field(pattern=STRUCTURED_ID_PATTERN)
    decision: str = Field(min_length=1)
    rationale: str | None = None
    alternatives_considered: list[str] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)
    made_at: str


class Artifact(_Open):
    path: str = Field(min_length=1)
    role: ArtifactRole
    description: str | None = None
    revision: str | None = None
    content_hash: str | None = None
    sensitive: bool = False


class Evidence(_Open):
    id: str = Field(pattern=STRUCTURED_ID_PATTERN)
    type: EvidenceType
    claim: str = Field(min_length=1)
    ref: str | None = None
    captured_at: str
    result: str | None = None
    digest: str | None = None


class OpenItem(_Open):
    id: str = Field(pattern=STRUCTURED_ID_PATTERN)
    priority: Priority = "medium"
    description: str = Field(min_length=1)
    suggested_action: str | None = None
    blocked_by: list[str] = Field(default_factory=list)
    acceptance_check: str | None = None


class FailedAttempt(_Open):
    """Negative knowledge (Baton extension, id ``F-###``): tried, failed, must not be retried blindly."""

    id: str = Field(pattern=STRUCTURED_ID_PATTERN)
    attempt: str = Field(min_length=1)
    outcome: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)
    recorded_at: str


class Risk(_Open):
    description: str = Field(min_length=1)
    severity: Priority = "medium"
    mitigation: str | None = None


class Check(_Open):
    name: str = Field(min_length=1)
    status: CheckStatus
    detail: str = ""


class Freshness(_Open):
    git_head_at_capture: str | None = None
    git_head_now: str | None = None
    stale: bool = False


class Validation(_Open):
    status: ValidationStatus = "not_run"
    validated_at: str | None = None
    checks: list[Check] = Field(default_factory=list)
    freshness: Freshness | None = None


class Lineage(_Open):
    parents: list[str] = Field(default_factory=list)
    relation: Relation = "root"
    branch_label: str | None = None
    merge_basis: list[str] = Field(default_factory=list)


class Automation(_Open):
    trigger: Trigger = "manual"
    score: float | None = Field(default=None, ge=0, le=1)
    reasons: list[str] = Field(default_factory=list)


class Redaction(_Open):
    field: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    replacement: str = "[REDACTED]"


# A section an author writes is part of the capture payload once its part has an input model
# (``handoff.capture.section_input``); every other field is filled in by capture.
class HandoffRecord(_Open):
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    schema_version: str = SCHEMA_VERSION
    id: str
    kind: Literal["handoff"] = "handoff"
    status: Status = "draft"
    flags: list[Flag] = Field(default_factory=list)
    created_at: str
    updated_at: str
    project: Project
    origin: Origin = Field(default_factory=Origin)
    work: Work
    summary: Summary
    decisions: list[Decision] = Field(default_factory=list)
    artifacts: list[Artifact] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    open_items: list[OpenItem] = Field(default_factory=list)
    risks: list[Risk] = Field(default_factory=list)
    validation: Validation = Field(default_factory=Validation)
    lineage: Lineage = Field(default_factory=Lineage)
    automation: Automation = Field(default_factory=Automation)
    redactions: list[Redaction] = Field(default_factory=list)
    # Baton extension (allowed by the reference schema's additionalProperties).
    failed_attempts: list[FailedAttempt] = Field(default_factory=list)

    @field_validator("schema_")
    @classmethod
    def _known_schema(cls, value: str) -> str:
        if value not in ACCEPTED_SCHEMA_IDS:
            raise ValueError(f"unknown $schema {value!r}; expected one of {', '.join(ACCEPTED_SCHEMA_IDS)}")
        return value

    @field_validator("id")
    @classmethod
    def _uuid_id(cls, value: str) -> str:
        if not _UUID_RE.match(value):
            raise ValueError("id must be a UUID (baton writes UUID v7), e.g. 0190f5c2-7b1e-7c3a-9d4e-2f6a8b0c1d2e")
        return value

    @field_validator("created_at", "updated_at")
    @classmethod
    def _rfc3339(cls, value: str) -> str:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is None or "T" not in value.upper() or moment.tzinfo is None:
            raise ValueError("timestamp must be RFC 3339 with a timezone, e.g. 2026-01-31T12:00:00Z")
        return value

    @property
    def short_id(self) -> str:
        """Last 8 hex digits of the UUID: random bits in v7, so distinct for records made in one millisecond."""
        return self.id.replace("-", "")[-8:]

    def to_json_dict(self) -> dict[str, Any]:
        """The on-disk form: ``$schema`` alias, nulls kept, the baton schema id written."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=False)
        data["$schema"] = SCHEMA_ID
        return data


def content_view(record: HandoffRecord) -> dict[str, Any]:
    """The on-disk form without the fields a status transition may change (immutability checks)."""
    data = record.to_json_dict()
    for name in TRANSITION_FIELDS:
        data.pop(name, None)
    return data


def transition(
    record: HandoffRecord, new_status: str, *, at: str | None = None, reason: str | None = None
) -> HandoffRecord:
    """A copy of ``record`` moved to ``new_status`` per ``STATUS_TRANSITIONS``; the input is untouched.

    ``at`` (RFC 3339, default: now) becomes ``updated_at``; the move is appended to the Baton
    extension list ``status_history`` ({from, to, at, reason}) so later readers can audit it.
    Raises ConflictError naming the allowed moves when the move is illegal.
    """
    allowed = STATUS_TRANSITIONS.get(record.status, frozenset())
    if new_status not in allowed:
        options = ", ".join(sorted(allowed)) or "none (archived is final)"
        raise ConflictError(
            f"handoff {record.short_id} is {record.status!r}; it cannot move to {new_status!r} "
            f"(allowed: {options})"
        )
    at = now_timestamp() if at is None else at
    history = list(getattr(record, "status_history", None) or [])
    history.append({"from": record.status, "to": new_status, "at": at, "reason": reason})
    data = record.to_json_dict()
    data.update(status=new_status, updated_at=at, status_history=history)
    return HandoffRecord.model_validate(data)
