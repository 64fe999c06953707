"""The on-disk handoff store: project discovery, ``init``, legacy migration, atomic saves, safe listing.

Layout (baton-spec.md, Storage)::

    .baton/config.json
    .baton/handoffs/<YYYYMMDDTHHMMSSZ>--<short-id>.json   canonical records
    .baton/index.sqlite, .baton/cache/                     rebuildable, gitignored

Why so careful: records are the only durable state a resumed agent has. Every write goes to a
temp file in the same directory, is fsynced, renamed over the target and the directory fsynced,
all under an inter-process ``filelock`` (``.baton/store.lock``), so a reader sees either the old
or the new complete file and two writers never lose each other's records. Reading never
follows a symlink, never reads an oversized file, and never raises for one bad file: corrupt,
foreign or unsafe files are returned as ``StoreProblem`` entries next to the good records.
Before a write the record is checked for leftover secrets (``redact.contains_secret``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import ValidationError

from baton_engine.errors import ConflictError, NotFoundError, PolicyBlocked, UserInputError
from baton_engine.handoff import ids
from baton_engine.handoff.config import CONFIG_FILE_NAME, default_config_json
from baton_engine.handoff.model import (
    ACCEPTED_SCHEMA_IDS,
    IMMUTABLE_STATUSES,
    LEGACY_SCHEMA_ID,
    SCHEMA_ID,
    STATUS_TRANSITIONS,
    HandoffRecord,
    content_view,
)
from baton_engine.handoff.model import transition as transition_record
from baton_engine.handoff.redact import contains_secret, redact_text

BATON_DIR = ".baton"
LEGACY_DIR = ".threadline"
HANDOFFS_DIR = "handoffs"
CACHE_DIR = "cache"
LOCK_FILE = "store.lock"
GITIGNORE = "index.sqlite\ncache/\n*.lock\n.*.tmp\n"
MAX_RECORD_BYTES = 4 * 1024 * 1024
LOCK_TIMEOUT_SECONDS = 30.0
MIN_PREFIX_CHARS = 4
RECORD_NAME_RE = re.compile(r"^\d{8}T\d{6}Z--[0-9a-f]{8}\.json$")
_ID_REF_RE = re.compile(r"^[0-9a-fA-F-]+$")


@dataclass(frozen=True)
class ProjectPaths:
    """Where a project keeps its records; ``legacy`` is True for an unmigrated ``.threadline/``."""

    root: Path
    data_dir: Path
    legacy: bool = False

    @property
    def handoffs_dir(self) -> Path:
        return self.data_dir / HANDOFFS_DIR

    @property
    def config_path(self) -> Path:
        return self.data_dir / CONFIG_FILE_NAME


@dataclass(frozen=True)
class StoreEntry:
    path: Path
    record: HandoffRecord


@dataclass(frozen=True)
class StoreProblem:
    """A file in the store that is not a usable record.

    ``kind``: corrupt, foreign, invalid, oversized, duplicate, symlink, not_a_file, unreadable.
    ``reason`` completes the sentence "<file> ..." and never quotes file content.
    """

    path: Path
    kind: str
    reason: str


@dataclass(frozen=True)
class ListResult:
    entries: list[StoreEntry] = field(default_factory=list)
    problems: list[StoreProblem] = field(default_factory=list)


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def find_project_root(start: Path) -> ProjectPaths | None:
    """Walk up from ``start`` to the nearest directory holding ``.baton/`` (else ``.threadline/``)."""
    here = Path(start).resolve()
    for directory in (here, *here.parents):
        if _real_dir(directory / BATON_DIR):
            return ProjectPaths(directory, directory / BATON_DIR, legacy=False)
        if _real_dir(directory / LEGACY_DIR):
            return ProjectPaths(directory, directory / LEGACY_DIR, legacy=True)
    return None


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


TEMP_SUFFIX = ".tmp"  # atomic_write's temp files: ".<target name>.<random>.tmp" beside the target
STALE_TEMP_SECONDS = 600  # a live write holds its temp file for milliseconds; one this old lost its writer


def atomic_write(target: Path, data: bytes) -> None:
    """Temp file in the target's directory, fsync, rename over the target, fsync the directory."""
    directory = target.parent
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    _fsync_dir(directory)


def stale_temp_files(data_dir: Path, *, now: float | None = None,
                     older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """``atomic_write`` temp files under ``data_dir`` that no writer holds any more (a process killed between
    write and rename leaves one); symlinked directories are not followed."""
    cutoff = (time.time() if now is None else now) - older_than
    found = []
    for directory, _dirs, files in os.walk(data_dir, followlinks=False):
        for name in files:
            path = Path(directory) / name
            if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)) or path.is_symlink():
                continue
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < cutoff:
                    found.append(path)
    return sorted(found)


def _ensure_dir(path: Path, root: Path, created: list[str]) -> None:
    if path.is_symlink():
        raise PolicyBlocked(
            f"{_relative(root, path)} is a symlink; Baton only writes real directories inside the project"
        )
    if not path.exists():
        path.mkdir()
        created.append(_relative(root, path))
    elif not path.is_dir():
        raise UserInputError(f"{_relative(root, path)} exists and is not a directory; move it away and retry")


def _ensure_file(path: Path, root: Path, content: str, created: list[str]) -> None:
    if path.is_symlink():
        raise PolicyBlocked(f"{_relative(root, path)} is a symlink; Baton refuses to write through it")
    if not path.exists():
        atomic_write(path, content.encode("utf-8"))
        created.append(_relative(root, path))


def init_project(root: Path, *, migrate_legacy: bool = False) -> dict[str, Any]:
    """Create (or complete) ``.baton/`` in ``root``: config with defaults, handoffs/, cache/, .gitignore.

    Idempotent; never runs git or touches any git config. A legacy ``.threadline/`` is moved only
    when ``migrate_legacy`` is set, otherwise init refuses so the records are not split in two.
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise UserInputError(f"{root} is not a directory; pass an existing project directory")
    migrated: dict[str, Any] | None = None
    if _real_dir(root / LEGACY_DIR) and not (root / BATON_DIR).exists():
        if not migrate_legacy:
            raise ConflictError(
                f"{root / LEGACY_DIR} holds a legacy Baton store; run `baton init --migrate-legacy` to move it to "
                f"{BATON_DIR}/ (or keep using it: every command reads it as is)"
            )
        migrated = _migrate(root, dry_run=False)
    data_dir = root / BATON_DIR
    created: list[str] = []
    _ensure_dir(data_dir, root, created)
    _ensure_dir(data_dir / HANDOFFS_DIR, root, created)
    _ensure_dir(data_dir / CACHE_DIR, root, created)
    _ensure_file(data_dir / CONFIG_FILE_NAME, root, default_config_json(), created)
    _ensure_file(data_dir / ".gitignore", root, GITIGNORE, created)
    return {
        "root": str(root),
        "data_dir": BATON_DIR,
        "created": created,
        "migrated": migrated,
        "config": f"{BATON_DIR}/{CONFIG_FILE_NAME}",
    }


def migrate_legacy(root: Path, *, dry_run: bool = True) -> dict[str, Any]:
    """Move ``.threadline/`` to ``.baton/`` and rewrite each record's legacy ``$schema`` (nothing else).

    ``dry_run`` (the default) only reports what would change. Unreadable records are moved
    untouched and listed under ``skipped``.
    """
    return _migrate(Path(root).resolve(), dry_run=dry_run)


def _legacy_rewrites(handoffs: Path) -> tuple[list[Path], list[dict[str, str]], int]:
    rewrite: list[Path] = []
    skipped: list[dict[str, str]] = []
    count = 0
    if not _real_dir(handoffs):
        return rewrite, skipped, count
    for path in sorted(handoffs.iterdir()):
        if path.name.startswith(".") or path.suffix != ".json":
            continue
        count += 1
        data, problem = _read_json(path)
        if data is None:
            skipped.append({"file": path.name, "problem": problem[1] if problem else "unreadable"})
        elif data.get("$schema") == LEGACY_SCHEMA_ID:
            rewrite.append(path)
    return rewrite, skipped, count


def _migrate(root: Path, *, dry_run: bool) -> dict[str, Any]:
    legacy, target = root / LEGACY_DIR, root / BATON_DIR
    if not _real_dir(legacy):
        raise NotFoundError(f"no legacy {LEGACY_DIR}/ directory in {root}; nothing to migrate")
    if target.exists() or target.is_symlink():
        raise ConflictError(f"{target} already exists; merge or remove one of {LEGACY_DIR}/ and {BATON_DIR}/ by hand")
    rewrite, skipped, count = _legacy_rewrites(legacy / HANDOFFS_DIR)
    names = [f"{HANDOFFS_DIR}/{path.name}" for path in rewrite]
    result = {
        "dry_run": dry_run,
        "legacy_dir": LEGACY_DIR,
        "target_dir": BATON_DIR,
        "records": count,
        "rewritten": names,
        "skipped": skipped,
    }
    if dry_run:
        return result
    with FileLock(str(legacy / LOCK_FILE), timeout=LOCK_TIMEOUT_SECONDS):
        os.rename(legacy, target)
    _fsync_dir(root)
    for path in rewrite:
        moved = target / HANDOFFS_DIR / path.name
        data, _problem = _read_json(moved)
        if data is not None:
            data["$schema"] = SCHEMA_ID
            atomic_write(moved, _encode(data))
    return result


def _encode(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


ReadProblem = tuple[str, str]  # (kind, reason)


def _read_json(path: Path) -> tuple[dict[str, Any] | None, ReadProblem | None]:
    """Decode one store file without following symlinks; ``(None, (kind, reason))`` on any problem."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, ("symlink", "is a symlink; records must be regular files inside the project")
        return None, ("unreadable", f"cannot be opened ({type(exc).__name__})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, ("not_a_file", "is not a regular file")
        if info.st_size > MAX_RECORD_BYTES:
            return None, ("oversized", f"is {info.st_size} bytes; records are at most {MAX_RECORD_BYTES} bytes")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            # the file's size, not the bound: read(n) allocates n bytes first, 4 MB a record for a 6 KB file
            raw = handle.read(info.st_size + 1)
            if len(raw) > info.st_size:  # it grew since fstat: the rest, up to the bound
                raw += handle.read(MAX_RECORD_BYTES + 1 - len(raw))
    finally:
        os.close(fd)
    if len(raw) > MAX_RECORD_BYTES:
        return None, ("oversized", f"is larger than {MAX_RECORD_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, ("corrupt", "is not UTF-8 text")
    except json.JSONDecodeError as exc:
        return None, ("corrupt", f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})")
    if not isinstance(data, dict):
        return None, ("foreign", f"holds a JSON {type(data).__name__}, not a handoff object")
    return data, None


def _parse_record(data: dict[str, Any]) -> tuple[HandoffRecord | None, ReadProblem | None]:
    if data.get("$schema") not in ACCEPTED_SCHEMA_IDS or data.get("kind") != "handoff":
        return None, ("foreign", "is not a Baton v0.1 handoff ($schema / kind do not match)")
    try:
        return HandoffRecord.model_validate(data), None
    except ValidationError as exc:
        fields = sorted({".".join(str(part) for part in err["loc"]) or "(top level)" for err in exc.errors()})
        return None, ("invalid", f"fails the record schema at: {', '.join(fields[:10])}")


def _read_record(path: Path) -> tuple[HandoffRecord | None, ReadProblem | None]:
    """One store file as a record (safe read, then schema check); ``(None, (kind, reason))`` on any problem."""
    data, problem = _read_json(path)
    return _parse_record(data) if data is not None else (None, problem)


def record_file_name(record: HandoffRecord) -> str:
    """``<YYYYMMDDTHHMMSSZ>--<short-id>.json``: built only from parsed time and hex digits, so path-safe."""
    name = f"{ids.file_stamp(record.created_at)}--{record.short_id.lower()}.json"
    if not RECORD_NAME_RE.match(name):
        raise UserInputError(f"record {record.id} cannot be given a safe file name; its id must be a UUID")
    return name


def _is_canonical(entry: StoreEntry) -> bool:
    return entry.path.name == record_file_name(entry.record)


def _displaces(held_canonical: bool | None, canonical: bool) -> bool:
    """The one rule for copies of one id (``list`` and ``latest``), read in file name order: the first copy is
    kept (``held_canonical`` None: none kept yet) unless a later one is canonically named and the kept one is not."""
    return held_canonical is None or (canonical and not held_canonical)


def _order(entry: StoreEntry) -> tuple[Any, str]:
    """Where a record stands in the store: by creation time, then id (``list``'s order)."""
    return ids.parse_timestamp(entry.record.created_at), entry.record.id


class HandoffStore:
    """Records of one project. Safe for concurrent use by several processes."""

    def __init__(self, paths: ProjectPaths) -> None:
        self.paths = paths
        self._lock = FileLock(str(paths.data_dir / LOCK_FILE), timeout=LOCK_TIMEOUT_SECONDS)

    # --- locking and path safety ------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's inter-process lock (re-entrant within this store object)."""
        self._check_inside(self.paths.data_dir)
        try:
            with self._lock:
                yield
        except Timeout:
            raise ConflictError(
                f"the handoff store is locked by another process for over {LOCK_TIMEOUT_SECONDS:.0f}s; retry, "
                f"or remove {self.paths.data_dir / LOCK_FILE} if no Baton process is running"
            ) from None

    def _check_inside(self, path: Path) -> None:
        root = self.paths.root.resolve()
        try:
            path.resolve().relative_to(root)
        except ValueError:
            raise PolicyBlocked(
                f"{path} resolves outside the project root {root} (a symlink?); Baton never writes outside it"
            ) from None
        if path.is_symlink():
            raise PolicyBlocked(f"{path} is a symlink; Baton writes only real files and directories in the store")

    # --- reading --------------------------------------------------------------------------------------

    def list(self) -> ListResult:
        """Every readable record (oldest first) and every problem file; never raises for a bad file."""
        kept: dict[str, StoreEntry] = {}
        extras: list[StoreEntry] = []
        problems: list[StoreProblem] = []
        for entry in self._scan(problems):
            held = kept.get(entry.record.id)
            if _displaces(None if held is None else _is_canonical(held), _is_canonical(entry)):
                kept[entry.record.id], displaced = entry, held
            else:
                displaced = entry
            if displaced is not None:
                extras.append(displaced)
        for extra in extras:  # any other copy of a kept id is reported
            problems.append(StoreProblem(extra.path, "duplicate", f"repeats record {extra.record.short_id} "
                                         f"stored in {kept[extra.record.id].path.name}"))
        entries = list(kept.values())
        problems.sort(key=lambda problem: problem.path.name)
        entries.sort(key=_order)
        return ListResult(entries, problems)

    def _scan(self, problems: list[StoreProblem]) -> Iterator[StoreEntry]:
        """The store's readable records one at a time, in file name order; problem files go to ``problems``."""
        handoffs = self.paths.handoffs_dir
        if not handoffs.exists() and not handoffs.is_symlink():
            return
        try:
            self._check_inside(handoffs)
            names = sorted(os.listdir(handoffs))
        except PolicyBlocked as exc:
            problems.append(StoreProblem(handoffs, "symlink", str(exc)))
            return
        except OSError as exc:
            problems.append(StoreProblem(handoffs, "unreadable", f"cannot be listed ({type(exc).__name__})"))
            return
        for name in names:
            if name.startswith("."):  # in-flight temp files and dotfiles are never records
                continue
            path = handoffs / name
            if not name.endswith(".json"):
                problems.append(StoreProblem(path, "foreign", "is not a .json handoff file"))
                continue
            record, problem = _read_record(path)
            if record is None:
                assert problem is not None
                problems.append(StoreProblem(path, problem[0], problem[1]))
                continue
            yield StoreEntry(path, record)

    def _load_path(self, path: Path) -> StoreEntry:
        candidate = path if path.is_absolute() else Path.cwd() / path
        try:
            candidate.parent.resolve().relative_to(self.paths.root.resolve())
        except ValueError:
            raise PolicyBlocked(
                f"{path} is outside the project root {self.paths.root}; Baton reads only inside it"
            ) from None
        record, problem = _read_record(candidate)
        if record is None:
            assert problem is not None
            if problem[0] == "unreadable" and not candidate.exists():
                raise NotFoundError(f"no handoff file {path}")
            raise UserInputError(f"{path} {problem[1]}")
        return StoreEntry(candidate, record)

    def _entry(self, ref: str, where: Callable[[HandoffRecord], bool] | None = None) -> StoreEntry:
        """``where`` limits what ``ref`` can name: a record it refuses is "not found", never named."""
        entry = self._find(ref, where)
        if where is not None and not where(entry.record):
            raise NotFoundError(f"no handoff matches {ref.strip()!r}; run `baton handoff list` to see the ids")
        return entry

    def _find(self, ref: str, where: Callable[[HandoffRecord], bool] | None) -> StoreEntry:
        if not isinstance(ref, str) or not ref.strip():
            raise UserInputError("a handoff reference is needed: a full id, a short id, an id prefix or a file path")
        ref = ref.strip()
        if not _ID_REF_RE.match(ref):
            if "/" in ref or os.sep in ref or ref.endswith(".json"):
                return self._load_path(Path(ref))
            raise NotFoundError(f"no handoff {ref!r}: references are ids (hex digits and dashes) or .json paths")
        wanted = ref.lower()
        named = self._canonical(wanted, where) if len(wanted.replace("-", "")) == 32 else None
        if named is not None:
            return named
        matches = [
            entry for entry in self.list().entries
            if (where is None or where(entry.record))
            and (entry.record.id.lower() == wanted or entry.record.short_id.lower() == wanted
                 or (len(wanted) >= MIN_PREFIX_CHARS and entry.record.id.lower().startswith(wanted)))
        ]
        if not matches:
            raise NotFoundError(f"no handoff matches {ref!r}; run `baton handoff list` to see the ids")
        exact = [entry for entry in matches if entry.record.id.lower() == wanted]
        if len(matches) > 1 and not exact:
            shown = ", ".join(entry.record.short_id for entry in matches[:10])
            raise ConflictError(f"{ref!r} matches {len(matches)} handoffs ({shown}); give more of the id")
        return (exact or matches)[0]

    def load(self, ref: str, where: Callable[[HandoffRecord], bool] | None = None) -> HandoffRecord:
        """The record named by a full id, short id, unique id prefix (>= 4 chars) or file path (among those
        ``where`` admits)."""
        return self._entry(ref, where).record

    def path_of(self, ref: str) -> Path:
        """The file that holds the record named by ``ref``."""
        return self._entry(ref).path

    def latest(self, status: str | None = "ready",
               where: Callable[[HandoffRecord], bool] | None = None) -> HandoffRecord | None:
        """The newest record with ``status`` (any status when None) that ``where`` admits, or None (as ``list``
        orders and de-duplicates them).

        Why not ``list()``: every session start on a gateway asks, and holding every parsed record at once made
        the process's peak, and so its RSS, grow with the store (~100 KB a record; benchmarks/FINDINGS.md, "A busy
        gateway"). Records are read one at a time; only each id's winning file and its order are kept."""
        def admits(record: HandoffRecord) -> bool:
            return (status is None or record.status == status) and (where is None or where(record))

        winners: dict[str, tuple[bool, Path, tuple[Any, str] | None]] = {}  # id -> (canonical, file, order if wanted)
        for entry in self._scan([]):
            held = winners.get(entry.record.id)
            canonical = _is_canonical(entry)
            if _displaces(None if held is None else held[0], canonical):
                winners[entry.record.id] = (canonical, entry.path, _order(entry) if admits(entry.record) else None)
        found = [(order, path) for _, path, order in winners.values() if order is not None]
        if not found:
            return None
        path = max(found, key=lambda item: item[0])[1]
        record, _ = _read_record(path)
        if record is not None and admits(record):
            return record
        # changed since it was read (another process wrote the store): the slow, exact way
        matching = [entry.record for entry in self.list().entries if admits(entry.record)]
        return matching[-1] if matching else None

    # --- writing --------------------------------------------------------------------------------------

    def _check_change(self, old: HandoffRecord, new: HandoffRecord) -> None:
        if new.status != old.status and new.status not in STATUS_TRANSITIONS.get(old.status, frozenset()):
            raise ConflictError(
                f"handoff {old.short_id} is {old.status!r} and cannot become {new.status!r}; "
                f"allowed: {', '.join(sorted(STATUS_TRANSITIONS[old.status])) or 'none'}"
            )
        if old.status in IMMUTABLE_STATUSES and content_view(old) != content_view(new):
            raise ConflictError(
                f"handoff {old.short_id} is {old.status!r} and immutable; record the change as a new handoff "
                "(`amend` or `continue`)"
            )

    def save(self, record: HandoffRecord, *, redacted: bool = False) -> Path:
        """Write ``record`` atomically; returns its file. Ready and later records change only in status.

        ``redacted``: the caller attests the record went through capture's redaction in this process and
        holds no text added since (the compaction cycle), so the leftover-secret scan is skipped."""
        if not isinstance(record, HandoffRecord):
            raise UserInputError(f"save() takes a HandoffRecord, not {type(record).__name__}")
        data = record.to_json_dict()
        checked = HandoffRecord.model_validate(data)  # assignment may have bypassed nested validation
        payload = _encode(data)
        if len(payload) > MAX_RECORD_BYTES:
            raise UserInputError(
                f"handoff {record.short_id} is {len(payload)} bytes; records are at most {MAX_RECORD_BYTES} bytes. "
                "Keep evidence output as digests and short summaries"
            )
        leaks = [] if redacted else contains_secret({k: v for k, v in data.items() if k != "redactions"})
        if leaks:
            raise PolicyBlocked(f"handoff {record.short_id} still holds secret-like values at: {', '.join(leaks)}; "
                                "redact before saving")
        target = self.paths.handoffs_dir / record_file_name(checked)
        with self.locked():
            self._check_inside(self.paths.handoffs_dir)
            if target.is_symlink():
                raise PolicyBlocked(f"{target.name} is a symlink in the store; remove it and retry")
            previous = self._previous(checked)
            if previous is not None:
                self._check_change(previous.record, checked)
            elif target.exists():
                raise ConflictError(f"{target.name} exists and holds another record; the store needs attention")
            atomic_write(target, payload)
            if previous is not None and previous.path != target:
                previous.path.unlink()
                _fsync_dir(previous.path.parent)
        return target

    def _canonical(self, record_id: str, where: Callable[[HandoffRecord], bool] | None) -> StoreEntry | None:
        """The record of a full id from its canonically named file (the one ``list`` keeps), reading the files
        its short id names, not the store: a compaction loads the handoff it continues, and a listing held every
        record at once (benchmarks/FINDINGS.md, "A busy gateway"). None: ask ``list`` (a copy under another name,
        or a store ``list`` reports as a problem)."""
        try:
            self._check_inside(self.paths.handoffs_dir)
        except PolicyBlocked:
            return None
        for path in sorted(self.paths.handoffs_dir.glob(f"*--{record_id.replace('-', '')[-8:]}.json")):
            stored, _problem = _read_record(path)
            if stored is None or stored.id.lower() != record_id:
                continue
            entry = StoreEntry(path, stored)
            if _is_canonical(entry):
                return entry if where is None or where(stored) else None
        return None

    def _previous(self, record: HandoffRecord) -> StoreEntry | None:
        """The stored version of ``record`` (found by its short id, so a save reads one file, not all)."""
        for path in sorted(self.paths.handoffs_dir.glob(f"*--{record.short_id.lower()}.json")):
            stored, _problem = _read_record(path)
            if stored is not None and stored.id == record.id:
                return StoreEntry(path, stored)
        return None

    def transition(self, ref: str, new_status: str, reason: str | None = None) -> HandoffRecord:
        """Move a stored record to ``new_status`` (see ``model.STATUS_TRANSITIONS``); the reason is redacted."""
        if reason is not None:
            reason, _reasons = redact_text(reason)
        with self.locked():
            moved = transition_record(self.load(ref), new_status, reason=reason)
            self.save(moved)
        return moved
