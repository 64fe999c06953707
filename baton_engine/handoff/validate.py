"""The validator: the spec's ten checks, in order, each pass | warn | fail | skipped.

Why one function over data: the CLI, the engine tools and the MCP server must agree on what a
valid handoff is. Every detail says what is wrong and how to fix it, and never quotes a value
that could be secret (field paths, ids, counts and detector names only).

Rules worth knowing:

- Paths (``policy.paths``): ``..`` segments are rejected outright; absolute paths must lie in
  the project root or a ``policy.allowed_roots`` entry; a symlink whose target leaves those
  roots fails. Checked: artifact paths and the refs of ``file`` evidence.
- Deleted artifacts: a missing artifact passes when it is declared deleted, i.e. it has the
  extension field ``deleted: true``, or its description contains the word "deleted" or
  "removed" (e.g. ``"description": "deleted: superseded by v2.py"``). Otherwise missing fails.
- Commands are never re-run. ``recheck=[...]`` runs only commands that equal (after whitespace
  normalisation) an entry of ``policy.recheck_allowlist``: ``shell=False``, inside the root, with
  a timeout; only a sha256 digest of the output is kept. A command off the list fails the
  ``evidence`` check and is listed in ``ValidationReport.rejected_rechecks`` (the operations
  layer turns that into PolicyBlocked, exit 5).
- Overall: fail > warn > pass. ``can_ready`` is True for pass and warn: a warn still needs the
  caller's written acknowledgement before ``ready``.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from pydantic import ValidationError

from baton_engine.errors import UserInputError
from baton_engine.handoff import gitinfo, ids, redact
from baton_engine.handoff.model import (
    SCHEMA_VERSION,
    Artifact,
    Check,
    Freshness,
    HandoffRecord,
    Validation,
)

CHECK_NAMES = (
    "schema",
    "references",
    "policy.transcript",
    "policy.secrets",
    "policy.paths",
    "artifacts",
    "repository",
    "evidence",
    "actionability",
    "lineage",
)
TRANSCRIPT_FIELDS = frozenset(
    {"messages", "transcript", "turns", "conversation", "raw_conversation", "chat_history", "chat_log",
     "dialogue", "raw_messages", "conversation_history"}
)
CREDENTIAL_FILE_RE = re.compile(
    r"(?:^|/)(?:\.env(?:\.[\w-]+)?|\.netrc|\.npmrc|\.pypirc|\.git-credentials|id_(?:rsa|dsa|ecdsa|ed25519)"
    r"|credentials(?:\.json)?|[^/]+\.(?:pem|key|p12|pfx|keystore|jks))$",
    re.IGNORECASE,
)
RECHECK_TIMEOUT_SECONDS = 60.0
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
COMMIT_RE = re.compile(r"^(?:git:)?[0-9a-f]{7,64}$")
REVISION_RE = re.compile(r"^git:[0-9a-f]{7,64}$")
_DELETED_WORD_RE = re.compile(r"\b(?:deleted|removed)\b", re.IGNORECASE)
_STATUS_RANK = {"pass": 0, "skipped": 0, "warn": 1, "fail": 2}


class PolicySettings(Protocol):
    allowed_roots: list[str]
    recheck_allowlist: list[str]
    max_field_chars: int


class ConfigLike(Protocol):
    """What the validator reads from ``config.BatonConfig``."""

    policy: PolicySettings


# --- report -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ValidationReport:
    checks: tuple[Check, ...]
    rejected_rechecks: tuple[str, ...] = ()
    rechecks: tuple[dict[str, Any], ...] = ()

    @property
    def status(self) -> str:
        worst = max((_STATUS_RANK[c.status] for c in self.checks), default=0)
        return ("pass", "warn", "fail")[worst]

    @property
    def can_ready(self) -> bool:
        """Pass, or warn (which the caller may promote only with a written acknowledgement)."""
        return self.status != "fail"

    @property
    def needs_acknowledgement(self) -> bool:
        return self.status == "warn"

    @property
    def policy_blocked(self) -> bool:
        """A security block: a policy check failed or a recheck off the allowlist was asked for."""
        return bool(self.rejected_rechecks) or any(
            c.status == "fail" and c.name.startswith("policy.") for c in self.checks
        )

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def to_validation(self, freshness: Any = None, *, at: str | None = None) -> Validation:
        """The record's ``validation`` block; ``freshness`` is a FreshnessReport or model.Freshness."""
        if freshness is not None and not isinstance(freshness, Freshness):
            freshness = freshness.to_model()
        return Validation(
            status=self.status,  # type: ignore[arg-type]
            validated_at=at or ids.now_timestamp(),
            checks=[c.model_copy() for c in self.checks],
            freshness=freshness,
        )


@dataclass
class _Result:
    """Findings of one check: any problem fails it, any warning warns, notes add to a pass."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.problems.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def to_check(self, name: str, ok_detail: str) -> Check:
        if self.problems:
            return Check(name=name, status="fail", detail=_join(self.problems + self.warnings))
        if self.warnings:
            return Check(name=name, status="warn", detail=_join(self.warnings))
        return Check(name=name, status="pass", detail=_join([d for d in (ok_detail, *self.notes) if d]))


def _join(messages: list[str], limit: int = 8) -> str:
    shown = messages[:limit]
    more = len(messages) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _skipped(name: str, why: str) -> Check:
    return Check(name=name, status="skipped", detail=why)


# --- shared helpers (freshness uses these too) --------------------------------------------

@dataclass(frozen=True)
class PathVerdict:
    path: Path | None
    problem: str | None


def _within(path: Path, bases: list[Path]) -> bool:
    return any(path == base or path.is_relative_to(base) for base in bases)


def _bases(root: Path, allowed_roots: Collection[str]) -> tuple[list[Path], list[Path]]:
    lexical = [Path(os.path.abspath(root))]
    for extra in allowed_roots:
        candidate = Path(extra).expanduser()
        lexical.append(Path(os.path.abspath(candidate if candidate.is_absolute() else root / candidate)))
    resolved = [base.resolve() for base in lexical]
    return lexical + resolved, resolved


_VERDICTS: contextvars.ContextVar[dict[tuple[Any, ...], PathVerdict] | None] = contextvars.ContextVar(
    "baton_path_verdicts", default=None)


@contextlib.contextmanager
def remembered_paths() -> Iterator[None]:
    """Within the block each path is contained once: a compaction checks every artifact path in validation
    (paths, artifacts) and again for freshness (three resolutions each, ~60 per compaction, otherwise)."""
    token = _VERDICTS.set({})
    try:
        yield
    finally:
        _VERDICTS.reset(token)


def contain_path(path_text: str, root: Path, allowed_roots: Collection[str] = ()) -> PathVerdict:
    """Where ``path_text`` points, or why it is not allowed (traversal, outside the roots, escaping symlink)."""
    verdicts = _VERDICTS.get()
    if verdicts is None:
        return _contain(path_text, root, allowed_roots)
    key = (path_text, os.fspath(root), tuple(allowed_roots))
    if key not in verdicts:
        verdicts[key] = _contain(path_text, root, allowed_roots)
    return verdicts[key]


def _contain(path_text: str, root: Path, allowed_roots: Collection[str]) -> PathVerdict:
    text = (path_text or "").strip()
    if not text:
        return PathVerdict(None, "empty path")
    if "\x00" in text:
        return PathVerdict(None, "path contains a NUL byte")
    if ".." in re.split(r"[\\/]+", text):
        return PathVerdict(None, "path traversal ('..') is not allowed; use a path inside the project root")
    if re.match(r"^[A-Za-z]:[\\/]", text) or text.startswith("\\\\"):
        return PathVerdict(None, "Windows absolute path is outside the project root")
    given = Path(text).expanduser()
    lexical_bases, resolved_bases = _bases(Path(root), allowed_roots)
    candidate = Path(os.path.abspath(given if given.is_absolute() else Path(root) / given))
    if not _within(candidate, lexical_bases):
        return PathVerdict(None, "absolute path outside the project root; use a path relative to the root "
                                 "or add its directory to policy.allowed_roots")
    if not _within(candidate.resolve(), resolved_bases):
        return PathVerdict(None, "symlink target escapes the project root; reference the real file inside the root")
    return PathVerdict(candidate, None)


def artifact_declared_deleted(artifact: Artifact) -> bool:
    """The documented rule: ``deleted: true`` (extension field) or "deleted"/"removed" in the description."""
    if getattr(artifact, "deleted", None) is True:
        return True
    return bool(artifact.description and _DELETED_WORD_RE.search(artifact.description))


def normalize_command(command: str) -> str:
    return " ".join(command.split())


# --- the ten checks -----------------------------------------------------------------------

def _check_schema(data: Mapping[str, Any]) -> tuple[Check, HandoffRecord | None]:
    result = _Result()
    record: HandoffRecord | None = None
    try:
        record = HandoffRecord.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_input=False)[:8]:
            loc = ".".join(str(part) for part in error["loc"]) or "(top level)"
            result.fail(f"{loc}: {error['msg']}")
        result.problems.append("fix these fields (see the v0.1 schema in schemas/handoff-v0.1.json)")
        return result.to_check("schema", ""), None
    if record.schema_version != SCHEMA_VERSION:
        result.fail(f"schema_version is {record.schema_version!r}; this reader understands {SCHEMA_VERSION!r} only")
    if not ids.is_uuid7(record.id):
        result.warn("id is a UUID but not a lower-case UUID v7; new records should use UUID v7 ids")
    return result.to_check("schema", "record matches the v0.1 schema"), record


def _structured_ids(record: HandoffRecord) -> Iterator[tuple[str, str]]:
    for field_name in ("decisions", "evidence", "open_items", "failed_attempts"):
        for index, item in enumerate(getattr(record, field_name)):
            yield f"{field_name}[{index}]", item.id


def _check_references(record: HandoffRecord) -> Check:
    result = _Result()
    seen: dict[str, str] = {}
    for where, item_id in _structured_ids(record):
        if item_id in seen:
            result.fail(f"id {item_id} is used twice ({seen[item_id]} and {where}); give each item its own id")
        seen.setdefault(item_id, where)
    evidence_ids = {e.id for e in record.evidence}
    for field_name in ("decisions", "failed_attempts"):
        for index, item in enumerate(getattr(record, field_name)):
            for ref in item.evidence_ids:
                if ref not in evidence_ids:
                    result.fail(f"{field_name}[{index}].evidence_ids names {ref}, which is not an evidence id; "
                                "add that evidence or remove the reference")
    for index, item in enumerate(record.open_items):
        for ref in item.blocked_by:
            if ref not in seen:
                result.fail(f"open_items[{index}].blocked_by names {ref}, which is not an item in this record")
            elif ref == item.id:
                result.fail(f"open_items[{index}] is blocked by itself")
    if record.lineage.relation == "merge" and len(record.lineage.parents) < 2:
        result.fail("a merge needs at least two parents in lineage.parents")
    return result.to_check("references", f"{len(seen)} item id(s), all references resolve")


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, str | None, Any]]:
    """(path, key, value) for every node of the JSON tree."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            yield child, str(key), item
            yield from _walk(item, child)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            child = f"{path}[{index}]"
            yield child, None, item
            yield from _walk(item, child)


def _looks_like_chat(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) >= 2
        and all(isinstance(m, Mapping) and "role" in m and "content" in m for m in value)
    )


def _check_transcript(data: Mapping[str, Any], max_chars: int) -> Check:
    result = _Result()
    for path, key, value in _walk({k: v for k, v in data.items() if k != "redactions"}):
        name = (key or "").lower().replace("-", "_")
        carries_text = isinstance(value, (str, list, Mapping)) and bool(value)
        if name in TRANSCRIPT_FIELDS and carries_text:
            result.fail(f"{path} holds a conversation transcript; records keep state, not story: remove it "
                        "and summarise what matters in summary/decisions")
        elif _looks_like_chat(value):
            result.fail(f"{path} is a list of chat messages (role/content); remove it and keep only the state")
        elif isinstance(value, str) and len(value) > max_chars:
            result.fail(f"{path} has {len(value)} characters (policy.max_field_chars is {max_chars}); store a "
                        "short summary plus an evidence digest instead of raw text")
    return result.to_check("policy.transcript", "no transcript-bearing field")


def _check_secrets(data: Mapping[str, Any], record: HandoffRecord | None, redacted: bool) -> Check:
    result = _Result()
    content = {k: v for k, v in data.items() if k != "redactions"}
    found = [] if redacted else redact.redact_record(content)[1]
    by_field: dict[str, list[str]] = {}
    for item in found:
        by_field.setdefault(item.field, []).append(item.reason)
    for field_path, reasons in by_field.items():
        result.fail(f"{field_path} holds a secret-like value ({', '.join(sorted(set(reasons)))}); remove it or "
                    "re-capture through baton, which redacts before writing")
    for index, artifact in enumerate(record.artifacts if record else []):
        if CREDENTIAL_FILE_RE.search(artifact.path.replace("\\", "/")) and not artifact.sensitive:
            result.warn(f"artifacts[{index}] looks like a credential file; set \"sensitive\": true (only its hash "
                        "is kept) or drop it from the handoff")
    return result.to_check("policy.secrets", "redacted by capture in this process; not scanned again" if redacted
                           else "no secret-like value outside the redaction log")


def _referenced_paths(record: HandoffRecord) -> Iterator[tuple[str, str]]:
    for index, artifact in enumerate(record.artifacts):
        yield f"artifacts[{index}].path", artifact.path
    for index, evidence in enumerate(record.evidence):
        if evidence.type == "file" and evidence.ref:
            yield f"evidence[{index}].ref", re.sub(r"(?:#L\d+(?:-L?\d+)?|:\d+(?:-\d+)?)$", "", evidence.ref)


def _check_paths(record: HandoffRecord, root: Path, allowed_roots: Collection[str]) -> tuple[Check, set[str]]:
    result = _Result()
    rejected: set[str] = set()
    count = 0
    for where, path_text in _referenced_paths(record):
        count += 1
        verdict = contain_path(path_text, root, allowed_roots)
        if verdict.problem:
            rejected.add(where)
            result.fail(f"{where}: {verdict.problem}")
    return result.to_check("policy.paths", f"{count} path(s), all inside the project root"), rejected


def _check_artifacts(record: HandoffRecord, root: Path, allowed_roots: Collection[str], rejected: set[str]) -> Check:
    result = _Result()
    if not record.artifacts:
        return _skipped("artifacts", "no artifacts recorded")
    for index, artifact in enumerate(record.artifacts):
        where = f"artifacts[{index}]"
        if f"{where}.path" in rejected:
            result.notes.append(f"{where} not read (rejected by policy.paths)")
            continue
        if artifact.content_hash is not None and not DIGEST_RE.match(artifact.content_hash):
            result.fail(f"{where}.content_hash must be 'sha256:' followed by 64 lower-case hex digits")
        if artifact.revision is not None and not REVISION_RE.match(artifact.revision):
            result.fail(f"{where}.revision must look like 'git:<commit sha>'")
        target = contain_path(artifact.path, root, allowed_roots).path
        if target is None:
            continue
        if not target.exists():
            if artifact_declared_deleted(artifact):
                result.notes.append(f"{where} is declared deleted")
            else:
                result.fail(f"{where} ({artifact.role}) does not exist; restore it, fix the path, or declare it "
                            "deleted (\"deleted\": true)")
            continue
        if target.is_dir():
            result.warn(f"{where} is a directory; list the files that matter so their content can be hashed")
            continue
        if artifact.content_hash and DIGEST_RE.match(artifact.content_hash):
            try:
                current = gitinfo.sha256_file(target)
            except OSError as exc:
                result.fail(f"{where} cannot be read ({type(exc).__name__}); fix its permissions")
                continue
            if current != artifact.content_hash:
                result.fail(f"{where} changed since capture (content hash differs); re-capture or amend the "
                            "handoff so it describes the file as it is")
    return result.to_check("artifacts", f"{len(record.artifacts)} artifact(s) present and matching their hashes")


def _check_repository(record: HandoffRecord, repo: gitinfo.RepoState) -> Check:
    repository = record.project.repository
    now_head = repo.head
    if repository is None:
        if repo.in_repo:
            return Check(name="repository", status="warn",
                         detail="project.repository is null but the project is a git repository; re-capture so the "
                                "head and dirty state are recorded")
        return _skipped("repository", "not a git repository; nothing to record")
    if repository.vcs not in (None, "git"):
        return _skipped("repository", f"vcs {repository.vcs!r} is not checked by this validator")
    result = _Result()
    if repository.head is None and now_head is not None:
        result.warn("project.repository.head is not recorded; re-capture to record the commit the work is based on")
    elif repository.head is not None and not COMMIT_RE.match(repository.head):
        result.fail("project.repository.head is not a commit sha (7-64 hex digits)")
    if repository.dirty is None:
        result.warn("project.repository.dirty is not recorded; re-capture to record uncommitted changes")
    if repository.head and now_head and repository.head != now_head:
        result.warn(f"git head moved since capture ({repository.head[:12]} -> {now_head[:12]}); check that the "
                    "handoff still describes the tree")
    elif repository.head and now_head is None:
        result.warn("git head was recorded but the project has no git head now")
    return result.to_check("repository", "head and dirty state recorded; no drift")


def _url_ok(ref: str) -> bool:
    try:
        parts = urlsplit(ref)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _check_evidence_items(record: HandoffRecord, result: _Result) -> None:
    for index, evidence in enumerate(record.evidence):
        where = f"evidence[{index}]"
        if evidence.digest is not None and not DIGEST_RE.match(evidence.digest):
            result.fail(f"{where}.digest must be 'sha256:' followed by 64 lower-case hex digits")
        ref = (evidence.ref or "").strip()
        if evidence.type == "commit" and not COMMIT_RE.match(ref):
            result.fail(f"{where} is a commit but ref is not a commit sha (7-64 lower-case hex digits)")
        elif evidence.type == "url" and not _url_ok(ref):
            result.fail(f"{where} is a url but ref is not an http(s) URL with a host")
        elif evidence.type in ("command", "test", "file") and not ref:
            result.warn(f"{where} ({evidence.type}) has no ref; record the command or file it refers to")
        try:
            ids.parse_timestamp(evidence.captured_at)
        except (UserInputError, OverflowError):  # not RFC 3339, or out of range in UTC: the same finding
            result.fail(f"{where}.captured_at is not an RFC 3339 timestamp (YYYY-MM-DDTHH:MM:SSZ)")


@dataclass(frozen=True)
class RecheckOutcome:
    command: str
    exit_code: int | None
    digest: str | None
    problem: str | None


def run_recheck(command: str, root: Path, *, timeout: float = RECHECK_TIMEOUT_SECONDS) -> RecheckOutcome:
    """Run one allowlisted command (no shell) inside ``root``; keep its exit code and output digest only."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return RecheckOutcome(command, None, None, "cannot be parsed into arguments")
    try:
        completed = subprocess.run(
            argv, cwd=root, shell=False, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired:
        return RecheckOutcome(command, None, None, f"timed out after {timeout:g}s")
    except OSError as exc:
        return RecheckOutcome(command, None, None, f"could not start ({type(exc).__name__})")
    digest = "sha256:" + hashlib.sha256(completed.stdout + completed.stderr).hexdigest()
    return RecheckOutcome(command, completed.returncode, digest, None)


def refused_rechecks(recheck: Collection[str], allowlist: Collection[str]) -> list[str]:
    """The asked-for commands that are not on the allowlist (redacted, whitespace-normalised)."""
    allowed = {normalize_command(entry) for entry in allowlist}
    return [redact.redact_text(normalize_command(c))[0] for c in recheck if normalize_command(c) not in allowed]


def _check_rechecks(
    record: HandoffRecord, root: Path, allowlist: Collection[str], recheck: list[str], result: _Result,
    runner: Callable[[str, Path], RecheckOutcome],
) -> tuple[list[str], list[dict[str, Any]]]:
    allowed = {normalize_command(entry) for entry in allowlist}
    rejected: list[str] = []
    outcomes: list[dict[str, Any]] = []
    for raw in recheck:
        command = normalize_command(raw)
        shown = redact.redact_text(command)[0]
        if command not in allowed:
            rejected.append(shown)
            result.fail(f"recheck of {shown!r} refused: it is not on policy.recheck_allowlist (commands are never "
                        "re-run otherwise); add it to .baton/config.json if it is safe to run")
            continue
        outcome = runner(command, root)
        matching = [e for e in record.evidence if e.ref and normalize_command(e.ref) == command]
        outcomes.append({"command": shown, "exit_code": outcome.exit_code, "digest": outcome.digest,
                         "evidence_ids": [e.id for e in matching]})
        if outcome.problem:
            result.fail(f"recheck of {shown!r} {outcome.problem}")
        elif outcome.exit_code != 0:
            result.fail(f"recheck of {shown!r} exited {outcome.exit_code}; the recorded evidence no longer holds")
        else:
            recorded = [e for e in matching if e.digest]
            if recorded and all(e.digest != outcome.digest for e in recorded):
                result.warn(f"recheck of {shown!r} passed but its output differs from the recorded digest "
                            f"({', '.join(e.id for e in recorded)})")
            else:
                result.notes.append(f"recheck of {shown!r} passed ({outcome.digest})")
    return rejected, outcomes


def _check_actionability(record: HandoffRecord) -> Check:
    result = _Result()
    if not record.work.objective.strip():
        result.warn("work.objective is blank; state what the work is for")
    done = [d.strip().lower() for d in record.work.definition_of_done if d.strip()]
    completed = {c.strip().lower() for c in record.summary.completed}
    if done and all(d in completed for d in done):
        result.notes.append("definition of done satisfied (every item is in summary.completed)")
        return result.to_check("actionability", "")
    complete_items = [o for o in record.open_items if o.suggested_action and o.acceptance_check]
    if complete_items:
        return result.to_check("actionability", f"next action: {complete_items[0].id} has a suggested action and "
                                                 "an acceptance check")
    if any(o.suggested_action for o in record.open_items):
        result.warn("no open item has both a suggested_action and an acceptance_check; add an acceptance check so "
                    "the next session knows when it is done")
    else:
        result.warn("nothing to act on: add an open item with a suggested_action and acceptance_check, or list "
                    "every definition_of_done entry in summary.completed")
    return result.to_check("actionability", "")


def _stored_ids(root: Path) -> set[str] | None:
    """Ids of the records in this project's store, or None when there is no store to ask."""
    from baton_engine.handoff.store import _read_json  # the store's safe reader: no symlinks, FIFOs, huge files

    found: set[str] | None = None
    for data_dir in (".baton", ".threadline"):
        handoffs = root / data_dir / "handoffs"
        if not handoffs.is_dir() or handoffs.is_symlink() or (root / data_dir).is_symlink():
            continue
        found = found or set()
        for path in sorted(handoffs.glob("*.json")):
            data, _problem = _read_json(path)
            if isinstance(data, dict) and isinstance(data.get("id"), str):
                found.add(data["id"])
    return found


def _has_resolution(record: HandoffRecord) -> bool:
    """``lineage.resolution`` naming a decision (what ``lineage.merge`` writes), a decision carrying
    ``resolves``, or a decision whose text starts with "Resolution"."""
    named = getattr(record.lineage, "resolution", None)
    if named:
        return any(decision.id == named for decision in record.decisions)
    for decision in record.decisions:
        if getattr(decision, "resolves", None) is not None:
            return True
        if re.match(r"^\s*(?:merge\s+)?resolution\b", decision.decision, re.IGNORECASE):
            return True
    return False


def _check_lineage(record: HandoffRecord, root: Path, known_ids: Collection[str] | None) -> Check:
    lineage = record.lineage
    result = _Result()
    for index, parent in enumerate(lineage.parents):
        if not ids.is_uuid7(parent) and not re.fullmatch(r"[0-9a-f-]{36}", parent):
            result.fail(f"lineage.parents[{index}] is not a record id (UUID)")
        elif parent == record.id:
            result.fail(f"lineage.parents[{index}] is the record itself")
    if lineage.relation == "root" and lineage.parents:
        result.warn("lineage.relation is 'root' but parents are listed; set relation to continue/fork/merge/amend")
    if lineage.relation != "root" and not lineage.parents:
        result.fail(f"lineage.relation is {lineage.relation!r} but lineage.parents is empty; name the parent record")
    if lineage.relation == "merge":
        if len(lineage.parents) < 2:
            result.fail("a merge needs at least two parents")
        if not _has_resolution(record):
            result.fail("a merge needs a resolution decision (lineage.resolution naming a decision, or a decision "
                        "carrying 'resolves' or starting with 'Resolution:'); write how the parents' conflicts were "
                        "resolved")
    known = set(known_ids) if known_ids is not None else _stored_ids(root)
    if lineage.parents and known is None:
        result.warn("no handoff store found under the root, so parent records could not be looked up")
    elif known is not None:
        for index, parent in enumerate(lineage.parents):
            if parent not in known:
                result.fail(f"lineage.parents[{index}] is not a record in this project's store; import it or "
                            "remove the link")
    if not lineage.parents and not result.problems and not result.warnings:
        return _skipped("lineage", "root record: no parents to check")
    return result.to_check("lineage", f"{len(lineage.parents)} parent(s) found; relation {lineage.relation}")


# --- entry point --------------------------------------------------------------------------

def _guarded(name: str, run: Callable[[], Check]) -> Check:
    """A check the record's paths or the project's files stop from running is that check's failure."""
    try:
        return run()
    # What a check raises on a schema-valid record in a real project: OSError (an artifact path too long to stat,
    # a directory that cannot be searched), RuntimeError (pathlib: an artifact path that is a symlink loop or
    # names an unknown ``~user``; json.loads' RecursionError on a deeply nested store file read for lineage) and
    # ValueError (json.loads: a store file with a number over int's digit limit). Anything else is Baton's bug
    # and surfaces as one.
    except (OSError, RuntimeError, ValueError) as exc:
        detail = f"check could not run ({type(exc).__name__}); report this as a bug"
        return Check(name=name, status="fail", detail=detail)


def validate_record(
    record: HandoffRecord | Mapping[str, Any],
    root: Path,
    config: ConfigLike,
    *,
    recheck: list[str] | None = None,
    known_ids: Collection[str] | None = None,
    runner: Callable[[str, Path], RecheckOutcome] = run_recheck,
    repo: gitinfo.RepoState | None = None,
    redacted: bool = False,
) -> ValidationReport:
    """Run the ten checks in order over a record (model or raw JSON dict) in project ``root``.

    ``known_ids`` (ids of stored records) defaults to reading the project's store; ``runner``
    executes allowlisted rechecks (the default runs the real command); ``repo`` is git's view of
    ``root`` when the caller already read it (a compaction reads it once), else it is read here;
    ``redacted``: the caller built the record through capture's redaction in this process and added no
    text since (the compaction cycle), so the secrets check trusts it instead of scanning it again.
    """
    root = Path(root)
    policy = config.policy
    data: Mapping[str, Any] = record.to_json_dict() if isinstance(record, HandoffRecord) else record
    checks: list[Check] = []
    schema_check, model = _check_schema(data)
    checks.append(schema_check)
    if model is None:
        checks.append(_skipped("references", "skipped: the schema check failed; fix it first"))
    else:
        checks.append(_guarded("references", lambda: _check_references(model)))
    checks.append(_guarded("policy.transcript", lambda: _check_transcript(data, policy.max_field_chars)))
    checks.append(_guarded("policy.secrets", lambda: _check_secrets(data, model, redacted)))
    if model is None:
        checks += [_skipped(name, "skipped: the schema check failed; fix it first") for name in CHECK_NAMES[4:]]
        return ValidationReport(tuple(checks), rejected_rechecks=tuple(refused_rechecks(recheck or [],
                                                                                          policy.recheck_allowlist)))
    rejected_paths: set[str] = set()

    def paths() -> Check:
        check, found = _check_paths(model, root, policy.allowed_roots)
        rejected_paths.update(found)
        return check

    checks.append(_guarded("policy.paths", paths))
    checks.append(_guarded("artifacts", lambda: _check_artifacts(model, root, policy.allowed_roots, rejected_paths)))
    checks.append(_guarded("repository", lambda: _check_repository(
        model, repo if repo is not None else gitinfo.snapshot(root, remote=False))))
    recheck_log: dict[str, tuple[Any, ...]] = {}

    def evidence() -> Check:
        result = _Result()
        _check_evidence_items(model, result)
        refused, outcomes = _check_rechecks(model, root, policy.recheck_allowlist, recheck or [], result, runner)
        recheck_log.update(rejected=tuple(refused), outcomes=tuple(outcomes))
        ran = "; rechecked as asked" if outcomes else "; commands not re-run"
        return result.to_check("evidence", f"{len(model.evidence)} evidence item(s) well-formed{ran}")

    checks.append(_guarded("evidence", evidence))
    rejected = recheck_log.get("rejected", tuple(refused_rechecks(recheck or [], policy.recheck_allowlist)))
    rechecks = recheck_log.get("outcomes", ())
    checks.append(_guarded("actionability", lambda: _check_actionability(model)))
    checks.append(_guarded("lineage", lambda: _check_lineage(model, root, known_ids)))
    return ValidationReport(tuple(checks), rejected_rechecks=rejected, rechecks=rechecks)
