"""Lineage: new records made from existing ones (continue, fork, merge, amend).

Why pure functions returning new drafts: a ready record is immutable, so every change of
direction is a new record whose ``lineage.parents`` names where it came from; parents are never
modified here. The one store-side effect, superseding an amended parent, lives in
``commit_amendment`` so it happens under the store lock right after the child is saved.

Merge joins items from every parent: identical items (same id and content, e.g. inherited from a
common ancestor) appear once; an item id used by two parents with different content is
renumbered and, for decisions, reported as a conflict. A merge is refused until a written
resolution decision is given; that decision carries ``resolves`` (the conflicting decision ids)
and its id is recorded in ``lineage.resolution`` and ``lineage.merge_basis``.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from baton_engine.errors import ConflictError, UserInputError
from baton_engine.handoff import ids
from baton_engine.handoff.model import STATUS_TRANSITIONS, Automation, HandoffRecord, Validation
from baton_engine.handoff.store import HandoffStore

MAX_LABEL_CHARS = 120
# Keys a caller may not set through ``changes``: identity, status and lineage are ours to decide.
PROTECTED_KEYS = frozenset(
    {"$schema", "schema_version", "id", "kind", "status", "created_at", "updated_at", "lineage", "status_history"}
)
# Item lists, their id prefix, and the fields inside them that reference other items' ids.
ITEM_KINDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("evidence", ids.EVIDENCE, ()),
    ("open_items", ids.OPEN_ITEM, ("blocked_by",)),
    ("failed_attempts", ids.FAILED_ATTEMPT, ("evidence_ids",)),
    ("decisions", ids.DECISION, ("evidence_ids",)),
)


def _child_data(
    parent: HandoffRecord, *, relation: str, parents: list[str], branch_label: str | None, now: str | None
) -> dict[str, Any]:
    stamp = now or ids.now_timestamp()
    data = parent.to_json_dict()
    data.pop("status_history", None)
    data.update(
        id=ids.new_record_id(),
        status="draft",
        flags=[],
        created_at=stamp,
        updated_at=stamp,
        validation=Validation().model_dump(mode="json"),
        automation=Automation().model_dump(mode="json"),
        lineage={"parents": parents, "relation": relation, "branch_label": branch_label, "merge_basis": []},
    )
    return data


def _deep_merge(base: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _build(data: dict[str, Any], changes: Mapping[str, Any] | None) -> HandoffRecord:
    if changes is not None:
        if not isinstance(changes, Mapping):
            raise UserInputError(f"changes must be a JSON object of record fields, not {type(changes).__name__}")
        protected = sorted(PROTECTED_KEYS & set(changes))
        if protected:
            raise UserInputError(
                f"changes may not set {', '.join(protected)}; Baton assigns identity, status and lineage"
            )
        data = _deep_merge(data, changes)
    try:
        return HandoffRecord.model_validate(data)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in err["loc"]) for err in exc.errors()})
        raise UserInputError(f"the new record would be invalid at: {', '.join(fields)}; fix those fields") from None


def _label(label: str) -> str:
    if not isinstance(label, str) or not label.strip():
        raise UserInputError("a fork needs a non-empty branch label naming the line of work")
    label = label.strip()
    if len(label) > MAX_LABEL_CHARS or any(unicodedata.category(ch).startswith("C") for ch in label):
        raise UserInputError(f"branch label must be one line of at most {MAX_LABEL_CHARS} printable characters")
    return label


def continue_from(
    parent: HandoffRecord, *, changes: Mapping[str, Any] | None = None, now: str | None = None
) -> HandoffRecord:
    """A draft carrying the parent's state forward (relation ``continue``, same branch label)."""
    data = _child_data(parent, relation="continue", parents=[parent.id], branch_label=parent.lineage.branch_label,
                       now=now)
    return _build(data, changes)


def fork(parent: HandoffRecord, label: str, *, now: str | None = None) -> HandoffRecord:
    """A draft on a new labelled branch (relation ``fork``); the parent is left as it is."""
    data = _child_data(parent, relation="fork", parents=[parent.id], branch_label=_label(label), now=now)
    return _build(data, None)


def amend(record: HandoffRecord, changes: Mapping[str, Any], *, now: str | None = None) -> HandoffRecord:
    """A corrected copy of a ready (or resumed) record (relation ``amend``); see ``commit_amendment``."""
    if "superseded" not in STATUS_TRANSITIONS.get(record.status, frozenset()):
        raise ConflictError(
            f"handoff {record.short_id} is {record.status!r}; only ready or resumed handoffs are amended "
            "(edit a draft in place)"
        )
    data = _child_data(record, relation="amend", parents=[record.id], branch_label=record.lineage.branch_label,
                       now=now)
    return _build(data, changes)


def commit_amendment(
    store: HandoffStore, record: HandoffRecord, changes: Mapping[str, Any], *, now: str | None = None
) -> tuple[HandoffRecord, HandoffRecord]:
    """Save the amendment, then mark the amended record superseded, under one store lock.

    Child first: a crash in between leaves the parent ready and the fix saved as a draft, never a
    superseded parent without its replacement.
    """
    with store.locked():
        child = amend(store.load(record.id), changes, now=now)
        store.save(child)
        parent = store.transition(record.id, "superseded", reason=f"amended by {child.id}")
    return child, parent


def _unique(values: Iterable[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for value in values:
        key = json.dumps(value, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def _join_items(parents: Sequence[dict[str, Any]]) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Items of every kind from all parents, ids renumbered on clash, references rewritten.

    Returns the joined lists and the decision ids (as joined) whose original id clashed.
    """
    joined: dict[str, list[dict[str, Any]]] = {kind: [] for kind, _prefix, _refs in ITEM_KINDS}
    mappings: list[dict[str, str]] = [{} for _ in parents]
    origin: list[list[int]] = []  # parallel to each kind's list: which parent first brought the item
    used: set[str] = set()
    clashes: dict[str, set[str]] = {}
    for kind, prefix, _refs in ITEM_KINDS:
        signatures: dict[str, str] = {}
        owners: list[int] = []
        for index, parent in enumerate(parents):
            for item in parent.get(kind) or []:
                signature = json.dumps(item, sort_keys=True)
                old = item.get("id", "")
                if signature in signatures:
                    mappings[index][old] = signatures[signature]
                    continue
                new = old if old and old not in used else ids.next_id(prefix, used)
                if old in used:
                    clashes.setdefault(old, {old}).add(new)
                used.add(new)
                signatures[signature] = new
                mappings[index][old] = new
                joined[kind].append({**copy.deepcopy(item), "id": new})
                owners.append(index)
        origin.append(owners)
    for (kind, _prefix, refs), owners in zip(ITEM_KINDS, origin, strict=True):
        for item, owner in zip(joined[kind], owners, strict=True):
            for ref_field in refs:
                item[ref_field] = [mappings[owner].get(ref, ref) for ref in item.get(ref_field) or []]
    decision_ids = {item["id"] for item in joined["decisions"]}
    conflicted = sorted(new for old, news in clashes.items() for new in news if new in decision_ids and old[0] == "D")
    return joined, conflicted


def _resolution_text(resolution: str | Mapping[str, Any] | None) -> tuple[str, str | None] | None:
    if resolution is None:
        return None
    if isinstance(resolution, str):
        return (resolution.strip(), None) if resolution.strip() else None
    if isinstance(resolution, Mapping):
        text = resolution.get("decision")
        rationale = resolution.get("rationale")
        if isinstance(text, str) and text.strip() and (rationale is None or isinstance(rationale, str)):
            return text.strip(), rationale
    raise UserInputError("a resolution is text, or an object with a 'decision' string and an optional 'rationale'")


def merge(
    parents: Sequence[HandoffRecord],
    resolution: str | Mapping[str, Any] | None,
    *,
    now: str | None = None,
) -> HandoffRecord:
    """A draft joining >= 2 handoffs of one project; refused (ConflictError) until ``resolution`` is written."""
    unique = list({parent.id: parent for parent in parents}.values())
    if len(unique) < 2:
        raise UserInputError("a merge needs at least two different parent handoffs")
    projects = {parent.project.id for parent in unique}
    if len(projects) > 1:
        raise UserInputError("the handoffs belong to different projects; merge only handoffs of one project")
    datas = [parent.to_json_dict() for parent in unique]
    joined, conflicted = _join_items(datas)
    shorts = ", ".join(parent.short_id for parent in unique)
    written = _resolution_text(resolution)
    if written is None:
        if conflicted:
            raise ConflictError(
                f"merging {shorts}: decisions conflict ({', '.join(conflicted)} after renumbering: the parents "
                "use the same decision id for different decisions); write a resolution decision saying which holds"
            )
        raise ConflictError(f"merging {shorts} needs a written resolution decision (what the merged work decides)")
    stamp = now or ids.now_timestamp()
    decision_text, rationale = written
    resolution_id = ids.next_id(ids.DECISION, [item["id"] for item in joined["decisions"]])
    joined["decisions"].append({
        "id": resolution_id,
        "decision": decision_text,
        "rationale": rationale or f"Resolves the merge of {shorts}",
        "alternatives_considered": [],
        "evidence_ids": [],
        "made_at": stamp,
        "resolves": conflicted,
    })
    first = datas[0]
    data = _child_data(unique[0], relation="merge", parents=[p.id for p in unique], branch_label=None, now=stamp)
    data["lineage"].update(merge_basis=[resolution_id], resolution=resolution_id)
    data.update(joined)
    data["work"] = {
        **first["work"],
        **{key: _unique(v for d in datas for v in d["work"].get(key) or [])
           for key in ("scope", "constraints", "definition_of_done")},
    }
    data["summary"] = {
        **first["summary"],
        "completed": _unique(v for d in datas for v in d["summary"].get("completed") or []),
        "current_state": "\n".join(f"[{p.short_id}] {p.summary.current_state}" for p in unique),
    }
    for key in ("artifacts", "risks", "redactions"):
        data[key] = _unique(v for d in datas for v in d.get(key) or [])
    return _build(data, None)
