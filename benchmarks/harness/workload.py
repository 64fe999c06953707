"""Deterministic tool-heavy agent sessions with planted needles (no downloads, no randomness across runs).

Why generated and not recorded: the benchmark must run offline and give the same bytes on every machine,
and the needles must sit at known places so retention can be scored exactly. A turn is what Hermes'
main loop produces: a user request, an assistant message with 1-3 parallel tool calls, one result per
call (sizes from a few lines to a multi-thousand-token file read), and a closing assistant message.

Needles (every one a unique string, checked verbatim after compaction):
- ``identifier``: a build id that appears only in a command's output;
- ``path``: a project file the agent reads (the file exists in the benchmark project);
- ``error``: an error line in a test run, also recorded as evidence through ``baton_capture``;
- ``decision``: a decision recorded through ``baton_capture`` (the captured-records score).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]
NEEDLE_KINDS = ("identifier", "path", "error", "decision")
WORDS = (
    "parser cache request handler retry module build test fixture schema token budget window migration "
    "config loader index query latency commit branch review patch import error warning timeout socket worker "
    "queue batch record field column release deploy metric trace span ledger invoice account balance "
    "settlement payout refund currency rounding scheduler cron lease shard replica snapshot compaction"
).split()
CODENAMES = ("kestrel", "osprey", "heron", "plover", "merlin", "avocet", "bittern", "curlew", "dunlin", "egret",
             "fulmar", "gannet", "harrier", "ibis", "jacana", "kittiwake", "lapwing", "murre", "nightjar", "oriole")
SYSTEM_PROMPT = (
    "You are Hermes, an autonomous software engineering agent working in a git repository. Use the tools to "
    "read files, run commands and search the code. Record durable decisions, evidence and open items with "
    "baton_capture so they survive context compaction. Keep answers short and precise."
)

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file of the project.",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                     "required": ["path"]}}},
    {"type": "function", "function": {"name": "run_command", "description": "Run a shell command in the project.",
                                      "parameters": {"type": "object",
                                                     "properties": {"command": {"type": "string"}},
                                                     "required": ["command"]}}},
    {"type": "function", "function": {"name": "search_code", "description": "Search the code for a pattern.",
                                      "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                                     "required": ["query"]}}},
    {"type": "function", "function": {"name": "baton_capture",
                                      "description": "Record durable work state for the next Baton handoff.",
                                      "parameters": {"type": "object",
                                                     "properties": {"kind": {"type": "string"},
                                                                    "item": {"type": "object"}},
                                                     "required": ["kind"]}}},
]


@dataclass(frozen=True)
class Needle:
    """One planted fact: its kind, the verbatim string to look for, and the turn it was planted in."""

    kind: str
    text: str
    turn: int


@dataclass(frozen=True)
class Turn:
    """The messages of one agent turn and the ``baton_capture`` calls made in it (name, arguments)."""

    index: int
    messages: tuple[Message, ...]
    captures: tuple[dict[str, Any], ...] = ()


@dataclass
class Session:
    """A generated session: turns in order, the needles planted, the project files the agent reads."""

    name: str
    turns: list[Turn] = field(default_factory=list)
    needles: list[Needle] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    def messages(self, upto: int | None = None) -> list[Message]:
        """A fresh copy of the transcript (without the system prompt) through turn ``upto`` (exclusive)."""
        chosen = self.turns if upto is None else self.turns[:upto]
        return [json.loads(json.dumps(m)) for turn in chosen for m in turn.messages]


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def _log_lines(rng: random.Random, lines: int) -> str:
    out = []
    for n in range(lines):
        level = rng.choice(("INFO", "INFO", "INFO", "WARN", "DEBUG"))
        out.append(f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                   f"{rng.randint(0, 59):02d}Z {level} worker[{rng.randint(1, 64)}] {_words(rng, rng.randint(6, 14))}"
                   f" ({rng.randint(1, 999)} ms)")
        if n % 17 == 16:
            out.append(json.dumps({"shard": rng.randint(0, 31), "lag": rng.randint(0, 5000), "ok": rng.random() > 0.1}))
    return "\n".join(out)


def _source_file(rng: random.Random, path: str, functions: int) -> str:
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    out = [f'"""{module}: {_words(rng, 10)}."""', "", "from __future__ import annotations", "",
           "import logging", "", "LOGGER = logging.getLogger(__name__)", ""]
    for n in range(functions):
        name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{n}"
        out += [f"def {name}(record: dict, limit: int = {rng.randint(1, 500)}) -> int:",
                f'    """{_words(rng, rng.randint(6, 16)).capitalize()}."""',
                f"    total = record.get({rng.choice(WORDS)!r}, 0)",
                f"    if total > limit:",
                f"        LOGGER.warning({_words(rng, 4)!r} + ' %d', total)",
                f"        return limit - {rng.randint(0, 9)}",
                f"    return total + {rng.randint(1, 99)}", ""]
    return "\n".join(out)


def _needle_tag(seed: str, n: int) -> tuple[str, str]:
    digest = hashlib.sha256(f"{seed}:{n}".encode()).digest()
    return CODENAMES[digest[0] % len(CODENAMES)], f"{int.from_bytes(digest[1:4], 'big') % 100000:05d}"


class _Builder:
    """Builds turns for one session; ``scale`` multiplies tool-result sizes (1.0 = typical)."""

    def __init__(self, name: str, seed: int, scale: float, needle_every: int) -> None:
        self.session = Session(name)
        self.rng = random.Random(seed)
        self.seed = f"{name}:{seed}"
        self.scale = scale
        self.needle_every = needle_every
        self.needle_no = 0

    def _size(self, low: int, high: int) -> int:
        return max(1, int(self.rng.randint(low, high) * self.scale))

    def _call(self, turn: int, k: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"id": f"call_{turn:04d}_{k}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, sort_keys=True)}}

    def _tool_result(self, turn: int, name: str, arguments: dict[str, Any], needle: Needle | None) -> str:
        rng = self.rng
        if name == "read_file":
            path = arguments["path"]
            if path not in self.session.files:
                self.session.files[path] = _source_file(rng, path, self._size(3, 40))
            return self.session.files[path]
        if name == "search_code":
            hits = self._size(2, 25)
            return "\n".join(f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}: "
                             f"{_words(rng, rng.randint(4, 12))}" for _ in range(hits))
        if name == "baton_capture":
            return json.dumps({"ok": True, "kind": arguments.get("kind"), "recorded": True})
        text = "$ " + arguments["command"] + "\n" + _log_lines(rng, self._size(4, 120))
        if needle is not None and needle.kind == "identifier":
            text += f"\nartifact uploaded: build id {needle.text}\n" + _log_lines(rng, 3)
        if needle is not None and needle.kind == "error":
            text += f"\nFAILED tests/test_ledger.py::test_settlement - {needle.text}\n" + _log_lines(rng, 2)
        return text

    def _plant(self, turn: int) -> Needle | None:
        if turn % self.needle_every != self.needle_every // 2:
            return None
        kind = NEEDLE_KINDS[self.needle_no % len(NEEDLE_KINDS)]
        code, number = _needle_tag(self.seed, self.needle_no)
        self.needle_no += 1
        text = {
            "identifier": f"bx-{number}-{code}-amber",
            "path": f"services/{code}/ledger_{number}.py",
            "error": f"{code.capitalize()}LedgerError: checksum mismatch at row {number}",
            "decision": f"Decision {code}-{number}: settle {code} payouts in integer cents",
        }[kind]
        needle = Needle(kind, text, turn)
        self.session.needles.append(needle)
        return needle

    def turn(self, index: int) -> Turn:
        rng = self.rng
        needle = self._plant(index)
        request = f"Step {index}: {_words(rng, rng.randint(8, 30))}."
        if needle is not None and needle.kind == "path":
            request += f" Start with {needle.text}."
        calls: list[tuple[str, dict[str, Any]]] = []
        captures: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(("read_file", "run_command", "run_command", "search_code"))
            if name == "read_file":
                args: dict[str, Any] = {"path": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{rng.randint(0, 40)}.py"}
            elif name == "run_command":
                args = {"command": rng.choice(("pytest -q tests/", "make build", "git log --oneline -20",
                                               "python -m ledger.reconcile --dry-run"))}
            else:
                args = {"query": rng.choice(WORDS)}
            calls.append((name, args))
        if needle is not None:
            if needle.kind == "path":
                calls[0] = ("read_file", {"path": needle.text})
            elif needle.kind in ("identifier", "error"):
                calls[0] = ("run_command", {"command": "pytest -q tests/test_ledger.py" if needle.kind == "error"
                                            else "make release-artifact"})
            if needle.kind == "error":
                captures.append({"kind": "evidence", "item": {
                    "claim": f"The settlement test fails: {needle.text}", "type": "test",
                    "ref": "pytest -q tests/test_ledger.py", "result": "1 failed"}})
            if needle.kind == "decision":
                captures.append({"kind": "decision", "item": {
                    "decision": needle.text, "rationale": "floating point rounding lost cents in settlement"}})
        calls += [("baton_capture", capture) for capture in captures]
        tool_calls = [self._call(index, k, name, args) for k, (name, args) in enumerate(calls)]
        messages: list[Message] = [
            {"role": "user", "content": request},
            {"role": "assistant", "content": f"Working on step {index}.", "tool_calls": tool_calls},
        ]
        for call, (name, args) in zip(tool_calls, calls):
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": name,
                             "content": self._tool_result(index, name, args, needle)})
        messages.append({"role": "assistant", "content": f"Step {index} done: {_words(rng, rng.randint(10, 40))}."})
        return Turn(index, tuple(messages), tuple(captures))


def session_of_turns(turns: int, *, seed: int = 11, scale: float = 1.0, needle_every: int = 5) -> Session:
    """A session of exactly ``turns`` turns (the growing-session workload)."""
    builder = _Builder(f"turns-{turns}", seed, scale, needle_every)
    builder.session.turns = [builder.turn(index) for index in range(1, turns + 1)]
    return builder.session


def sized_session(target_tokens: int, count_rough: Callable[[list[Message]], int], *, seed: int = 7,
                  scale: float = 1.0) -> Session:
    """Turns until the rough size of the transcript reaches ``target_tokens`` (exact counts are reported)."""
    builder = _Builder(f"sized-{target_tokens}", seed, scale, needle_every=5)
    total = 0
    index = 0
    while total < target_tokens:
        index += 1
        turn = builder.turn(index)
        builder.session.turns.append(turn)
        total += count_rough(list(turn.messages))
    return builder.session
