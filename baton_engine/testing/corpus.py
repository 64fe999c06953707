"""The kit's built-in corpus: chat requests and texts built deterministically in code.

Why built, not stored: the shapes that break backends (tools, parallel tool calls, multi-part and empty
content, unicode, a long conversation) matter, their wording does not, and no user prompt text may end up
in a package. Tool-call ids are 9 alphanumeric characters and roles alternate, so strict templates
(Mistral's) render every request.
"""

from __future__ import annotations

import json
import random
from typing import Any

Request = dict[str, Any]

_WORDS = ("token budget handoff brief résumé 数据 context window tokenizer chat template cache 🚀 "
          "compaction record schema deterministic agent tool call json naïve Ελληνικά").split()


def _tool(name: str, description: str, properties: dict[str, str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": {key: {"type": kind} for key, kind in properties.items()},
              "required": sorted(properties)}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


TOOLS = [
    _tool("read_file", "Read a file from the workspace.", {"path": "string"}),
    _tool("write_file", "Write text to a file.", {"path": "string", "content": "string"}),
    _tool("run_shell", "Run a shell command and return its output.", {"command": "string", "timeout": "integer"}),
    _tool("search_code", "Search the repository for a pattern.", {"pattern": "string"}),
]


def _call(number: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call{number:05d}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def long_conversation(length: int = 200) -> list[dict[str, Any]]:
    """``length`` messages: system, then rounds of user / assistant tool calls (some parallel) / tool results /
    assistant answer, ending with a user message."""
    rng = random.Random(20240718)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    number = 0
    while len(messages) < length:
        messages.append({"role": "user", "content": _sentence(rng, rng.randint(3, 40))})
        calls = []
        for name in rng.sample([tool["function"]["name"] for tool in TOOLS], k=rng.choice((1, 1, 2))):
            number += 1
            calls.append(_call(number, name, {"path": f"src/m{number}.py"}))
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": call["id"], "content": _sentence(rng, rng.randint(5, 60))}
                     for call in calls]
        messages.append({"role": "assistant", "content": _sentence(rng, rng.randint(2, 30))})
    return messages[: length - 1] + [{"role": "user", "content": "Continue."}]


def chat_requests() -> list[tuple[str, Request]]:
    """(name, request) pairs, the same on every call."""
    parallel = [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Read both files and run the tests."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call(1, "read_file", {"path": "a.py"}), _call(2, "read_file", {"path": "b.py", "note": "ü 🚀"}),
            _call(3, "run_shell", {"command": "pytest -q", "timeout": 60})]},
        {"role": "tool", "tool_call_id": "call00001", "content": "print('a')"},
        {"role": "tool", "tool_call_id": "call00002", "content": "print('b')"},
        {"role": "tool", "tool_call_id": "call00003", "content": "3 passed"},
        {"role": "assistant", "content": "Both files print; the tests pass."},
        {"role": "user", "content": "Thanks."},
    ]
    single = [
        {"role": "user", "content": "Find TODOs."},
        {"role": "assistant", "content": "", "tool_calls": [_call(7, "search_code", {"pattern": "TODO"})]},
        {"role": "tool", "tool_call_id": "call00007", "content": "src/app.py:12: # TODO: retry"},
        {"role": "assistant", "content": "One TODO, in src/app.py line 12."},
        {"role": "user", "content": "Fix it."},
    ]
    return [
        ("plain", {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]}),
        ("empty-content", {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": ""}]}),
        ("multi-part-content", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]}]}),
        ("unicode", {"messages": [{"role": "user", "content": "数据 🚀 résumé naïve Ελληνικά עברית \u200b tab\there"}]}),
        ("tools", {"messages": [{"role": "user", "content": "What can you do?"}], "tools": TOOLS}),
        ("tool-call", {"messages": single, "tools": TOOLS}),
        ("parallel-tool-calls", {"messages": parallel, "tools": TOOLS}),
        ("no-generation-prompt", {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": False}),
        ("long-200", {"messages": long_conversation(), "tools": TOOLS}),
    ]


def texts() -> list[tuple[str, str]]:
    """(name, text) pairs for ``count_text``; the last is large enough to time."""
    rng = random.Random(7)
    prose = "\n".join(_sentence(rng, rng.randint(5, 25)) for _ in range(400))
    code = "\n".join(f"def f{i}(x):\n    return x * {i}  # {_sentence(rng, 4)}" for i in range(300))
    return [
        ("empty", ""),
        ("hello", "hello world"),
        ("unicode", "数据 🚀 résumé naïve Ελληνικά"),
        ("whitespace", "a  b\n\n\tc " * 20),
        ("prose-and-code", prose + "\n\n" + code),
    ]


def length_probes(length: int = 64) -> list[str]:
    """Texts of one length in characters but very different make-up: a real tokenizer gives them different
    counts, a characters-per-token estimate gives them all the same."""
    return ["x" * length, ("ab " * length)[:length], "数" * length, "7" * length, ("the " * length)[:length]]
