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
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from baton_engine.compaction.markers import is_baton_message, message_text
from baton_engine.compaction.sanitize import own_words
from baton_engine.handoff.redact import redact_text
from baton_engine.recall.entry import json_object

MAX_ITEM_CHARS = 200
MAX_FILES = 100
MAX_COMMANDS = 60
MAX_ERRORS = 40
MAX_IDENTIFIERS = 30
WRITE_TOOLS = frozenset({"write_file", "patch"})

_V4A_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)
_NUMBERED_LINE_RE = re.compile(r"^(\d+)\|", re.MULTILINE)
_SED_RANGE_RE = re.compile(r"^'?(\d+),(\d+)p'?$")
_SHELL_SPLIT_RE = re.compile(r"\|\||&&|[|;\n]")
_ERROR_RE = re.compile(
    r"traceback|(?:error|exception)\b|\bfailed\b|\bfailure\b|\bfatal\b|\bpanic(?:ked)?\b|^E\s{2,}\S",
    re.IGNORECASE,
)
_ERROR_WORDS = ("error", "exception", "traceback", "fail", "fatal", "panic")  # cheap filter before _ERROR_RE
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
class CommandAnchor:
    command: str
    exit_code: int | None


@dataclass(frozen=True)
class Anchors:
    files: tuple[FileAnchor, ...] = ()
    commands: tuple[CommandAnchor, ...] = ()
    errors: tuple[str, ...] = ()
    identifiers: tuple[tuple[str, int], ...] = ()  # (text, number of messages it appears in)

    def to_state(self) -> dict[str, Any]:
        """JSON-able, for an extra field of the handoff record (no chat shape, no transcript key)."""
        return {
            "files": [{"path": f.path, "action": f.action, "lines": [list(r) for r in f.lines],
                       **({"pattern": f.pattern} if f.pattern is not None else {})} for f in self.files],
            "commands": [{"command": c.command, "exit_code": c.exit_code} for c in self.commands],
            "errors": list(self.errors),
            "identifiers": [{"text": text, "count": count} for text, count in self.identifiers],
        }

    def render(self, max_tokens: int, count_text: Callable[[str], int]) -> list[str]:
        """Brief lines whose newline-joined text costs at most ``max_tokens``.

        Drop order when over budget: recurring identifiers, then searches, then files read, then
        commands, then error lines, then files written; within each, the oldest first (recurring ids:
        the rarest first).
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


def _file_line(verb: str, anchor: FileAnchor) -> str:
    ranges = ", ".join(f"{a}-{b}" for a, b in anchor.lines)
    return f"{verb}: {anchor.path}" + (f" lines {ranges}" if ranges else "") + (
        f" for {anchor.pattern}" if anchor.pattern else "")


def _clean(text: str) -> str | None:
    """Stripped, clipped to a prefix, redacted; None when nothing is left."""
    stripped = text.strip()[:MAX_ITEM_CHARS]
    return redact_text(stripped)[0] if stripped else None


@dataclass
class _Collector:
    files: dict[tuple[str, str, str | None], list[tuple[int, int]]] = field(default_factory=dict)
    commands: list[CommandAnchor] = field(default_factory=list)
    errors: dict[str, None] = field(default_factory=dict)  # raw lines, cleaned at the end
    texts: list[str] = field(default_factory=list)  # one per message, for recurring identifiers

    def file(self, path: Any, action: str, lines: tuple[int, int] | None = None, pattern: Any = None) -> None:
        clean = _clean(path) if isinstance(path, str) else None
        if clean is None:
            return
        ranges = self.files.setdefault((clean, action, _clean(pattern) if isinstance(pattern, str) else None), [])
        if lines is not None and lines not in ranges:
            ranges.append(lines)

    def error_lines(self, text: str) -> None:
        for line in _candidate_lines(text):
            lowered = line.lower()
            if (line.startswith("E ") or any(w in lowered for w in _ERROR_WORDS)) and _ERROR_RE.search(line):
                self.errors.setdefault(line.strip(), None)


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


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    raw = function.get("arguments")
    if isinstance(raw, dict):
        return raw
    return (json_object(raw) or {}) if isinstance(raw, str) else {}


def _string_leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _string_leaves(item)


def _read_range(result: dict[str, Any] | None) -> tuple[int, int] | None:
    numbers = _NUMBERED_LINE_RE.findall(str((result or {}).get("content") or ""))
    return (int(numbers[0]), int(numbers[-1])) if numbers else None


def _terminal_reads(command: str, collector: _Collector) -> None:
    """``cat FILE`` and ``sed -n 'A,Bp' FILE`` segments of a shell command; only verbatim tokens."""
    for segment in _SHELL_SPLIT_RE.split(command):
        try:
            words = shlex.split(segment)
        except ValueError:
            continue
        if not words:
            continue
        if words[0] == "cat":
            for word in words[1:]:
                if not word.startswith("-") and word in segment:
                    collector.file(word, "read")
        elif words[0] == "sed" and len(words) == 4 and words[1] == "-n":
            found = _SED_RANGE_RE.match(words[2])
            if found and words[3] in segment:
                collector.file(words[3], "read", (int(found.group(1)), int(found.group(2))))


def _tool_call(name: str, args: dict[str, Any], result: dict[str, Any] | None, collector: _Collector) -> None:
    failed = bool(result and result.get("error"))
    if name == "read_file" and not failed:
        collector.file(args.get("path"), "read", _read_range(result))
    elif name in WRITE_TOOLS and not failed:
        if name == "patch" and args.get("mode") == "patch" and isinstance(args.get("patch"), str):
            for path in _V4A_FILE_RE.findall(args["patch"]):
                collector.file(path, "written")
        else:
            collector.file(args.get("path"), "written")
    elif name == "search_files":
        collector.file(args.get("path"), "searched", pattern=args.get("pattern"))
    elif name == "terminal" and isinstance(args.get("command"), str):
        command = _clean(args["command"])
        exit_code = (result or {}).get("exit_code")
        if command:
            code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
            collector.commands.append(CommandAnchor(command, code))
        _terminal_reads(args["command"], collector)
        if isinstance((result or {}).get("output"), str):
            collector.error_lines(result["output"])


def _recurring(texts: list[str], excluded: set[str]) -> tuple[tuple[str, int], ...]:
    """Identifier-shaped tokens found in at least two messages, most frequent first; secrets never.

    Counting and first-appearance order are kept by C-level dict/Counter updates (the transcript can
    hold ~100k tokens); the identifier shape is tested once per distinct token that recurs."""
    seen_in: Counter[str] = Counter()
    first: dict[str, None] = {}  # insertion order = first appearance (update never moves a key)
    for text in texts:
        unique = dict.fromkeys(_TOKEN_RE.findall(text))
        seen_in.update(unique.keys())
        first.update(unique)
    rank = {token: index for index, token in enumerate(first)}
    candidates = [t for t, n in seen_in.items() if n >= 2 and t not in excluded and _IDENTIFIER_RE.fullmatch(t)]
    ranked = sorted(candidates, key=lambda t: (-seen_in[t], rank[t]))
    kept: list[tuple[str, int]] = []
    for token in ranked:
        if len(kept) == MAX_IDENTIFIERS:
            break
        if not redact_text(token)[1]:
            kept.append((token, seen_in[token]))
    return tuple(kept)


def extract_anchors(messages: Iterable[Any]) -> Anchors:
    """The anchors of a compacted region (OpenAI-format messages); pure and deterministic."""
    collector = _Collector()
    conversation = [m for m in messages if isinstance(m, dict) and not is_baton_message(m)]
    decoded = {id(m): json_object(message_text(m)) for m in conversation if m.get("role") == "tool"}  # once each
    results = {m.get("tool_call_id"): decoded[id(m)] for m in conversation if m.get("role") == "tool"}
    for message in conversation:
        role, text = message.get("role"), message_text(message)
        if role == "assistant":
            calls = [c for c in message.get("tool_calls") or []
                     if isinstance(c, dict) and isinstance((c.get("function") or {}).get("name"), str)]
            arguments = [_arguments(call) for call in calls]
            collector.texts.append("\n".join([text, *(s for args in arguments for s in _string_leaves(args))]))
            for call, args in zip(calls, arguments, strict=True):
                _tool_call(call["function"]["name"], args, results.get(call.get("id")), collector)
        elif role == "tool":
            data = decoded[id(message)]
            collector.texts.append("\n".join(_string_leaves(data)) if data is not None else text)
            if data is None:
                collector.error_lines(text)
            elif isinstance(data.get("error"), str):
                collector.error_lines(data["error"])
        elif role == "user":
            collector.texts.append(own_words(text))
            collector.error_lines(own_words(text))
    files = tuple(
        FileAnchor(path, action, tuple(ranges), pattern)
        for (path, action, pattern), ranges in list(collector.files.items())[-MAX_FILES:]
    )
    excluded = {f.path for f in files}
    return Anchors(
        files=files,
        commands=tuple(_dedupe_commands(collector.commands))[-MAX_COMMANDS:],
        errors=tuple(dict.fromkeys(filter(None, map(_clean, list(collector.errors)[-MAX_ERRORS:])))),
        identifiers=_recurring(collector.texts, excluded),
    )


def _dedupe_commands(commands: list[CommandAnchor]) -> list[CommandAnchor]:
    """One entry per (command, exit code), at its LAST run: a re-run after a fix shows its new status."""
    last = {(c.command, c.exit_code): index for index, c in enumerate(commands)}
    return [commands[index] for index in sorted(last.values())]
