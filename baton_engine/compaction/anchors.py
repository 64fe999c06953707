"""Anchors: the concrete handles of a compacted region (files, commands, errors, recurring ids).

Why: a brief written from captured records says what was decided, but after a compaction the
agent also needs the exact strings it was working with — which files it read or wrote, which
commands failed, the error text, the hash it kept quoting — to re-orient or to ``baton_recall`` them.
Every string is copied verbatim from the transcript's decoded text (message content, tool-call
argument values, tool-result fields), clipped only as a prefix, then redacted; nothing is
synthesized. Shapes follow hermes-agent 0.19.0's tools: ``read_file`` (path, offset, limit; the
result's ``content`` is ``N|line`` rows), ``write_file`` (path), ``patch`` (mode replace: path;
mode patch: V4A ``*** Update/Add/Delete File:`` headers), ``search_files`` (pattern, path) and
``terminal`` (command; the result is ``{"output", "exit_code", "error"}``).

Stated lines: a tool result's line that states a setting with its reason (``DB_PORT=6543  # agreed with ops``:
a ``KEY = VALUE`` / ``KEY: VALUE`` whose ``#`` or ``//`` comment holds a decision or constraint word) or a decision
under a label (``decided: ...``, ``agreed: ...``, ``decision: ...``, ``constraint: ...``). The rule is measured
(benchmarks/compaction/stated_lines_bench.py): it keeps 7 of the 22 tool-result facts of the paraphrase corpus and none of
its ~13k other lines, and flags 0.44 lines per 1,000 of the Python standard library (2.1 in this heavily
commented repository), so a long read costs the brief little. They go to the brief in a share of their own
(``continuity.STATED_SHARE``), not the anchors'.

Baton's own text is never an anchor: its blocks, notices and stubs (``markers.is_own_text``), the calls to its
tools and their answers (``markers.BATON_TOOLS``) give no error line and no identifier, and every token they
hold (handoff ids, refs) is kept out of the identifiers wherever else it recurs, as are enum values
(``ENUM_VALUES``): a record's status, an item kind, a todo state are vocabulary, not handles.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from baton_engine.messages.markers import BATON_TOOLS, PROVENANCE_RE, is_own_text, pruned_stated
from baton_engine.compaction.sanitize import own_words
from baton_engine.handoff import model
from baton_engine.handoff.capture import ITEM_FIELDS
from baton_engine.handoff.redact import assignment_hits, redact_text
from baton_engine.messages.entry import MessageKey, is_baton_key, json_object, message_key

MAX_ITEM_CHARS = 200
MAX_FILES = 100
MAX_COMMANDS = 60
MAX_ERRORS = 40
MAX_IDENTIFIERS = 30
MAX_STATED = 30
MAX_SCANNED_LINE = 400  # a stated line is a config or log line; longer ones are data, never scanned
WRITE_TOOLS = frozenset({"write_file", "patch"})
TODO_STATES = ("pending", "in_progress", "completed", "cancelled")  # Hermes' todo tool: an item's status
ENUM_VALUES = frozenset({
    *(value for kind in (model.Status, model.Flag, model.ActorType, model.ArtifactRole, model.EvidenceType,
                         model.Priority, model.CheckStatus, model.ValidationStatus, model.Relation, model.Trigger)
      for value in get_args(kind)),
    *ITEM_FIELDS, *ITEM_FIELDS.values(), *TODO_STATES,
})

_V4A_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)
_NUMBERED_LINE_RE = re.compile(r"^(\d+)\|", re.MULTILINE)
_SED_RANGE_RE = re.compile(r"^'?(\d+),(\d+)p'?$")
_SHELL_SPLIT_RE = re.compile(r"\|\||&&|[|;\n]")
_ERROR_RE = re.compile(
    r"traceback|(?:error|exception)\b|\bfailed\b|\bfailure\b|\bfatal\b|\bpanic(?:ked)?\b|^E\s{2,}\S",
    re.IGNORECASE,
)
_ERROR_WORDS = ("error", "exception", "traceback", "fail", "fatal", "panic")  # cheap filter before _ERROR_RE
# A setting with a comment: ``KEY = VALUE  # why`` (also ``KEY: VALUE``, ``// why``, after a ``path:88:`` prefix).
_COMMENTED_SETTING_RE = re.compile(
    r"(?:^|[\s:])[\"']?[A-Za-z_][\w.-]*[\"']?\s*[=:]\s*[^#\s/][^#]*?\s(?:#|//)\s*(?P<why>\S.*)$")
# ... whose comment says it was decided or is a constraint (a plain description of a field is not)
_WHY_RE = re.compile(r"\b(?:agreed|decided|decision|required|requires?|must|never|always|only|capped|because|"
                     r"policy|approved|do not|don't|not|no|dropped|deprecated|needs?|security|audit\w*)\b",
                     re.IGNORECASE)
_DECIDED_RE = re.compile(r"^\s*(?:[#>*-]+\s*)?(?:decided|decision|agreed|constraint)\s*:\s*[^=]+$", re.IGNORECASE)
_LABELS_RE = re.compile(r"decided|decision|agreed|constraint", re.IGNORECASE)  # cheap filter before _DECIDED_RE
_READ_ROW_RE = re.compile(r"^\s*\d+\|")  # read_file's ``N|`` row prefix
# str.splitlines' line breaks besides "\n"
_LINE_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_TOKEN_RE = re.compile(r"\w(?:[\w.#-]*\w)?")  # never ends in . # -
_IDENTIFIER_RE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # UUID
    r"|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}"  # hex hash
    r"|[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*[-_#]\d+[A-Za-z0-9]*"  # build-4821, PROJ-12, run_42
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+"  # CamelCase
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}",  # dotted.module.names
)


@dataclass(frozen=True)
class FileAnchor:
    path: str
    action: str  # read | written | searched
    lines: tuple[tuple[int, int], ...] = ()
    pattern: str | None = None


@dataclass(frozen=True)
class StatedLine:
    text: str  # the line, verbatim (a read_file row without its ``N|``), clipped and redacted
    source: str  # the file read or searched, the command, or the tool's name


@dataclass(frozen=True)
class CommandAnchor:
    command: str
    exit_code: int | None


@dataclass(frozen=True)
class Anchors:
    files: tuple[FileAnchor, ...] = ()
    commands: tuple[CommandAnchor, ...] = ()
    errors: tuple[str, ...] = ()
    identifiers: tuple[tuple[str, int], ...] = ()  # (text, number of messages it appears in)
    stated: tuple[StatedLine, ...] = ()  # settings and decisions stated in tool results, oldest first

    def to_state(self) -> dict[str, Any]:
        """JSON-able, for an extra field of the handoff record (no chat shape, no transcript key)."""
        return {
            "files": [{"path": f.path, "action": f.action, "lines": [list(r) for r in f.lines],
                       **({"pattern": f.pattern} if f.pattern is not None else {})} for f in self.files],
            "commands": [{"command": c.command, "exit_code": c.exit_code} for c in self.commands],
            "errors": list(self.errors),
            "identifiers": [{"text": text, "count": count} for text, count in self.identifiers],
            "stated": [{"text": line.text, "source": line.source} for line in self.stated],
        }

    def render(self, max_tokens: int, count_text: Callable[[str], int]) -> list[str]:
        """Brief lines whose newline-joined text costs at most ``max_tokens``.

        Drop order when over budget: recurring identifiers, then searches, then files read, then
        commands, then error lines, then files written; within each, the oldest first (recurring ids:
        the rarest first). Stated lines are not among them: they have their own share (``render_stated``).
        """
        groups = {
            "identifiers": [f"Recurring id: {text} (x{count})" for text, count in self.identifiers],
            "searched": [_file_line("Searched", f) for f in self.files if f.action == "searched"],
            "read": [_file_line("Read", f) for f in self.files if f.action == "read"],
            "commands": [f"Ran: {c.command}" + ("" if c.exit_code is None else f" (exit {c.exit_code})")
                         for c in self.commands],
            "errors": [f"Error seen: {line}" for line in self.errors],
            "written": [_file_line("Wrote", f) for f in self.files if f.action == "written"],
        }
        drop_sequence = [(name, index) for name, items in groups.items()
                         for index in (reversed(range(len(items))) if name == "identifiers" else range(len(items)))]
        shown_order = ("written", "read", "searched", "commands", "errors", "identifiers")

        def lines_after_dropping(count: int) -> list[str]:
            dropped = set(drop_sequence[:count])
            return [line for name in shown_order for index, line in enumerate(groups[name])
                    if (name, index) not in dropped]

        def fits(count: int) -> bool:
            lines = lines_after_dropping(count)
            return not lines or count_text("\n".join(lines)) <= max_tokens

        low, high = 0, len(drop_sequence)
        while low < high:  # the fewest drops that fit
            middle = (low + high) // 2
            if fits(middle):
                high = middle
            else:
                low = middle + 1
        while not fits(low):  # counts are only nearly monotone
            low += 1
        return lines_after_dropping(low)

    def render_stated(self, max_tokens: int, count_text: Callable[[str], int]) -> list[str]:
        """The newest stated lines whose newline-joined text costs at most ``max_tokens``, oldest first."""
        lines = [f"Stated in {line.source}: {line.text}" for line in self.stated]

        def fits(kept: int) -> bool:
            return kept == 0 or count_text("\n".join(lines[-kept:])) <= max_tokens

        low, high = 0, len(lines)
        while low < high:  # the most newest lines that fit
            middle = (low + high + 1) // 2
            if fits(middle):
                low = middle
            else:
                high = middle - 1
        while not fits(low):  # counts are only nearly monotone
            low -= 1
        return lines[len(lines) - low:]


def _file_line(verb: str, anchor: FileAnchor) -> str:
    ranges = ", ".join(f"{a}-{b}" for a, b in anchor.lines)
    return f"{verb}: {anchor.path}" + (f" lines {ranges}" if ranges else "") + (
        f" for {anchor.pattern}" if anchor.pattern else "")


def _clean(text: str) -> str | None:
    """Stripped, clipped to a prefix, redacted; None when nothing is left."""
    stripped = text.strip()[:MAX_ITEM_CHARS]
    return redact_text(stripped)[0] if stripped else None


def _cleaned(value: Any) -> str | None:
    return _clean(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class CallFacts:
    """One tool call of an assistant message, its strings already cleaned (what the anchors can show)."""

    id: str
    name: str
    paths: tuple[str | None, ...] = ()  # read_file / search_files path, or the files a write names
    pattern: str | None = None
    command: str | None = None  # terminal: the cleaned command (None: not a string command)
    reads: tuple[tuple[str | None, tuple[int, int] | None], ...] = ()  # terminal: cat / sed -n reads
    is_command: bool = False


@dataclass(frozen=True)
class ResultFacts:
    """A JSON tool result, as the call it answers needs it."""

    failed: bool
    read_range: tuple[int, int] | None
    exit_code: Any
    output_errors: tuple[str, ...]
    stated: tuple[str, ...] = ()  # its stated settings and decisions (``stated_lines``), cleaned


@dataclass(frozen=True)
class AnchorFacts:
    """What one message contributes to the anchors; a function of its ``MessageKey`` alone."""

    role: Any
    counted: bool  # a conversation message (not one of Baton's blocks, not system)
    calls: tuple[CallFacts, ...] = ()
    result: ResultFacts | None = None  # a tool message whose content is a JSON object
    errors: tuple[str, ...] = ()  # its own error lines (a tool's error field or raw text, a user's words)
    tokens: tuple[str, ...] = ()  # distinct tokens that may be identifiers, in first-appearance order
    hidden: tuple[str, ...] = ()  # tokens that are (part of) a secret here by their context (``API_KEY=<token>``)
    own: tuple[str, ...] = ()  # identifier-shaped tokens of Baton's own text here: never an identifier anywhere


def _error_lines(text: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in _candidate_lines(text)
                 if (line.startswith("E ") or any(w in line.lower() for w in _ERROR_WORDS)) and _ERROR_RE.search(line))


def stated_lines(text: str) -> tuple[str, ...]:
    """The lines of a tool result that state a setting with its reason or a labelled decision (module docstring),
    cleaned. Only a line with a comment marker (``#``, ``//``) or starting with a label is matched against the
    patterns: ~0.2 s per MB of source code here, most of it splitting lines."""
    found: list[str] = []
    for raw in text.split("\n"):
        if len(raw) > MAX_SCANNED_LINE:
            continue
        if "#" in raw or "//" in raw:
            line = _READ_ROW_RE.sub("", raw, count=1)
            setting = _COMMENTED_SETTING_RE.search(line)
            if not (setting and _WHY_RE.search(setting.group("why"))) and not _DECIDED_RE.match(line):
                continue
        elif ":" in raw and _LABELS_RE.search(raw):
            line = _READ_ROW_RE.sub("", raw, count=1)
            if not _DECIDED_RE.match(line):
                continue
        else:
            continue
        cleaned = _clean(line)
        if cleaned:
            found.append(cleaned)
    return tuple(dict.fromkeys(found))


def _candidate_lines(text: str) -> list[str]:
    """The lines of ``text`` (as ``str.splitlines`` cuts them) that hold an error word or start with ``E ``:
    found by substring search, so a long output costs a few scans, not a loop over its lines (none when it
    holds no error word and no ``E ``). Texts with other line breaks than ``\n``, or whose lower case changes
    length, take every line."""
    lowered = text.lower()
    if "E " not in text and not any(word in lowered for word in _ERROR_WORDS):
        return []
    if len(lowered) != len(text) or any(separator in text for separator in _LINE_BREAKS):
        return text.splitlines()
    hits = [0] if text.startswith("E ") else []
    for needle, haystack in [*((word, lowered) for word in _ERROR_WORDS), ("\nE ", text)]:
        at = haystack.find(needle)
        while at != -1:
            hits.append(at + 1 if needle == "\nE " else at)
            at = haystack.find(needle, at + 1)
    starts = sorted({text.rfind("\n", 0, at) + 1 for at in hits})
    return [text[start:end if (end := text.find("\n", start)) != -1 else len(text)] for start in starts]


def _string_leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _string_leaves(item)


def _read_range(result: dict[str, Any]) -> tuple[int, int] | None:
    numbers = _NUMBERED_LINE_RE.findall(str(result.get("content") or ""))
    return (int(numbers[0]), int(numbers[-1])) if numbers else None


def _terminal_reads(command: str) -> tuple[tuple[str | None, tuple[int, int] | None], ...]:
    """``cat FILE`` and ``sed -n 'A,Bp' FILE`` segments of a shell command; only verbatim tokens."""
    reads: list[tuple[str | None, tuple[int, int] | None]] = []
    for segment in _SHELL_SPLIT_RE.split(command):
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        if not words:
            continue
        if words[0] == "cat":
            reads += [(_clean(word), None) for word in words[1:] if not word.startswith("-") and word in segment]
        elif words[0] == "sed" and len(words) == 4 and words[1] == "-n":
            found = _SED_RANGE_RE.match(words[2])
            if found and words[3] in segment:
                reads.append((_clean(words[3]), (int(found.group(1)), int(found.group(2)))))
    return tuple(reads)


def _call_facts(call_id: str, name: str, args: dict[str, Any]) -> CallFacts:
    if name == "read_file":
        return CallFacts(call_id, name, (_cleaned(args.get("path")),))
    if name in WRITE_TOOLS:
        if name == "patch" and args.get("mode") == "patch" and isinstance(args.get("patch"), str):
            return CallFacts(call_id, name, tuple(_clean(path) for path in _V4A_FILE_RE.findall(args["patch"])))
        return CallFacts(call_id, name, (_cleaned(args.get("path")),))
    if name == "search_files":
        return CallFacts(call_id, name, (_cleaned(args.get("path")),), _cleaned(args.get("pattern")))
    if name == "terminal" and isinstance(args.get("command"), str):
        return CallFacts(call_id, name, command=_clean(args["command"]), reads=_terminal_reads(args["command"]),
                         is_command=True)
    return CallFacts(call_id, name)


def _candidates(text: str) -> dict[str, Any]:
    """``tokens`` and ``hidden`` of a text: its distinct identifier-shaped tokens in first-appearance order, and
    those inside the value of a secret-named assignment (the redactor's own detector), which redacting the
    token alone would not find. Plain words (all letters, lower case or capitalised) match no identifier shape."""
    tokens = tuple(t for t in dict.fromkeys(_TOKEN_RE.findall(text))
                   if not (t.isalpha() and (t.islower() or t.istitle())) and _IDENTIFIER_RE.fullmatch(t))
    if not tokens:
        return {}
    hidden = {t for hit in assignment_hits(text) for t in _TOKEN_RE.findall(text[hit.start:hit.end])}
    return {"tokens": tokens, "hidden": tuple(t for t in tokens if t in hidden)}


def anchor_facts(key: MessageKey) -> AnchorFacts:
    """The anchors one message contributes, from its key (tool-call arguments parsed from their JSON text)."""
    role, text = key.role, key.text
    if is_baton_key(key):  # a block: its handoff's id is Baton's (the brief inside quotes the session's own words)
        return AnchorFacts(role, False, own=tuple(m.group("short_id") for m in PROVENANCE_RE.finditer(text)))
    if role not in ("assistant", "tool", "user"):
        return AnchorFacts(role, False)
    if role == "assistant":
        parsed = [(call_id, name, json_object(arguments) or {}) for call_id, name, arguments in key.calls]
        leaves = "\n".join([text, *(s for _, name, args in parsed if name not in BATON_TOOLS
                                    for s in _string_leaves(args))])
        ours = "\n".join(s for _, name, args in parsed if name in BATON_TOOLS for s in _string_leaves(args))
        return AnchorFacts(role, True, tuple(_call_facts(*call) for call in parsed), **_candidates(leaves),
                           own=_candidates(ours).get("tokens", ()))
    if role == "tool" and is_own_text(text):  # a stub Baton put in place of an elided result (a pruned one keeps
        result = ResultFacts(False, None, None, (), pruned_stated(text))  # what its result stated: still stated)
        return AnchorFacts(role, True, result=result, own=_candidates(text).get("tokens", ()))
    if role == "tool":
        data = json_object(text)
        if data is None:
            result = ResultFacts(False, None, None, (), stated_lines(text))
            return AnchorFacts(role, True, result=result, errors=_error_lines(text), **_candidates(text))
        output = data.get("output")
        result = ResultFacts(bool(data.get("error")), _read_range(data), data.get("exit_code"),
                             _error_lines(output) if isinstance(output, str) else (),
                             stated_lines("\n".join(_string_leaves(data))))
        errors = _error_lines(data["error"]) if isinstance(data.get("error"), str) else ()
        return AnchorFacts(role, True, result=result, errors=errors, **_candidates("\n".join(_string_leaves(data))))
    words = own_words(text)
    return AnchorFacts(role, True, errors=_error_lines(words), **_candidates(words))


@dataclass
class _Collector:
    files: dict[tuple[str, str, str | None], list[tuple[int, int]]] = field(default_factory=dict)
    commands: list[CommandAnchor] = field(default_factory=list)
    errors: dict[str, None] = field(default_factory=dict)  # raw lines, cleaned at the end
    stated: dict[str, str] = field(default_factory=dict)  # line -> source, a repeat once at its newest place

    def file(self, path: str | None, action: str, lines: tuple[int, int] | None = None,
             pattern: str | None = None) -> None:
        if path is None:
            return
        ranges = self.files.setdefault((path, action, pattern), [])
        if lines is not None and lines not in ranges:
            ranges.append(lines)

    def error_lines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.errors.setdefault(line, None)

    def call(self, call: CallFacts, result: ResultFacts | None) -> None:
        failed = bool(result and result.failed)
        if call.name == "read_file" and not failed:
            self.file(call.paths[0], "read", result.read_range if result else None)
        elif call.name in WRITE_TOOLS and not failed:
            for path in call.paths:
                self.file(path, "written")
        elif call.name == "search_files":
            self.file(call.paths[0], "searched", pattern=call.pattern)
        elif call.is_command:
            exit_code = result.exit_code if result else None
            if call.command:
                code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
                self.commands.append(CommandAnchor(call.command, code))
            for path, lines in call.reads:
                self.file(path, "read", lines)
            if result is not None:
                self.error_lines(result.output_errors)
        if result is not None:
            source = (call.paths[0] if call.paths else None) or call.command or (
                f"a search for {call.pattern}" if call.pattern else call.name)
            for text in result.stated:
                self.stated.pop(text, None)
                self.stated[text] = source


def _recurring(token_lists: list[tuple[str, ...]], excluded: set[str]) -> tuple[tuple[str, int], ...]:
    """Identifier-shaped tokens found in at least two messages, most frequent first; secrets never (neither a
    token the redactor flags alone nor one ``excluded``, which holds those hidden by their context).

    Counting and first-appearance order are kept by C-level dict/Counter updates (the transcript can
    hold ~100k tokens); each message's tokens are already identifier-shaped (its scan tested them once)."""
    seen_in: Counter[str] = Counter()
    first: dict[str, None] = {}  # insertion order = first appearance (update never moves a key)
    for tokens in token_lists:
        seen_in.update(tokens)
        first.update(dict.fromkeys(tokens))
    rank = {token: index for index, token in enumerate(first)}
    candidates = [t for t, n in seen_in.items() if n >= 2 and t not in excluded]
    ranked = sorted(candidates, key=lambda t: (-seen_in[t], rank[t]))
    kept: list[tuple[str, int]] = []
    for token in ranked:
        if len(kept) == MAX_IDENTIFIERS:
            break
        if not redact_text(token)[1]:
            kept.append((token, seen_in[token]))
    return tuple(kept)


def extract_anchors(messages: Sequence[Any], facts: Sequence[AnchorFacts] | None = None) -> Anchors:
    """The anchors of a compacted region (OpenAI-format messages); pure and deterministic. ``facts``: each
    message's ``anchor_facts``, when the caller has them (compaction's memoised scan)."""
    conversation = [m for m in messages if isinstance(m, dict)]
    found = list(facts) if facts is not None else [anchor_facts(message_key(m)) for m in conversation]
    ours = {t for f in found for t in f.own}
    baton_calls = {call.id for f in found for call in f.calls if call.name in BATON_TOOLS}
    pairs = []
    for message, fact in zip(conversation, found, strict=True):
        if fact.role == "tool" and str(message.get("tool_call_id") or "") in baton_calls:
            ours.update(fact.tokens)  # an answer of Baton's own tools: its ids, statuses and refs
        elif fact.counted:
            pairs.append((message, fact))
    results = {str(m.get("tool_call_id") or ""): f.result for m, f in pairs if f.role == "tool"}
    collector = _Collector()
    for _message, fact in pairs:
        for call in fact.calls:
            collector.call(call, results.get(call.id))
        collector.error_lines(fact.errors)
    files = tuple(
        FileAnchor(path, action, tuple(ranges), pattern)
        for (path, action, pattern), ranges in list(collector.files.items())[-MAX_FILES:]
    )
    excluded = {f.path for f in files} | {t for _, f in pairs for t in f.hidden} | ours | ENUM_VALUES
    return Anchors(
        files=files,
        commands=tuple(_dedupe_commands(collector.commands))[-MAX_COMMANDS:],
        errors=tuple(dict.fromkeys(filter(None, map(_clean, list(collector.errors)[-MAX_ERRORS:])))),
        identifiers=_recurring([f.tokens for _, f in pairs], excluded),
        stated=tuple(StatedLine(text, source) for text, source in list(collector.stated.items())[-MAX_STATED:]),
    )


def _dedupe_commands(commands: list[CommandAnchor]) -> list[CommandAnchor]:
    """One entry per (command, exit code), at its LAST run: a re-run after a fix shows its new status."""
    last = {(c.command, c.exit_code): index for index, c in enumerate(commands)}
    return [commands[index] for index in sorted(last.values())]
