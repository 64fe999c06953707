"""Capture: turn a user/agent payload into a redacted draft handoff record.

Why a separate step: the payload is untrusted input (flags, ``--input file.json``, an engine tool call), so its
shape is checked here with errors that name the offending field, and everything the record needs but the author
should not have to type (ids, timestamps, project identity, repository state, artifact hashes) is filled in from
the project itself. Redaction runs last, so nothing returned here can carry a secret to disk.

Payload shape (every key optional except a title, an objective and a current state)::

    {"title", "objective", "scope": [...], "constraints": [...], "definition_of_done": [...]}  # or under "work"
    {"summary": {"completed": [...], "current_state", "why_it_matters"}}  # or "state"/"current_state"/"completed"
    "decisions": [{"decision", "rationale", "alternatives_considered", "evidence_ids", "id"?}]
    "evidence": [{"type", "claim", "ref", "result" | "output", "id"?}]   # output -> digest + bounded summary
    "failed_attempts": [{"attempt", "outcome", "evidence_ids", "id"?}]
    "open_items": [{"description", "priority", "suggested_action", "blocked_by", "acceptance_check", "id"?}]
    "risks": [{"description", "severity", "mitigation"}]
    "artifacts": [{"path", "role", "description", "sensitive"}]       # revision + content hash are filled in
    "lineage": {"parents": [...], "relation", "branch_label", "merge_basis": [...]}
    "origin": {"harness", "adapter_version", "session_id", "model", "actor": {"type", "name"},
               "owner": {"platform", "conversation_id"}}                  # conversation_id stored hashed
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from baton_engine.errors import ConflictError, UserInputError
from baton_engine.handoff import gitinfo, ids, redact
from baton_engine.handoff.model import (
    IMMUTABLE_STATUSES,
    Actor,
    Artifact,
    ArtifactRole,
    Automation,
    Decision,
    Evidence,
    EvidenceType,
    FailedAttempt,
    HandoffRecord,
    Lineage,
    OpenItem,
    Origin,
    Owner,
    Priority,
    Redaction,
    Risk,
    Summary,
    Work,
)

ItemKind = Literal["decision", "evidence", "failed_attempt", "open_item"]
_InputT = TypeVar("_InputT", bound=BaseModel)
EVIDENCE_SUMMARY_CHARS = 500
SESSION_HASH_HEX = 16


_STRICT = ConfigDict(extra="forbid", str_strip_whitespace=True, validate_assignment=False)


class _Strict(BaseModel):
    """Input models refuse unknown keys so a typo is an error, not silently dropped data."""

    model_config = _STRICT


# Record part model -> its input model, in the order the payload asks for the sections (``section_input``).
SECTION_INPUTS: dict[type[BaseModel], type[BaseModel]] = {}


def section_input(part: type[BaseModel]) -> Callable[[type[_InputT]], type[_InputT]]:
    """Declare the decorated class the input model of the record sections typed ``part`` (or ``list[part]``):
    that makes those sections part of the capture payload (see ``CapturePayload``)."""

    def register(input_model: type[_InputT]) -> type[_InputT]:
        SECTION_INPUTS[part] = input_model
        return input_model

    return register


@section_input(Work)
class WorkIn(Work):
    """The record's ``work`` fields (one definition, ``model.Work``), strict as input."""

    model_config = _STRICT


@section_input(Summary)
class SummaryIn(Summary):
    """The record's ``summary`` fields (one definition, ``model.Summary``), strict as input."""

    model_config = _STRICT


@section_input(Decision)
class DecisionIn(_Strict):
    id: str | None = Field(default=None, description="item id (assigned when omitted)")
    decision: str = Field(min_length=1, description="decision: what was decided")
    rationale: str | None = Field(default=None, description="decision: why")
    alternatives_considered: list[str] = Field(default_factory=list, description="decision: alternatives weighed")
    evidence_ids: list[str] = Field(default_factory=list, description="supporting evidence ids (E-###)")
    made_at: str | None = Field(default=None, description="decision: when (default: now)")


@section_input(Evidence)
class EvidenceIn(_Strict):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)  # output is digested byte-exact

    id: str | None = Field(default=None, description="item id (assigned when omitted)")
    type: EvidenceType = Field(default="human", description="evidence: what kind of source")
    claim: str = Field(min_length=1, description="evidence: what the evidence shows")
    ref: str | None = Field(default=None, description="evidence: command, file, commit or URL")
    result: str | None = Field(default=None, description="evidence: short result, e.g. '42 passed'")
    output: str | None = Field(default=None, description="evidence: full output (kept as a digest + summary)")
    captured_at: str | None = Field(default=None, description="evidence: when (default: now)")


@section_input(FailedAttempt)
class FailedAttemptIn(_Strict):
    id: str | None = Field(default=None, description="item id (assigned when omitted)")
    attempt: str = Field(min_length=1, description="failed_attempt: what was tried")
    outcome: str | None = Field(default=None, description="failed_attempt: why it failed")
    evidence_ids: list[str] = Field(default_factory=list, description="supporting evidence ids (E-###)")
    recorded_at: str | None = Field(default=None, description="failed_attempt: when (default: now)")


@section_input(OpenItem)
class OpenItemIn(_Strict):
    id: str | None = Field(default=None, description="item id (assigned when omitted)")
    priority: Priority = Field(default="medium", description="open_item: urgency")
    description: str = Field(min_length=1, description="open_item: what remains")
    suggested_action: str | None = Field(default=None, description="open_item: the next action")
    blocked_by: list[str] = Field(default_factory=list, description="open_item: ids of items blocking it")
    acceptance_check: str | None = Field(default=None, description="open_item: how to tell it is done")


@section_input(Risk)
class RiskIn(Risk):
    """``model.Risk``, strict as input."""

    model_config = _STRICT


@section_input(Artifact)
class ArtifactIn(_Strict):
    path: str = Field(min_length=1)
    role: ArtifactRole = "modified"
    description: str | None = None
    sensitive: bool = False


@section_input(Lineage)
class LineageIn(Lineage):
    """``model.Lineage``, strict as input."""

    model_config = _STRICT


class ActorIn(Actor):
    """``model.Actor``, strict as input."""

    model_config = _STRICT


class OwnerIn(Owner):
    """``model.Owner``, strict as input."""

    model_config = _STRICT


@section_input(Origin)
class OriginIn(Origin):
    """``model.Origin``, strict as input (its actor and owner too)."""

    model_config = _STRICT

    actor: ActorIn | None = None
    owner: OwnerIn | None = None


def _section_type(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """A record field's part model and whether the field is a list of it (``(None, False)``: not a section)."""
    is_list = get_origin(annotation) is list
    part = get_args(annotation)[0] if is_list else annotation
    return (part, is_list) if isinstance(part, type) and issubclass(part, BaseModel) else (None, False)


def payload_fields(record: type[BaseModel] = HandoffRecord) -> dict[str, Any]:
    """The capture payload's fields: every section of ``record`` whose part has an input model, typed by that
    input model, required where the record requires it (else empty: ``[]`` or the input model's defaults), in
    ``SECTION_INPUTS`` order. The record fields without one (ids, timestamps, project, validation, automation,
    redactions) are filled in by ``build_draft``."""
    sections: dict[type[BaseModel], list[tuple[str, bool, bool]]] = {}
    for name, field in record.model_fields.items():
        part, is_list = _section_type(field.annotation)
        if part is not None:
            sections.setdefault(part, []).append((name, is_list, field.is_required()))
    fields: dict[str, Any] = {}
    for part, input_model in SECTION_INPUTS.items():
        for name, is_list, required in sections[part]:
            kind = list[input_model] if is_list else input_model  # type: ignore[valid-type]
            default = Field(default_factory=list if is_list else input_model)
            fields[name] = (kind, ...) if required else (kind, default)
    return fields


# The capture payload: the record's authored sections (one definition: ``HandoffRecord`` and the input models).
CapturePayload = create_model("CapturePayload", __base__=_Strict, __module__=__name__, **payload_fields())


ITEM_MODELS: dict[str, type[_Strict]] = {
    "decision": DecisionIn,
    "evidence": EvidenceIn,
    "failed_attempt": FailedAttemptIn,
    "open_item": OpenItemIn,
}
ITEM_KINDS: tuple[str, ...] = tuple(ITEM_MODELS)
ITEM_FIELDS = {"decision": "decisions", "evidence": "evidence", "failed_attempt": "failed_attempts",
               "open_item": "open_items"}
_ID_PREFIX = {"decision": "D", "evidence": "E", "failed_attempt": "F", "open_item": "O"}
_WORK_KEYS = ("title", "objective", "scope", "constraints", "definition_of_done")
_SUMMARY_ALIASES = {"state": "current_state", "current_state": "current_state", "completed": "completed",
                    "why_it_matters": "why_it_matters"}


def _field_path(loc: tuple[Any, ...]) -> str:
    """pydantic loc -> the record's field path style, e.g. ``evidence[0].claim``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "payload"


# The CLI flag for a payload field, so an error message says what to type.
_FLAG_HINTS = {"work.title": "--title", "work.objective": "--objective", "summary.current_state": "--state"}


def _input_error(exc: ValidationError, what: str) -> UserInputError:
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        path = _field_path(tuple(err["loc"]))
        hint = f" (flag {_FLAG_HINTS[path]})" if path in _FLAG_HINTS else ""
        problems.append(f"{path}{hint}: {err['msg']}")
    return UserInputError(f"invalid {what}: " + "; ".join(problems))


def normalize_payload(payload: Any) -> dict[str, Any]:
    """Accept the flat CLI-friendly form (title/objective/state at top level) as well as the record's nesting."""
    if not isinstance(payload, dict):
        raise UserInputError(
            f"invalid capture payload: expected a JSON object, got {type(payload).__name__}")
    data = dict(payload)
    work = dict(data.pop("work", None) or {})
    for key in _WORK_KEYS:
        if key in data:
            work.setdefault(key, data.pop(key))
    if "dod" in data:
        work.setdefault("definition_of_done", data.pop("dod"))
    summary = data.pop("summary", None)
    summary = dict(summary) if isinstance(summary, dict) else ({"current_state": summary} if summary else {})
    for alias, key in _SUMMARY_ALIASES.items():
        if alias in data:
            summary.setdefault(key, data.pop(alias))
    data["work"] = work
    data["summary"] = summary
    return data


def parse_payload(payload: Any) -> CapturePayload:
    """Validate the payload shape; UserInputError names every bad field."""
    try:
        return CapturePayload.model_validate(normalize_payload(payload))
    except ValidationError as exc:
        raise _input_error(exc, "capture payload") from None


def _check_kind(kind: str) -> None:
    if kind not in ITEM_MODELS:
        raise UserInputError(f"unknown item kind {kind!r}; use one of {', '.join(ITEM_MODELS)}")


def parse_item(kind: str, item: Any) -> _Strict:
    """One decision / evidence / failed attempt / open item, validated by its model (the ONE definition of its
    fields: the CLI's ``baton record``, the engine's ``baton_capture`` and MCP's ``handoff_capture`` all use it)."""
    _check_kind(kind)
    if not isinstance(item, dict):
        raise UserInputError(f"invalid {kind}: expected a JSON object, got {type(item).__name__}")
    try:
        return ITEM_MODELS[kind].model_validate(item)
    except ValidationError as exc:
        raise _input_error(exc, kind.replace("_", " ")) from None


def _flat_property(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic field schema as a plain tool-schema property: no title, ``X | None`` as ``X``."""
    schema = {key: value for key, value in schema.items() if key not in ("title", "default")}
    branches = [branch for branch in schema.pop("anyOf", []) if branch.get("type") != "null"]
    if len(branches) == 1:
        schema = {**branches[0], **schema}
    return schema


def item_properties() -> dict[str, dict[str, Any]]:
    """Every item kind's fields as flat JSON-schema properties (shared names, e.g. ``evidence_ids``, once)."""
    properties: dict[str, dict[str, Any]] = {}
    for model in ITEM_MODELS.values():
        for name, schema in model.model_json_schema()["properties"].items():
            properties.setdefault(name, _flat_property(schema))
    return properties


def expected_shape(kind: str) -> dict[str, str]:
    """The fields ``kind`` takes, for an error answer: ``{"decision": "string (required)", ...}``."""
    schema = ITEM_MODELS[kind].model_json_schema()
    required = set(schema.get("required", []))
    shape = {}
    for name, prop in schema["properties"].items():
        flat = _flat_property(prop)
        kind_of = "one of " + "|".join(flat["enum"]) if "enum" in flat else flat.get("type", "value")
        if kind_of == "array":
            kind_of = f"list of {flat.get('items', {}).get('type', 'value')}"
        shape[name] = f"{kind_of} (required)" if name in required else kind_of
    return shape


def hash_session_id(session_id: str | None) -> str | None:
    """Session ids link records to a harness session without exposing the raw id."""
    if not session_id:
        return None
    if session_id.startswith("sha256:"):
        return session_id
    return "sha256:" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:SESSION_HASH_HEX]


def _digest_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _bounded_summary(text: str, limit: int = EVIDENCE_SUMMARY_CHARS) -> tuple[str, list[str]]:
    """Redacted head and tail of command output (+ redaction reasons); the full output is kept only as a digest.

    Redacting before cutting matters: a cut through a secret would leave a fragment no detector recognises.
    """
    redacted, reasons = redact.redact_text(text)
    if len(redacted) <= limit:
        return redacted, reasons
    half = (limit - 40) // 2
    omitted = len(redacted) - 2 * half
    return f"{redacted[:half]}\n[... {omitted} chars omitted ...]\n{redacted[-half:]}", reasons


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _artifact(item: ArtifactIn, root: Path, head: str | None) -> dict[str, Any]:
    """Fill revision and content hash; files outside the root are never read (validation reports them)."""
    target = Path(item.path) if os.path.isabs(item.path) else root / item.path
    content_hash = None
    if _inside(root, target) and target.is_file():
        content_hash = gitinfo.sha256_file(target)
    return {
        **item.model_dump(),
        "revision": f"git:{head}" if head else None,
        "content_hash": content_hash,
    }


def _with_ids(kind: str, items: list[dict[str, Any]], existing: list[str]) -> list[dict[str, Any]]:
    taken = list(existing) + [item["id"] for item in items if item.get("id")]
    out = []
    for item in items:
        if not item.get("id"):
            item = {**item, "id": ids.next_id(_ID_PREFIX[kind], taken)}
            taken.append(item["id"])
        out.append(item)
    return out


def _item_dict(kind: str, item: _Strict, stamp: str) -> tuple[dict[str, Any], list[str]]:
    """The record form of one item, plus redaction reasons for evidence output summarised here."""
    data = item.model_dump()
    reasons: list[str] = []
    if kind == "decision":
        data["made_at"] = data["made_at"] or stamp
    elif kind == "failed_attempt":
        data["recorded_at"] = data["recorded_at"] or stamp
    elif kind == "evidence":
        output = data.pop("output")
        data["captured_at"] = data["captured_at"] or stamp
        data["digest"] = None
        if output is not None:
            data["digest"] = _digest_text(output)
            if data["result"] is None:
                data["result"], reasons = _bounded_summary(output)
    return data, reasons


def _items(
    kind: str, items: list[_Strict], stamp: str, existing: list[str]
) -> tuple[list[dict[str, Any]], list[Redaction]]:
    """Items with ids filled in, and the redactions made while summarising evidence output."""
    field = ITEM_FIELDS[kind]
    dicts, found = [], []
    for index, item in enumerate(items, start=len(existing)):
        data, reasons = _item_dict(kind, item, stamp)
        dicts.append(data)
        found += [Redaction(field=f"{field}[{index}].result", reason=reason, replacement=redact.marker(reason))
                  for reason in reasons]
    return _with_ids(kind, dicts, existing), found


def _repository(repo: gitinfo.RepoState) -> dict[str, Any] | None:
    info = repo.repository()
    return None if info is None else info.model_dump(mode="json")


def build_draft(
    payload: dict[str, Any],
    root: Path,
    *,
    origin: dict[str, Any] | None = None,
    automation: Automation | dict[str, Any] | None = None,
    now: datetime | None = None,
    deterministic_id: bool = False,
    repo: gitinfo.RepoState | None = None,
    extra: dict[str, Any] | None = None,
    redacted_extra: dict[str, Any] | None = None,
) -> tuple[HandoffRecord, list[Redaction]]:
    """A new redacted draft from ``payload``; ``origin`` (from the harness) overrides the payload's;
    ``repo`` is git's view of ``root`` when the caller already read it; ``extra`` holds more top-level
    fields (state the schema allows as extra fields), redacted in the same single pass as the rest;
    ``redacted_extra`` more such fields whose every string the caller already redacted (compaction's
    continuity state: each string was redacted when it was extracted), added after that pass.

    ``deterministic_id`` derives the id from the draft's content and ``now`` (see ``content_record_id``)
    instead of random bits, so a compaction repeated on the same state and clock writes the same bytes.
    """
    parsed = parse_payload(payload)
    if origin is not None:
        try:
            parsed.origin = OriginIn.model_validate(origin)
        except ValidationError as exc:
            raise _input_error(exc, "origin") from None
    root = Path(root)
    moment = datetime.now(UTC) if now is None else now
    stamp = ids.format_timestamp(moment)
    repository = _repository(repo if repo is not None else gitinfo.snapshot(root))
    head = (repository or {}).get("head")
    origin_data = parsed.origin.model_dump()
    origin_data["session_id"] = hash_session_id(origin_data["session_id"])
    if origin_data.get("owner"):  # a conversation key is stored hashed, like a session id
        origin_data["owner"]["conversation_id"] = hash_session_id(origin_data["owner"]["conversation_id"])
    if isinstance(automation, Automation):
        automation = automation.model_dump(mode="json")
    items = {kind: _items(kind, getattr(parsed, ITEM_FIELDS[kind]), stamp, []) for kind in ITEM_FIELDS}
    data: dict[str, Any] = {
        "id": ids.new_record_id(),
        "status": "draft",
        "created_at": stamp,
        "updated_at": stamp,
        "project": {"id": ids.project_id(root), "root_hint": root.resolve().name, "repository": repository},
        "origin": origin_data,
        "work": parsed.work.model_dump(),
        "summary": parsed.summary.model_dump(),
        **{ITEM_FIELDS[kind]: entries for kind, (entries, _found) in items.items()},
        "risks": [risk.model_dump() for risk in parsed.risks],
        "artifacts": [_artifact(item, root, head) for item in parsed.artifacts],
        "lineage": parsed.lineage.model_dump(),
        "automation": automation or {"trigger": "manual", "score": None, "reasons": []},
        **(extra or {}),
    }
    summarised = [redaction for _entries, found in items.values() for redaction in found]
    record, found = _redacted_record(data, summarised, redacted_extra)
    if deterministic_id:
        record = record.model_copy(update={"id": content_record_id(record, moment)})
    return record, [*summarised, *found]


def content_record_id(record: HandoffRecord, moment: datetime, salt: int = 0) -> str:
    """A UUID v7 at ``moment`` derived from the record's canonical JSON (everything but its id).

    The content already holds the parent ids, the session hash and the written timestamps; ``salt`` > 0
    picks the next candidate when the store already holds a record with the id (same content, same ms).
    """
    content = {key: value for key, value in record.to_json_dict().items() if key != "id"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    suffix = f"\x00salt:{salt}" if salt else ""
    return ids.derived_record_id((canonical + suffix).encode("utf-8", "surrogatepass"), moment)


def _redacted_record(data: dict[str, Any], previous: list[Redaction],
                     redacted: dict[str, Any] | None = None) -> tuple[HandoffRecord, list[Redaction]]:
    """Redact everything but the redaction log itself (and the ``redacted`` fields, which the caller already
    redacted), then append what was removed (field + reason only)."""
    data = {key: value for key, value in data.items() if key != "redactions"}
    clean, found = redact.redact_record(data)
    clean.update(redacted or {})
    found = [item if isinstance(item, Redaction) else Redaction.model_validate(item) for item in found]
    clean["redactions"] = [r.model_dump(mode="json") for r in [*previous, *found]]
    try:
        record = HandoffRecord.model_validate(clean)
    except ValidationError as exc:
        raise _input_error(exc, "handoff record") from None
    return record, found


DEDUPLICATED: frozenset[str] = frozenset({"decision", "failed_attempt", "open_item"})  # evidence may repeat
_NOT_CONTENT = frozenset({"id", "made_at", "recorded_at"})


def _content(data: dict[str, Any]) -> dict[str, Any]:
    """An item's content for the same-item test: no id or time, strings with their spacing and case folded."""
    def fold(value: Any) -> Any:
        if isinstance(value, str):
            return " ".join(value.split()).casefold()
        return [fold(v) for v in value] if isinstance(value, list) else value
    return {key: fold(value) for key, value in data.items() if key not in _NOT_CONTENT}


def same_item(record: HandoffRecord, kind: ItemKind, item: _Strict) -> Any | None:
    """The record's item of ``kind`` with the content of ``item`` (spacing and case aside), if any. Why: an
    agent re-records what it already recorded (and a continued draft inherits its parent's items), and a brief
    listing D-001..D-005 with one text reads as a broken record; evidence may repeat (each run is evidence)."""
    if kind not in DEDUPLICATED:
        return None
    wanted = _content(item.model_dump())
    for existing in getattr(record, ITEM_FIELDS[kind]):
        if _content({key: value for key, value in existing.model_dump().items() if key in wanted}) == wanted:
            return existing
    return None


def add_item(
    record: HandoffRecord, kind: ItemKind, item: dict[str, Any], *, now: datetime | None = None,
    trusted: bool = False,
) -> HandoffRecord:
    """A copy of a draft with one more decision/evidence/failed attempt/open item (id assigned, redacted);
    ``record`` itself when it already has that item (``same_item``).

    New redactions are appended to ``record.redactions`` (compare lengths to report them). ``trusted``:
    ``record`` is already redacted and ``item`` is Baton's own text, so the record is not scanned again.
    """
    _check_kind(kind)  # before the status check: a bad kind is the caller's first problem
    if record.status in IMMUTABLE_STATUSES:
        raise ConflictError(
            f"handoff {record.short_id} is {record.status} and immutable; "
            "record into a new draft instead (baton fork, or checkpoint create)")
    parsed = parse_item(kind, item)
    if same_item(record, kind, parsed) is not None:
        return record
    stamp = ids.format_timestamp(now)
    field = ITEM_FIELDS[kind]
    data = record.to_json_dict()
    existing = [entry["id"] for entry in data[field]]
    added, summarised = _items(kind, [parsed], stamp, existing)
    data[field] = data[field] + added
    data["updated_at"] = stamp
    if trusted:
        data["redactions"] = [r.model_dump(mode="json") for r in [*record.redactions, *summarised]]
        return HandoffRecord.model_validate(data)
    updated, _found = _redacted_record(data, [*record.redactions, *summarised])
    return updated


def redacted(record: HandoffRecord) -> HandoffRecord:
    """The record re-redacted after a caller added text (e.g. a warning acknowledgement) outside capture."""
    updated, _found = _redacted_record(record.to_json_dict(), list(record.redactions))
    return updated
