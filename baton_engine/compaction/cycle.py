"""One compaction as a Baton handoff: capture -> redact -> validate -> persist -> render -> new message list.

Why a module of its own: this is the whole product path of ``compress()``, and it must be total. Every
step that can fail (project missing, record invalid, disk read-only, tokenizer down) ends in
``baton_engine.compaction.degrade`` with a reason code; a bug raises, and the host boundary (the engine) asks
``degraded`` for the same outcome with ``internal_error``, so nothing reaches Hermes. The
engine passes a plain ``SessionFacts`` snapshot, so this code never touches Hermes objects.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from baton_engine.compaction import continuity, scan
from baton_engine.compaction.builder import BatonBlock, build_compacted_messages, degrade, plan_tail
from baton_engine.messages.markers import is_baton_text
from baton_engine.compaction.sanitize import is_real_user_request, own_words
from baton_engine.errors import BatonError, ConflictError, PolicyBlocked
from baton_engine.handoff import capture, freshness, gitinfo, ids, render, store, validate
from baton_engine.handoff.config import load_config
from baton_engine.handoff.model import HandoffRecord, transition
from baton_engine.handoff.summary import summary_of
from baton_engine.tokens.rough import estimate_tokens_rough

LOGGER = logging.getLogger("baton_engine.compaction")
STATE_MESSAGES = 3
STATE_CHARS_PER_MESSAGE = 600
OBJECTIVE_CHARS = 1000
TITLE_CHARS = 80
MAX_ARTIFACTS = 20
WRITE_HINTS = ("write", "edit", "patch", "create", "replace", "append")
CONTINUE_ITEM = {
    "description": "Continue the user's latest request (kept verbatim after this handoff).",
    "priority": "high",
    "suggested_action": "Re-read the latest user message below and carry on from the current state.",
    "acceptance_check": "The latest user request is answered or explicitly handed back to the user.",
}
MAX_ID_CANDIDATES = 16
_SPACES = re.compile(r"\s+")

CountMessages = Callable[[list[dict[str, Any]]], int]
CountText = Callable[[str], int]


@dataclass(frozen=True)
class SessionFacts:
    """Everything the cycle needs from the engine, as plain data."""

    project_dir: Path
    session_id: str | None
    model: str | None
    adapter_version: str
    objective: str | None
    session_draft_id: str | None
    previous_handoff_id: str | None
    automation: dict[str, Any]
    brief_max_tokens: int
    fresh_tail_tokens: int
    degradation_keep_recent: int
    degradation_max_tokens: int
    max_block_tokens: int = 1400
    inflight_tokens: int | None = None  # budget for unanswered tool results (None: the fresh tail's)
    now: datetime | None = None  # the runtime clock's reading; every timestamp and the id of this cycle use it
    recall: continuity.Recall | None = None  # None: no recall, no anchors or user words in the handoff
    owner: dict[str, Any] | None = None  # origin.owner: {platform, conversation (hashed)}; None for a local host


@dataclass(frozen=True)
class CycleOutcome:
    """What happened (ids, counts, reason codes; no prompt text) plus the new message list."""

    messages: list[dict[str, Any]]
    handoff: dict[str, Any] | None = None
    path: str | None = None
    validation_status: str | None = None
    warnings: tuple[str, ...] = ()
    degraded: str | None = None
    detail: str | None = None
    brief_tokens: int = 0
    block_tokens: int = 0
    tail_messages: int = 0
    archived_draft: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(parts)
    return ""


def _one_line(text: str, limit: int) -> str:
    flat = _SPACES.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def latest_user_request(messages: Sequence[Any]) -> str | None:
    """The newest real (non-synthetic) user message text, or None: the objective is never invented."""
    for message in reversed(list(messages)):
        if isinstance(message, dict) and is_real_user_request(message):
            text = own_words(_text_of(message))
            if text and not is_baton_text(text):
                return text
    return None


def current_state(messages: Sequence[Any]) -> str:
    """The last few assistant texts, each flattened and bounded: deterministic and short."""
    texts: list[str] = []
    for message in reversed(list(messages)):
        if isinstance(message, dict) and message.get("role") == "assistant":
            text = _text_of(message).strip()
            if text and not is_baton_text(text):
                texts.append(_one_line(text, STATE_CHARS_PER_MESSAGE))
            if len(texts) >= STATE_MESSAGES:
                break
    if not texts:
        return "No assistant output yet in this session; the work starts from the latest user request."
    return "Latest assistant progress (newest last):\n" + "\n".join(f"- {t}" for t in reversed(texts))


def first_unanswered(messages: Sequence[Any]) -> int:
    """Index of the newest tool-call message when only its results follow it: calls whose results no
    request the model answered has carried yet."""
    start = len(messages)
    while start > 0 and isinstance(messages[start - 1], dict) and messages[start - 1].get("role") == "tool":
        start -= 1
    if start > 0 and isinstance(messages[start - 1], dict) and messages[start - 1].get("role") == "assistant" \
            and messages[start - 1].get("tool_calls"):
        return start - 1
    return len(messages)


def touched_artifacts(messages: Sequence[Any], root: Path,
                      scanned: Mapping[int, scan.MessageScan] | None = None) -> list[dict[str, Any]]:
    """Files inside the project named in tool-call arguments (sorted, unique, bounded). A file counts as
    read only once its content reached a request the model answered: calls still awaiting the model's
    answer count only when they modify the file (that already happened). Arguments come from each message's
    memoised scan; each distinct path is resolved once."""
    found: dict[str, str] = {}
    files: dict[str, str | None] = {}
    resolved_root = root.resolve()
    unanswered = first_unanswered(messages)
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        for name, value in ((scanned or {}).get(id(message)) or scan.scan_of(message)).call_paths:
            role = "modified" if any(hint in name.lower() for hint in WRITE_HINTS) else "read"
            if role == "read" and index >= unanswered:
                continue
            if value not in files:
                files[value] = _project_file(value, resolved_root)
            relative = files[value]
            if relative is not None and found.get(relative) != "modified":
                found[relative] = role
    return [{"path": path, "role": found[path]} for path in sorted(found)[:MAX_ARTIFACTS]]


def _project_file(value: str, resolved_root: Path) -> str | None:
    """``value`` as a path relative to the project root when it names a regular file there (not in .baton/)."""
    lexical = os.path.join(resolved_root, value)  # an absolute value stays as it is
    if not os.path.isfile(lexical):  # most paths a session names are not files here: one stat, no resolution
        return None
    try:
        relative = Path(os.path.realpath(lexical)).relative_to(resolved_root).as_posix()
    except ValueError:
        return None
    return None if relative.startswith(".baton/") else relative


def _payload(facts: SessionFacts, messages: Sequence[Any], objective: str, focus_topic: str | None,
             root: Path, scanned: Mapping[int, scan.MessageScan]) -> dict[str, Any]:
    focus = focus_topic.strip() if isinstance(focus_topic, str) else ""
    constraints = [f"Focus for the next phase: {_one_line(focus, 300)}"] if focus else []
    lineage: dict[str, Any] = {"parents": [], "relation": "root"}
    if facts.previous_handoff_id:
        lineage = {"parents": [facts.previous_handoff_id], "relation": "continue"}
    return {
        "title": "Hermes session: " + _one_line(objective.splitlines()[0], TITLE_CHARS),
        "objective": objective[:OBJECTIVE_CHARS],
        "constraints": constraints,
        "summary": {"current_state": current_state(messages)},
        "artifacts": touched_artifacts(messages, root, scanned),
        "lineage": lineage,
    }


def _origin(facts: SessionFacts) -> dict[str, Any]:
    return {"harness": "generic", "adapter_version": facts.adapter_version, "session_id": facts.session_id,
            "model": facts.model, "actor": {"type": "agent", "name": "hermes"}, "owner": facts.owner}


def _with_carried_items(record: HandoffRecord, source: HandoffRecord | None, now: datetime) -> HandoffRecord:
    """Carry decisions / evidence / failed attempts / open items forward (already redacted, ids kept).

    ``source`` is the session draft ``baton_capture`` recorded into (itself a continuation of the previous
    handoff), or, without one, the previous handoff: a later compaction never forgets earlier items.
    """
    items: dict[str, Any] = {"open_items": list(record.open_items)}
    if source is not None:
        items = {
            "decisions": list(source.decisions),
            "evidence": list(source.evidence),
            "failed_attempts": list(source.failed_attempts),
            "open_items": list(source.open_items),
            "risks": list(record.risks) + [r for r in source.risks if r not in record.risks],
            "redactions": list(record.redactions) + list(source.redactions),
        }
        inherited = [c for c in source.work.constraints if not c.startswith("Focus for the next phase:")]
        if inherited:
            constraints = list(dict.fromkeys([*inherited, *record.work.constraints]))
            items["work"] = record.work.model_copy(update={"constraints": constraints})
    updated = record.model_copy(update=items)
    if not updated.open_items:
        updated = capture.add_item(updated, "open_item", dict(CONTINUE_ITEM), now=now, trusted=True)
    return HandoffRecord.model_validate(updated.to_json_dict())


def degraded(messages: Any, facts: SessionFacts, reason: str, count: CountMessages, detail: str,
             **extra: Any) -> CycleOutcome:
    """The outcome of a compaction that wrote no handoff: the recent messages (``degrade``), pair-safe, with the
    reason code. The host boundary asks for it too (``internal_error``) when the cycle raised unexpectedly."""
    result = degrade(messages, reason=reason, keep_recent=facts.degradation_keep_recent,
                     max_tokens=facts.degradation_max_tokens, count_tokens=count)
    LOGGER.warning("baton compaction degraded reason=%s kept=%d", reason, len(result.messages))
    return CycleOutcome(messages=result.messages, degraded=reason, detail=detail,
                        tail_messages=result.tail_messages, **extra)


def run_cycle(
    messages: list[dict[str, Any]],
    facts: SessionFacts,
    *,
    count_messages: CountMessages,
    count_text: CountText | None,
    counter_source: str | None,
    focus_topic: str | None = None,
    tokenizer_down: bool = False,
) -> CycleOutcome:
    """Run the whole cycle; every expected failure degrades (reason code in the outcome). An unexpected one (a
    bug) raises: the host boundary turns it into ``degraded(..., "internal_error", ...)``."""
    return _run(messages, facts, count_messages, count_text, counter_source, focus_topic, tokenizer_down)


def _run(messages: list[dict[str, Any]], facts: SessionFacts, count_messages: CountMessages,
         count_text: CountText | None, counter_source: str | None, focus_topic: str | None,
         tokenizer_down: bool) -> CycleOutcome:
    paths = store.find_project_root(facts.project_dir.resolve())
    if paths is None:
        return degraded(messages, facts, "not_initialised", count_messages,
                         f"no Baton project at or above {facts.project_dir}; run `baton init` in the project root")
    config = load_config(paths.data_dir)
    handoffs = store.HandoffStore(paths)
    session_draft = _load(handoffs, facts.session_draft_id, ("draft", "validated"))
    previous = _load(handoffs, facts.previous_handoff_id, None)
    objective = (facts.objective or latest_user_request(messages)
                 or (session_draft.work.objective if session_draft else None))
    if not objective:
        return degraded(messages, facts, "validation_failed", count_messages,
                         "no objective: no user request in the transcript and none recorded with baton_capture")
    now = facts.now or datetime.now(UTC)
    stamp = ids.format_timestamp(now)
    scans, scanned_now = scan.scan_all(messages)  # each message read once: scanned ahead, or now
    scanned = {id(m): found for m, found in zip(messages, scans, strict=True) if found is not None}
    payload = _payload(facts, messages, objective, focus_topic, paths.root, scanned)
    plan = plan_tail(messages, fresh_tail_tokens=facts.fresh_tail_tokens, count_tokens=count_messages,
                     inflight_tokens=facts.inflight_tokens)
    kept = None
    if facts.recall is not None:
        kept = continuity.collect(plan.region, facts.recall, facts.brief_max_tokens,
                                  count_text or estimate_tokens_rough, scanned)
    repo = gitinfo.snapshot(paths.root)  # one git read for capture, validation and freshness
    # One redaction pass per string: build_draft redacts the payload; the continuity state was redacted string
    # by string as it was extracted (anchors, the user's words) and is added as it is; the carried items come
    # from stored (redacted) records, so validation and the save trust the record.
    record, _found = capture.build_draft(payload, paths.root, origin=_origin(facts), automation=facts.automation,
                                         now=now, deterministic_id=True, repo=repo,
                                         redacted_extra={"continuity": kept.to_state()} if kept is not None else None)
    record = _with_free_id(handoffs, record, now)
    record = _with_carried_items(record, session_draft or previous, now)
    with validate.remembered_paths():  # validation and freshness contain the same artifact paths
        report = validate.validate_record(record, paths.root, config, repo=repo, redacted=True)
        fresh = freshness.check_freshness(record, paths.root, allowed_roots=config.policy.allowed_roots, repo=repo)
    record = record.model_copy(update={"validation": report.to_validation(fresh.to_model(), at=stamp)})
    warnings = tuple(f"{c.name}: {c.detail}" for c in report.checks if c.status == "warn")
    if report.status == "fail":
        failed = ", ".join(c.name for c in report.checks if c.status == "fail")
        saved = _save_quietly(handoffs, record)
        return degraded(messages, facts, "validation_failed", count_messages,
                         f"handoff failed validation ({failed}); kept as draft {record.short_id}" if saved
                         else f"handoff failed validation ({failed}); not stored",
                         handoff=summary_of(record) if saved else None, validation_status="fail")
    if report.status == "pass":
        record = transition(record, "ready", reason="validation pass at pre_compaction", at=stamp)
    try:
        written = handoffs.save(record, redacted=True)
    except (OSError, PolicyBlocked) as exc:
        reason = "disk_not_writable" if isinstance(exc, OSError) else "validation_failed"
        return degraded(messages, facts, reason, count_messages,
                         f"handoff could not be stored ({type(exc).__name__})")
    archived = None
    if session_draft is not None:
        try:
            handoffs.transition(session_draft.id, "archived", reason=f"folded into handoff {record.short_id}")
            archived = session_draft.id
        except (BatonError, OSError) as exc:
            LOGGER.warning("baton session draft not archived type=%s", type(exc).__name__)
    # verbose: the evidence the session captured must survive compaction (the budget compacts captured
    # records to one line each before leaving any out).
    recall_line = (count_text or estimate_tokens_rough)(continuity.RECALL_LINE) + 8 if kept is not None else 0
    try:
        brief = render.render_brief(record, freshness=fresh,
                                    max_tokens=max(facts.brief_max_tokens - recall_line, render.MIN_MAX_TOKENS),
                                    count_tokens=count_text, counter_source=counter_source, verbose=True,
                                    continuity=False)
    except render.BriefTooSmall:  # the record is stored: point at it rather than fail the compaction
        LOGGER.warning("baton brief does not fit id=%s budget=%d; using the pointer brief", record.short_id,
                       facts.brief_max_tokens)
        brief = render.pointer_brief(record, count_text, counter_source)
    brief_text, brief_tokens = brief.text, brief.tokens
    if kept is not None:  # the captured state first; the continuity section fits into what is left
        section, section_tokens = kept.fitted(facts.brief_max_tokens - brief.tokens - 1,
                                              count_text or estimate_tokens_rough)
        brief_text, brief_tokens = f"{brief.text}\n\n{section}", brief.tokens + section_tokens + 1
    if warnings:
        brief_text = ("Validation warnings (handoff kept as draft): "
                      + "; ".join(_one_line(w, 160) for w in warnings[:3]) + "\n\n" + brief_text)
    block = BatonBlock.from_record(record, brief_text)
    built = build_compacted_messages(messages, block=block, fresh_tail_tokens=facts.fresh_tail_tokens,
                                     count_tokens=count_messages, max_block_tokens=facts.max_block_tokens,
                                     inflight_tokens=facts.inflight_tokens, plan=plan)
    LOGGER.info("baton handoff stored id=%s status=%s brief_tokens=%d block_tokens=%d tail_messages=%d "
                "compacted_messages=%d", record.short_id, record.status, brief_tokens, built.block_tokens,
                built.tail_messages, len(plan.region))
    return CycleOutcome(
        messages=built.messages,
        handoff=summary_of(record),
        path=_relative(paths.root, written),
        validation_status=report.status,
        warnings=warnings,
        degraded="tokenizer_down" if tokenizer_down else None,
        detail="exact token counting unavailable; budgets used rough estimates plus a margin" if tokenizer_down
        else None,
        brief_tokens=brief_tokens,
        block_tokens=built.block_tokens,
        tail_messages=built.tail_messages,
        archived_draft=archived,
        extras={"scan": {"messages": len(messages), "region_messages": len(plan.region),
                         "scanned_at_compaction": scanned_now},
                "stubbed": built.inflight_elided, "recallable": len(plan.region) if kept is not None else 0},
    )


def _with_free_id(handoffs: store.HandoffStore, record: HandoffRecord, now: datetime) -> HandoffRecord:
    """The content-derived id, or the next salted candidate when the store already holds that id
    (the same draft at the same millisecond): deterministic for a given store, never a collision. A stored
    file with the same short id also counts as taken, so short references stay unambiguous."""
    for salt in range(1, MAX_ID_CANDIDATES + 1):
        if not any(handoffs.paths.handoffs_dir.glob(f"*--{record.short_id.lower()}.json")):
            return record
        record = record.model_copy(update={"id": capture.content_record_id(record, now, salt)})
    raise ConflictError(f"no free handoff id after {MAX_ID_CANDIDATES} candidates; the store needs attention")


def _load(handoffs: store.HandoffStore, ref: str | None, statuses: tuple[str, ...] | None) -> HandoffRecord | None:
    if not ref:
        return None
    try:
        loaded = handoffs.load(ref)
    except BatonError:
        return None
    return loaded if statuses is None or loaded.status in statuses else None


def _save_quietly(handoffs: store.HandoffStore, record: HandoffRecord) -> bool:
    try:
        handoffs.save(record, redacted=True)  # the cycle's record: redacted once, by build_draft
    except (BatonError, OSError):
        return False
    return True


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
