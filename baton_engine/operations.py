"""The operations layer: one function per ``baton`` command, each returning a JSON-able dict.

Why one layer: the CLI, the Hermes engine tools and the MCP server must give the same answer for the same
request, so they all call these functions and print the dict as it is. Failures are raised as ``BatonError``
subclasses (exit codes 2/3/4/5); ``error_result(exc)`` turns one into the error dict and ``call(op, ...)``
never raises a BatonError. Key order is fixed by construction, so ``json.dumps`` output is deterministic.

Every ``start`` argument is a directory inside the project (the root is found by walking up to ``.baton/``,
falling back to ``.threadline/``); no project -> ``NotFoundError`` (exit 4) advising ``baton init``.

Result keys (all results start with ``"ok"``):

- errors: ``{"ok": false, "error": {"kind", "message"}}`` plus any ``exc.details`` keys (e.g. ``validation``).
- ``handoff`` entries (``summary_of``): ``{"id", "short_id", "status", "title", "created_at", "updated_at",
  "relation", "parents", "owner"}`` (``owner``: ``{"platform", "conversation_id"}`` or null).
- init: ``{"ok", "root", "data_dir", "created", "migrated", "config"}``.
- status: ``{"ok", "root", "data_dir", "legacy", "scope", "counts", "latest_ready", "latest_draft", "problems"}``
  (``scope``: ``{"kind": "project"}`` or the owner it is limited to).
- checkpoint_create: ``{"ok", "handoff", "path", "redactions"}``.
- record_item: ``{"ok", "handoff", "kind", "item", "redactions"}``.
- validate_handoff: ``{"ok", "handoff", "validation": {"status", "can_ready", "checks", "rechecks",
  "rejected_rechecks", "freshness"}}``; on failure the error dict carries ``handoff`` and ``validation`` too.
- ready_handoff: ``{"ok", "handoff", "validation", "accepted_warnings"}``.
- list_handoffs: ``{"ok", "handoffs", "problems"}``.
- show_handoff: ``{"ok", "handoff", "format", "content"}`` (``content`` is the record dict for ``json``,
  text otherwise).
- resume: ``{"ok", "handoff", "freshness", "brief": {"text", "tokens", "truncated", "counter_source"},
  "marked_resumed", "record"}`` (``record`` only with ``format="json"``).
- fork: ``{"ok", "handoff", "parent"}``; merge: ``{"ok", "handoff", "parents"}``.
- detect: ``{"ok", "pressure", "recommend", "auto_prepare", "readiness", "inputs_used", "inputs_unused",
  "terms", "reasons", "suppressed_by_cooldown", "cooldown_remaining_seconds", "latest_draft", "created",
  "redactions"}`` (``created`` is the captured draft with ``--capture``, else null).
- doctor: ``{"ok", "checks": [{"name", "status", "detail"}]}``.
- gc: ``{"ok", "removed", "dry_run"}``; audit: ``{"ok", "handoffs", "by_status", "redactions",
  "external_refs", "sensitive_artifacts", "problems"}``; migrate: ``{"ok", "dry_run", "legacy_dir", "target_dir",
  "records", "rewritten"}``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from baton_engine.errors import BatonError, ConflictError, NotFoundError, PolicyBlocked, UserInputError, ValidationFailed
from baton_engine.handoff import capture, detector, freshness, lineage, render, store, validate
from baton_engine.handoff.config import BatonConfig, load_config
from baton_engine.handoff.ids import format_timestamp, utc_now
from baton_engine.handoff.model import HandoffRecord, Redaction, transition
from baton_engine.handoff.owner import Scope
from baton_engine.metrics import read as read_metrics
from baton_engine.settings import BatonSettings, describe_line, load_settings
from baton_engine.tokenizer_check import check_tokenizer
from baton_engine.tokens.contract import BackendConfigError
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend, discover
from baton_engine.tokens.rough import ROUGH_SOURCE, estimate_tokens_rough

SHOW_FORMATS = ("json", "yaml", "md", "prompt")
RESUME_FORMATS = ("prompt", "json")
DETECTOR_STATE_FILE = "detector.json"
REBUILDABLE = ("cache", "index.sqlite")


# --- shared helpers ---------------------------------------------------------------------------------------------


def dumps(result: dict[str, Any]) -> str:
    """The ``--json`` text of a result (the engine tools answer with the same bytes): the operation's key
    order, UTF-8 kept readable."""
    return json.dumps(result, indent=2, ensure_ascii=False)


def error_dict(kind: str, message: str) -> dict[str, Any]:
    """The shape of every error answer: ``{"ok": false, "error": {"kind", "message"}}``."""
    return {"ok": False, "error": {"kind": kind, "message": message}}


def error_result(exc: BatonError) -> dict[str, Any]:
    """The error dict every surface prints for a BatonError (message only: never a traceback or a value)."""
    result = error_dict(exc.kind, str(exc))
    result.update(getattr(exc, "details", None) or {})
    return result


INTERNAL_ERROR_EXIT_CODE = 1


def call(operation: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> tuple[dict[str, Any], int]:
    """Run an operation for a surface that must never raise (CLI, engine tools, MCP): (result dict, exit code).

    A result with ``"ok": false`` (e.g. a failing doctor) exits 3. An unexpected exception becomes an
    ``internal_error`` naming only its type: its message could quote record content.
    """
    try:
        result = operation(*args, **kwargs)
    except BatonError as exc:
        return error_result(exc), exc.exit_code
    except Exception as exc:  # noqa: BLE001 - the surfaces promise a JSON answer, never a traceback
        message = f"unexpected {type(exc).__name__}; run `baton doctor` and report it if it persists"
        return error_dict("internal_error", message), INTERNAL_ERROR_EXIT_CODE
    return result, 0 if result.get("ok", True) else ValidationFailed.exit_code


def _failure(error: BatonError, **details: Any) -> BatonError:
    error.details = details  # type: ignore[attr-defined]
    return error


def _project(start: Path | str | None) -> store.ProjectPaths:
    where = Path(start or ".").resolve()
    paths = store.find_project_root(where)
    if paths is None:
        raise NotFoundError(f"no Baton project at or above {where}; run `baton init` in the project root first")
    return paths


def _open(start: Path | str | None) -> tuple[store.ProjectPaths, store.HandoffStore, BatonConfig]:
    paths = _project(start)
    return paths, store.HandoffStore(paths), load_config(paths.data_dir)


def summary_of(record: HandoffRecord) -> dict[str, Any]:
    """The short, stable description of a record used in every result."""
    return {
        "id": record.id,
        "short_id": record.short_id,
        "status": record.status,
        "title": record.work.title,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "relation": record.lineage.relation,
        "parents": list(record.lineage.parents),
        "owner": record.origin.owner.model_dump(mode="json") if record.origin.owner is not None else None,
    }


def _redactions(items: list[Redaction]) -> list[dict[str, Any]]:
    return [{"field": r.field, "reason": r.reason, "replacement": r.replacement} for r in items]


def _relative(paths: store.ProjectPaths, path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(paths.root.resolve()))
    except ValueError:
        return str(path)


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
    paths, handoffs, _config = _open(start)
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
        "data_dir": _relative(paths, paths.data_dir),
        "legacy": paths.legacy,
        "scope": scope.to_dict(),
        "counts": dict(sorted(counts.items())),
        "latest_ready": summary_of(latest_ready) if latest_ready else None,
        "latest_draft": summary_of(latest_draft) if latest_draft else None,
        "problems": _problems(paths, listing, scope),
    }


def _problems(paths: store.ProjectPaths, listing: store.ListResult,
              scope: Scope | None = None) -> list[dict[str, Any]]:
    """Unreadable files (their owner is unknown, so only a project-wide scope is shown them)."""
    if scope is not None and not scope.project_wide:
        return []
    return [{"path": _relative(paths, problem.path), "kind": problem.kind, "problem": problem.reason}
            for problem in listing.problems]


# --- capture ----------------------------------------------------------------------------------------------------


def checkpoint_create(
    start: Path | str | None,
    payload: dict[str, Any],
    *,
    origin: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A new redacted draft from a capture payload (see ``capture`` for the payload shape)."""
    paths, handoffs, _config = _open(start)
    record, found = capture.build_draft(payload, paths.root, origin=origin, now=now)
    written = handoffs.save(record)
    return {
        "ok": True,
        "handoff": summary_of(record),
        "path": _relative(paths, written),
        "redactions": _redactions(found),
    }


def record_item(start: Path | str | None, ref: str, kind: str, item: dict[str, Any]) -> dict[str, Any]:
    """Add a decision / evidence / failed attempt / open item to a draft (ready records are immutable)."""
    _paths, handoffs, _config = _open(start)
    with handoffs.locked():  # load-modify-save as one step: two writers must not drop each other's items
        record = handoffs.load(ref)
        updated = capture.add_item(record, kind, item)  # type: ignore[arg-type]
        if updated.status == "validated":  # new content: the earlier validation no longer speaks for it
            updated = transition(updated, "draft", reason=f"{kind} recorded")
        handoffs.save(updated)
    added = getattr(updated, capture.ITEM_FIELDS[kind])[-1].model_dump(mode="json")
    return {
        "ok": True,
        "handoff": summary_of(updated),
        "kind": kind,
        "item": added,
        "redactions": _redactions(updated.redactions[len(record.redactions):]),
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
    paths, handoffs, config = _open(start)
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
    paths, handoffs, config = _open(start)
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
    paths, handoffs, _config = _open(start)
    listing = handoffs.list()
    records = [entry.record for entry in listing.entries if scope is None or scope.admits(entry.record)]
    if status is not None:
        records = [record for record in records if record.status == status]
    return {"ok": True, "handoffs": [summary_of(r) for r in records], "problems": _problems(paths, listing, scope)}


def show_handoff(start: Path | str | None, ref: str, *, format: str = "json") -> dict[str, Any]:
    """One record as JSON, YAML, Markdown or the resume prompt."""
    if format not in SHOW_FORMATS:
        raise UserInputError(f"unknown format {format!r}; use one of {', '.join(SHOW_FORMATS)}")
    paths, handoffs, config = _open(start)
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


# The host's settings and counter for the operations run inside it (the Hermes engine sets them around a tool
# call), so ``baton_resume`` counts with the engine's backend instead of building one per call. A context
# variable, not a global: it holds only for the call that set it.
_HOST_COUNTING: ContextVar[tuple[BatonSettings, Callable[[], TokenCounter | None]] | None] = ContextVar(
    "baton_host_counting", default=None)


@contextmanager
def host_counting(settings: BatonSettings, counter: Callable[[], TokenCounter | None]) -> Iterator[None]:
    """Within this block, operations use ``settings`` and ``counter()`` (built lazily, never closed here)."""
    token = _HOST_COUNTING.set((settings, counter))
    try:
        yield
    finally:
        _HOST_COUNTING.reset(token)


def project_config(start: Path | str | None) -> BatonConfig | None:
    """The ``.baton/config.json`` of the project at or above ``start`` (default: the working directory, where
    the engine looks for its project too); None outside a project. A broken file raises ``UserInputError``."""
    paths = store.find_project_root(Path(start or ".").resolve())
    return load_config(paths.data_dir) if paths is not None else None


# The Hermes ``baton:`` block an operation outside Hermes reads as its config.yaml layer: set by the CLI when a
# Hermes home is named (``--hermes-home`` or ``$HERMES_HOME``), so `baton doctor` / `baton tokens` see the
# settings Hermes uses.
_CONFIG_YAML_LAYER: ContextVar[Mapping[str, Any] | None] = ContextVar("baton_config_yaml_layer", default=None)


@contextmanager
def config_yaml_layer(block: Mapping[str, Any] | None) -> Iterator[None]:
    """Within this block, ``effective_settings`` reads ``block`` (a ``baton:`` block) as the config.yaml layer."""
    token = _CONFIG_YAML_LAYER.set(block)
    try:
        yield
    finally:
        _CONFIG_YAML_LAYER.reset(token)


def effective_settings(config: BatonConfig | None = None) -> BatonSettings:
    """The settings an operation uses: the host's when one is set, else ``settings.load_settings`` with the
    Hermes ``baton:`` block when one is named (``config_yaml_layer``) and the project's ``.baton/config.json``
    as its lowest layer (the one precedence, see ``settings``)."""
    host = _HOST_COUNTING.get()
    if host is not None:
        return host[0]
    return load_settings(hermes_block=_CONFIG_YAML_LAYER.get(), project=config)


@contextmanager
def _brief_counter(settings: BatonSettings) -> Iterator[tuple[Callable[[str], int] | None, str | None]]:
    """The configured exact text counter for brief budgets: the host's counter, else one built from
    ``settings`` for this call.

    With no exact backend configured this yields ``(None, None)``: the renderer's own chars/4 estimate. The
    agent-loop safety margin is not added here (it is sized for whole prompts, not a 1,200-token brief); a
    backend failure falls back to the rough count of the same text.
    """
    host = _HOST_COUNTING.get()
    if host is not None:
        shared = host[1]()
        if shared is None or shared.source == ROUGH_SOURCE:
            yield None, None
        else:
            yield _text_counter(shared), shared.source
        return
    try:
        backend, selection = build_backend(settings.tokenizer)
    except BackendConfigError as exc:
        raise UserInputError(f"tokenizer: {exc}") from None
    if selection.name == ROUGH_SOURCE:
        backend.close()
        yield None, None
        return
    counter = TokenCounter(backend, fallback_margin_tokens=0)
    try:
        yield _text_counter(counter), counter.source
    finally:
        counter.close()


def _text_counter(counter: TokenCounter) -> Callable[[str], int]:
    def count(text: str) -> int:
        tokens = counter.count_text(text).tokens
        return tokens if tokens is not None else estimate_tokens_rough(text)

    return count


def _brief(
    paths: store.ProjectPaths,
    config: BatonConfig,
    record: HandoffRecord,
    fresh: freshness.FreshnessReport | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    fresh = fresh if fresh is not None else freshness.check_freshness(record, paths.root, allowed_roots=config.policy.allowed_roots)
    settings = effective_settings(config)
    with _brief_counter(settings) as (count, source):
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
    paths, handoffs, config = _open(start)
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
    _paths, handoffs, _config = _open(start)
    parent = handoffs.load(ref)
    child = lineage.fork(parent, label.strip())
    handoffs.save(child)
    return {"ok": True, "handoff": summary_of(child), "parent": parent.id}


def merge(start: Path | str | None, refs: list[str], *, resolution: str | None = None) -> dict[str, Any]:
    """A new draft joining >= 2 handoffs; conflicting decisions need a written resolution."""
    if len(refs) < 2:
        raise UserInputError("merge needs at least two handoff refs")
    _paths, handoffs, _config = _open(start)
    parents = [handoffs.load(ref) for ref in refs]
    child = lineage.merge(parents, resolution)
    child = capture.redacted(child)
    handoffs.save(child)
    return {"ok": True, "handoff": summary_of(child), "parents": [p.id for p in parents]}


# --- automation -------------------------------------------------------------------------------------------------


def _detector_state_path(paths: store.ProjectPaths) -> Path:
    return paths.data_dir / "cache" / DETECTOR_STATE_FILE


def _load_detector_state(paths: store.ProjectPaths) -> detector.DetectorState:
    """Cached cooldown state; a missing or unreadable cache is rebuildable, so it just starts fresh."""
    path = _detector_state_path(paths)
    if path.is_symlink() or path.parent.is_symlink():  # never read a cache that points out of the project
        return detector.DetectorState()
    try:
        data = json.loads(path.read_text("utf-8"))
        return detector.DetectorState.from_json_dict(data)
    except (OSError, ValueError, BatonError):
        return detector.DetectorState()


def _save_detector_state(paths: store.ProjectPaths, state: detector.DetectorState) -> None:
    target = _detector_state_path(paths)
    if target.parent.is_symlink():  # a rebuildable cache is skipped rather than written out of the project
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    # atomic_write renames over the target: a symlink planted there is replaced, never written through
    store.atomic_write(target, (json.dumps(state.to_json_dict(), sort_keys=True) + "\n").encode("utf-8"))


def detect(
    start: Path | str | None = None,
    *,
    event: dict[str, Any] | None = None,
    capture_payload: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Handoff pressure for the signals in ``event``; by default creates nothing but the cooldown cache.

    With ``capture_payload``, a recommended handoff (an explicit request always is) is captured as a draft
    whose ``automation`` block holds the score, the inputs used/unused and the reasons, for audit.
    Readiness is that of the latest draft (None without one, so nothing is ever auto-prepared blindly).
    """
    paths, handoffs, config = _open(start)
    signals = detector.DetectorSignals.from_mapping(event or {}, source="--event")
    if capture_payload is not None:
        capture.parse_payload(capture_payload)  # a bad payload fails before any state changes
    draft = handoffs.latest("draft")
    readiness = None
    if draft is not None:
        readiness = detector.readiness(draft, validate.validate_record(draft, paths.root, config))
    result = detector.evaluate(signals, config.detector, _load_detector_state(paths),
                               now=now or utc_now(), readiness=readiness)
    created, redactions = None, []
    if capture_payload is not None and result.recommend:
        trigger = "manual" if signals.explicit else "threshold"
        record, found = capture.build_draft(capture_payload, paths.root, automation=result.to_automation(trigger),
                                            now=now)
        handoffs.save(record)
        created, redactions = summary_of(record), _redactions(found)
    _save_detector_state(paths, result.new_state)
    evaluated = result.to_json_dict()
    evaluated.pop("state")
    return {"ok": True, **evaluated, "latest_draft": summary_of(draft) if draft else None,
            "created": created, "redactions": redactions}


# --- maintenance ------------------------------------------------------------------------------------------------

DoctorCheck = Callable[[Path], dict[str, str]]


def _check(name: str, status: str, detail: str) -> dict[str, str]:
    return {"name": name, "status": status, "detail": detail}


def _check_python(_start: Path) -> dict[str, str]:
    import sys

    version = ".".join(str(part) for part in sys.version_info[:3])
    ok = sys.version_info >= (3, 11)
    return _check("python", "pass" if ok else "fail", f"Python {version}" + ("" if ok else "; Baton needs >= 3.11"))


def _check_git(start: Path) -> dict[str, str]:
    from baton_engine.handoff import gitinfo

    if shutil.which("git") is None:
        return _check("git", "warn", "git not found on PATH; repository state and freshness are unavailable")
    if not gitinfo.is_git_repo(start):
        return _check("git", "warn", "not inside a git work tree; freshness can only compare artifact hashes")
    return _check("git", "pass", "git work tree found")


def _check_project(start: Path) -> dict[str, str]:
    paths = store.find_project_root(start)
    if paths is None:
        return _check("project", "fail", "no .baton/ found; run `baton init` in the project root")
    legacy = " (legacy .threadline/; run `baton migrate`)" if paths.legacy else ""
    return _check("project", "warn" if paths.legacy else "pass", f"project data in {paths.data_dir.name}/{legacy}")


def _check_config(start: Path) -> dict[str, str]:
    paths = store.find_project_root(start)
    if paths is None:
        return _check("config", "skipped", "no project")
    try:
        load_config(paths.data_dir)
    except BatonError as exc:
        return _check("config", "fail", str(exc))
    return _check("config", "pass", "config.json valid (or defaults)")


def _check_records(start: Path) -> dict[str, str]:
    paths = store.find_project_root(start)
    if paths is None:
        return _check("records", "skipped", "no project")
    listing = store.HandoffStore(paths).list()
    if listing.problems:
        return _check("records", "warn", f"{len(listing.entries)} readable, {len(listing.problems)} unreadable "
                      "(see `baton handoff list`)")
    return _check("records", "pass", f"{len(listing.entries)} readable handoff record(s)")


VERDICT_STATUS = {"exact": "pass", "estimate": "warn", "failing": "fail"}


def _check_tokenizer(start: Path) -> dict[str, str]:
    """The configured tokenizer built and asked to count one request: exact / estimate / failing, and why."""
    try:
        verdict = check_tokenizer(effective_settings(project_config(start)))
    except BatonError as exc:
        return _check("tokenizer", "fail", str(exc))
    detail = f"{verdict.verdict}: {verdict.reason}"
    broken = discover().broken
    if broken:
        names = ", ".join(item.describe() for item in broken)
        status = "fail" if verdict.verdict == "failing" else "warn"
        return _check("tokenizer", status, f"{detail}; plugin(s) failed to import: {names}")
    return _check("tokenizer", VERDICT_STATUS[verdict.verdict], detail)


def _check_settings(start: Path) -> dict[str, str]:
    """Every effective setting and where it came from (env variable, config file key or default)."""
    try:
        settings = effective_settings(project_config(start))
    except BatonError as exc:
        return _check("settings", "fail", str(exc))
    if settings.ignored:
        return _check("settings", "fail", "; ".join(settings.ignored))
    return _check("settings", "pass", describe_line(settings))


def _check_route(start: Path) -> dict[str, str]:
    """What the provider said of Baton's counts in the latest session that saw a response (its metrics log):
    confirmed, or calibrated with how far off the tokenizer is and what to set."""
    paths = store.find_project_root(start)
    if paths is None:
        return _check("route", "skipped", "no project")
    check = read_metrics.latest_route_check(paths.data_dir)
    if check is None:
        return _check("route", "skipped", "no session has reported a prompt size yet (run one, then doctor again)")
    seen = (f"session {check.get('session')}: {check.get('requests_seen')} response(s), last counted "
            f"{check.get('last_counted')} vs reported {check.get('last_reported')} (ratio {check.get('ratio')})")
    if check.get("verdict") == "calibrated":
        return _check("route", "warn", f"calibrated: {check.get('advice') or 'counts differ from the provider'}; "
                      f"{seen}")
    if check.get("verdict") == "confirmed":
        return _check("route", "pass", f"confirmed: the provider's sizes agree with Baton's; {seen}")
    return _check("route", "skipped", f"{check.get('verdict')}: not confirmed yet; {seen}")


CORE_CHECKS: tuple[DoctorCheck, ...] = (
    _check_python, _check_git, _check_project, _check_config, _check_records, _check_tokenizer, _check_settings,
    _check_route)


def doctor(start: Path | str | None = None, checks: Sequence[DoctorCheck] = CORE_CHECKS) -> dict[str, Any]:
    """Environment and project health; ``ok`` is false when any check fails.

    ``checks`` is the explicit list to run: the core's, plus what an edge adds (``baton doctor`` adds
    ``hermes.doctor.CHECKS``); nothing is registered by importing a module.
    """
    where = Path(start or ".").resolve()
    checks = [check(where) for check in checks]
    return {"ok": all(c["status"] != "fail" for c in checks), "checks": checks}


def gc(start: Path | str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
    """Delete only rebuildable files (``cache/``, ``index.sqlite``) and the temp files interrupted writes left
    (``store.stale_temp_files``); canonical records are never touched."""
    paths = _project(start)
    removed = []
    for temp in store.stale_temp_files(paths.data_dir):
        removed.append(_relative(paths, temp))
        if not dry_run:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
    for name in REBUILDABLE:
        target = paths.data_dir / name
        if not target.exists():
            continue
        removed.append(_relative(paths, target))
        if dry_run:
            continue
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    return {"ok": True, "removed": removed, "dry_run": dry_run}


def audit(start: Path | str | None = None) -> dict[str, Any]:
    """What the project stores: records by status, every redaction (field + reason) and every external ref."""
    paths, handoffs, _config = _open(start)
    listing = handoffs.list()
    by_status: dict[str, int] = {}
    redactions, external, sensitive = [], [], []
    for entry in listing.entries:
        record = entry.record
        by_status[record.status] = by_status.get(record.status, 0) + 1
        for item in record.redactions:
            redactions.append({"handoff": record.id, "field": item.field, "reason": item.reason})
        repository = record.project.repository
        if repository is not None and repository.remote_hint:
            external.append({"handoff": record.id, "kind": "git_remote", "ref": repository.remote_hint})
        for evidence in record.evidence:
            if evidence.type == "url" or (evidence.ref or "").startswith(("http://", "https://")):
                external.append({"handoff": record.id, "kind": "url", "ref": evidence.ref})
        for artifact in record.artifacts:
            if not _inside_root(paths.root, artifact.path):
                external.append({"handoff": record.id, "kind": "path_outside_root", "ref": artifact.path})
            if artifact.sensitive:
                sensitive.append({"handoff": record.id, "path": artifact.path})
    return {
        "ok": True,
        "handoffs": len(listing.entries),
        "by_status": dict(sorted(by_status.items())),
        "redactions": redactions,
        "external_refs": external,
        "sensitive_artifacts": sensitive,
        "problems": _problems(paths, listing),
    }


def _inside_root(root: Path, path: str) -> bool:
    target = Path(path) if Path(path).is_absolute() else root / path
    try:
        target.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def migrate(start: Path | str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
    """Move a legacy ``.threadline/`` to ``.baton/`` (rewrites only ``$schema``); explicit request only."""
    paths = _project(start)
    return {"ok": True, **store.migrate_legacy(paths.root, dry_run=dry_run)}


def report(start: Path | str | None = None, session: str | None = None, *, html: Path | str | None = None,
           scope: Scope | None = None) -> dict[str, Any]:
    """A session's report (default: the project's latest session ``scope`` sees): the data of its metrics log,
    and the self-contained HTML page written to ``html`` (default: beside the log, ``<log>.html``)."""
    from baton_engine.metrics import html as page

    paths = _project(start)
    logs = read_metrics.sessions(paths.data_dir, scope)
    log = read_metrics.find_session(logs, session)
    if log is None:
        known = ", ".join(entry.name for entry in logs[-5:]) or "none yet (a session writes one as it runs)"
        what = "no session log" if session is None else f"no single session log matches {session!r}"
        raise NotFoundError(f"{what} in {paths.data_dir / 'metrics'}; latest sessions: {known}")
    data = read_metrics.report_data(log)
    target = Path(html) if html is not None else log.path.with_suffix(".html")
    try:
        store.atomic_write(target, page.render(data).encode("utf-8"))  # replaces a symlink, never follows it
    except OSError as exc:
        raise UserInputError(f"cannot write the report to {target}: {exc.strerror or type(exc).__name__}; "
                             "pass --html with a writable path") from None
    return {"ok": True, "html": str(target), **data}
