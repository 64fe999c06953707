"""The project and handoff commands: init, status, record, validate, ready, list, show, resume, fork, merge.

Why here and not at the handoff level: ``show`` and ``resume`` render the brief with the configured exact
counter (``context``), which sits above the core. Result keys: see the package docstring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from baton_engine.errors import BatonError, ConflictError, NotFoundError, PolicyBlocked, UserInputError, ValidationFailed
from baton_engine.handoff import capture, freshness, lineage, render, store, validate
from baton_engine.handoff.config import BatonConfig
from baton_engine.handoff.ids import format_timestamp
from baton_engine.handoff.model import HandoffRecord, transition
from baton_engine.handoff.owner import Scope
from baton_engine.handoff.project import open_project, relative_path
from baton_engine.handoff.summary import problems_of, redactions_of, summary_of
from baton_engine.operations.context import brief_counter, effective_settings

SHOW_FORMATS = ("json", "yaml", "md", "prompt")
RESUME_FORMATS = ("prompt", "json")


def _failure(error: BatonError, **details: Any) -> BatonError:
    error.details = details  # type: ignore[attr-defined]
    return error


def _checks(report: validate.ValidationReport) -> list[dict[str, Any]]:
    return [check.model_dump(mode="json") for check in report.checks]


def _validation_dict(report: validate.ValidationReport, fresh: freshness.FreshnessReport) -> dict[str, Any]:
    return {
        "status": report.status,
        "can_ready": report.can_ready,
        "checks": _checks(report),
        "rechecks": [dict(item) for item in report.rechecks],
        "rejected_rechecks": list(report.rejected_rechecks),
        "freshness": fresh.to_model().model_dump(mode="json"),
    }


def _failed_error(report: validate.ValidationReport, action: str) -> BatonError:
    """Policy failures (secrets, transcripts, paths, unallowlisted rechecks) exit 5; the rest exit 3."""
    failed = [check.name for check in report.checks if check.status == "fail"]
    message = f"{action}: validation failed ({', '.join(failed)}); fix the record and validate again"
    if report.rejected_rechecks:
        message += "; recheck commands must be on policy.recheck_allowlist in .baton/config.json"
    return PolicyBlocked(message) if report.policy_blocked else ValidationFailed(message)


# --- project ----------------------------------------------------------------------------------------------------


def init(start: Path | str | None = None, *, migrate_legacy: bool = False) -> dict[str, Any]:
    """Create ``.baton/`` (config, handoffs/, .gitignore) in ``start`` (not walked up: init says where)."""
    return {"ok": True, **store.init_project(Path(start or "."), migrate_legacy=migrate_legacy)}


def status(start: Path | str | None = None, *, scope: Scope | None = None) -> dict[str, Any]:
    """Counts and the latest records of ``scope`` (default: the whole project; see ``handoff/owner.py``)."""
    scope = scope or Scope.project()
    paths, handoffs, _config = open_project(start)
    listing = handoffs.list()
    counts: dict[str, int] = {}
    for entry in listing.entries:
        if scope.admits(entry.record):
            counts[entry.record.status] = counts.get(entry.record.status, 0) + 1
    latest_ready = handoffs.latest("ready", scope.admits)
    latest_draft = handoffs.latest("draft", scope.admits)
    return {
        "ok": True,
        "root": str(paths.root),
        "data_dir": relative_path(paths, paths.data_dir),
        "legacy": paths.legacy,
        "scope": scope.to_dict(),
        "counts": dict(sorted(counts.items())),
        "latest_ready": summary_of(latest_ready) if latest_ready else None,
        "latest_draft": summary_of(latest_draft) if latest_draft else None,
        "problems": problems_of(paths, listing, scope),
    }


# --- recording --------------------------------------------------------------------------------------------------


def record_item(start: Path | str | None, ref: str, kind: str, item: dict[str, Any]) -> dict[str, Any]:
    """Add a decision / evidence / failed attempt / open item to a draft (ready records are immutable)."""
    _paths, handoffs, _config = open_project(start)
    with handoffs.locked():  # load-modify-save as one step: two writers must not drop each other's items
        record = handoffs.load(ref)
        updated = capture.add_item(record, kind, item)  # type: ignore[arg-type]
        if updated is record:  # already recorded: the record stays as it is, the answer names the item
            known = capture.same_item(record, kind, capture.parse_item(kind, item))  # type: ignore[arg-type]
            return {"ok": True, "handoff": summary_of(record), "kind": kind,
                    "item": known.model_dump(mode="json") if known is not None else None,
                    "already_recorded": True, "redactions": []}
        if updated.status == "validated":  # new content: the earlier validation no longer speaks for it
            updated = transition(updated, "draft", reason=f"{kind} recorded")
        handoffs.save(updated)
    added = getattr(updated, capture.ITEM_FIELDS[kind])[-1].model_dump(mode="json")
    return {
        "ok": True,
        "handoff": summary_of(updated),
        "kind": kind,
        "item": added,
        "already_recorded": False,
        "redactions": redactions_of(updated.redactions[len(record.redactions):]),
    }


# --- validation and promotion -----------------------------------------------------------------------------------


def _validated(
    paths: store.ProjectPaths, config: BatonConfig, record: HandoffRecord, recheck: list[str] | None
) -> tuple[validate.ValidationReport, freshness.FreshnessReport, HandoffRecord]:
    report = validate.validate_record(record, paths.root, config, recheck=recheck)
    fresh = freshness.check_freshness(record, paths.root, allowed_roots=config.policy.allowed_roots)
    if record.status in ("draft", "validated"):
        wanted = "validated" if report.status != "fail" else "draft"
        if wanted != record.status:
            record = transition(record, wanted, reason=f"validation {report.status}")
        record = record.model_copy(
            update={"validation": report.to_validation(fresh.to_model()), "updated_at": format_timestamp()})
    return report, fresh, record


def validate_handoff(start: Path | str | None, ref: str, *, recheck: list[str] | None = None) -> dict[str, Any]:
    """Run the ten checks; a draft keeps the result (status ``validated`` unless it failed)."""
    paths, handoffs, config = open_project(start)
    record = handoffs.load(ref)
    report, fresh, updated = _validated(paths, config, record, recheck)
    if updated is not record:
        handoffs.save(updated)
    result = {"ok": report.status != "fail", "handoff": summary_of(updated),
              "validation": _validation_dict(report, fresh)}
    if report.status == "fail" or report.policy_blocked:
        raise _failure(_failed_error(report, "validate"), handoff=result["handoff"], validation=result["validation"])
    return result


def ready_handoff(start: Path | str | None, ref: str, *, accept_warnings: str | None = None) -> dict[str, Any]:
    """Validate and promote to ``ready`` (immutable from then on); warnings need a written acknowledgement."""
    paths, handoffs, config = open_project(start)
    record = handoffs.load(ref)
    if record.status not in ("draft", "validated"):
        raise ConflictError(
            f"handoff {record.short_id} is already {record.status}; ready records are immutable "
            "(use `baton fork` to change it)")
    report, fresh, updated = _validated(paths, config, record, None)
    details = {"handoff": summary_of(updated), "validation": _validation_dict(report, fresh)}
    if report.status == "fail" or report.policy_blocked:
        handoffs.save(updated)
        raise _failure(_failed_error(report, "ready"), **details)
    acknowledgement = None
    if report.status == "warn":
        if not (accept_warnings and accept_warnings.strip()):
            handoffs.save(updated)
            warned = ", ".join(check.name for check in report.checks if check.status == "warn")
            raise _failure(ValidationFailed(
                f"ready: validation has warnings ({warned}); review them and pass "
                "--accept-warnings REASON to promote anyway"), **details)
        acknowledgement = {"reason": accept_warnings.strip(), "accepted_at": format_timestamp()}
        validation = updated.validation.model_copy(update={"accepted_warnings": acknowledgement})
        updated = updated.model_copy(update={"validation": validation})
    updated = capture.redacted(updated)
    handoffs.save(updated)
    promoted = handoffs.transition(updated.id, "ready")
    return {
        "ok": True,
        "handoff": summary_of(promoted),
        "validation": _validation_dict(report, fresh),
        "accepted_warnings": promoted.validation.model_dump(mode="json").get("accepted_warnings"),
    }


# --- reading ----------------------------------------------------------------------------------------------------


def list_handoffs(start: Path | str | None = None, *, status: str | None = None,
                  scope: Scope | None = None) -> dict[str, Any]:
    """All records of ``scope`` (default: the project), oldest first, optionally of one status; unreadable
    files are listed as problems."""
    paths, handoffs, _config = open_project(start)
    listing = handoffs.list()
    records = [entry.record for entry in listing.entries if scope is None or scope.admits(entry.record)]
    if status is not None:
        records = [record for record in records if record.status == status]
    return {"ok": True, "handoffs": [summary_of(r) for r in records], "problems": problems_of(paths, listing, scope)}


def show_handoff(start: Path | str | None, ref: str, *, format: str = "json") -> dict[str, Any]:
    """One record as JSON, YAML, Markdown or the resume prompt."""
    if format not in SHOW_FORMATS:
        raise UserInputError(f"unknown format {format!r}; use one of {', '.join(SHOW_FORMATS)}")
    paths, handoffs, config = open_project(start)
    record = handoffs.load(ref)
    content: Any
    if format == "json":
        content = record.to_json_dict()
    elif format == "yaml":
        content = yaml.safe_dump(record.to_json_dict(), sort_keys=False, allow_unicode=True)
    elif format == "md":
        content = render.render_markdown(record)
    else:
        content = _brief(paths, config, record, None, None)["text"]
    return {"ok": True, "handoff": summary_of(record), "format": format, "content": content}


def _brief(
    paths: store.ProjectPaths,
    config: BatonConfig,
    record: HandoffRecord,
    fresh: freshness.FreshnessReport | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    fresh = fresh if fresh is not None else freshness.check_freshness(record, paths.root, allowed_roots=config.policy.allowed_roots)
    settings = effective_settings(config)
    with brief_counter(settings) as (count, source):
        brief = render.render_brief(
            record,
            freshness=fresh,
            max_tokens=max_tokens or settings.brief_max_tokens,
            count_tokens=count,
            verbose=config.brief.verbose,
            counter_source=source,
        )
    return {"text": brief.text, "tokens": brief.tokens, "truncated": brief.truncated,
            "counter_source": brief.counter_source}


def resume(
    start: Path | str | None = None,
    ref: str | None = None,
    *,
    format: str = "prompt",
    mark_resumed: bool = False,
    max_tokens: int | None = None,
    scope: Scope | None = None,
) -> dict[str, Any]:
    """The resume brief of ``ref`` (default: the latest ready handoff) with a freshness check first; only
    among the records of ``scope`` (default: the whole project): another owner's record is "not found"."""
    if format not in RESUME_FORMATS:
        raise UserInputError(f"unknown format {format!r}; use one of {', '.join(RESUME_FORMATS)}")
    if max_tokens is not None and max_tokens <= 0:
        raise UserInputError(f"--max-tokens must be a positive number of tokens, got {max_tokens}")
    paths, handoffs, config = open_project(start)
    where = scope.admits if scope is not None and not scope.project_wide else None
    if ref is None:
        record = handoffs.latest("ready", where)
        if record is None:
            raise NotFoundError("no ready handoff to resume" + (" in this conversation" if where else "")
                                + "; run `baton handoff ready <ref>` or pass a ref")
    else:
        record = handoffs.load(ref, where)
    fresh = freshness.check_freshness(record, paths.root, allowed_roots=config.policy.allowed_roots)
    brief = _brief(paths, config, record, fresh, max_tokens)
    if mark_resumed:
        record = handoffs.transition(record.id, "resumed")
    result: dict[str, Any] = {
        "ok": True,
        "handoff": summary_of(record),
        "freshness": _freshness_dict(fresh),
        "brief": brief,
        "marked_resumed": mark_resumed,
    }
    if format == "json":
        result["record"] = record.to_json_dict()
    return result


def _freshness_dict(fresh: freshness.FreshnessReport) -> dict[str, Any]:
    return {
        "stale": fresh.stale,
        "git_head_at_capture": fresh.git_head_at_capture,
        "git_head_now": fresh.git_head_now,
        "drifted_artifacts": [_plain(item) for item in fresh.drifted_artifacts],
        "reasons": list(fresh.reasons),
    }


def _plain(value: Any) -> Any:
    """Dataclass / pydantic / tuple values from other modules as plain JSON data."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


# --- lineage ----------------------------------------------------------------------------------------------------


def fork(start: Path | str | None, ref: str, *, label: str) -> dict[str, Any]:
    """A new draft child of ``ref`` on a labelled branch; the parent stays unchanged."""
    if not label.strip():
        raise UserInputError("fork needs a non-empty --label naming the branch of work")
    _paths, handoffs, _config = open_project(start)
    parent = handoffs.load(ref)
    child = lineage.fork(parent, label.strip())
    handoffs.save(child)
    return {"ok": True, "handoff": summary_of(child), "parent": parent.id}


def merge(start: Path | str | None, refs: list[str], *, resolution: str | None = None) -> dict[str, Any]:
    """A new draft joining >= 2 handoffs; conflicting decisions need a written resolution."""
    if len(refs) < 2:
        raise UserInputError("merge needs at least two handoff refs")
    _paths, handoffs, _config = open_project(start)
    parents = [handoffs.load(ref) for ref in refs]
    child = lineage.merge(parents, resolution)
    child = capture.redacted(child)
    handoffs.save(child)
    return {"ok": True, "handoff": summary_of(child), "parents": [p.id for p in parents]}

