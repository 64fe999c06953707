"""Deterministic, realistic tool-using conversations for counting tests and the benchmark."""

from __future__ import annotations

import json
import random
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {arg: {"type": "string", "description": f"the {arg}"} for arg in args},
                "required": list(args[:1]),
            },
        },
    }
    for name, description, args in [
        ("read_file", "Read a UTF-8 text file from the project.", ("path", "encoding")),
        ("write_file", "Create or overwrite a file with the given content.", ("path", "content")),
        ("run_tests", "Run the test suite (or one test id) and return the summary.", ("target",)),
        ("search_code", "Search the repository for a regular expression.", ("pattern", "glob")),
        ("git_diff", "Show the working-tree diff of one path.", ("path",)),
        ("http_get", "Fetch a URL and return the first 4 KB of the body.", ("url",)),
        ("list_dir", "List the files in a directory, one per line.", ("path",)),
        ("shell", "Run a shell command with a 60 s timeout.", ("command", "cwd")),
    ]
]

_WORDS = (
    "the parser fails when the config file has a trailing comma so we retry with the strict loader and log "
    "the line number; tokens budget window compaction handoff résumé naïve 東京 ß emoji 🚀 def foo(x): return "
    "x * 2  # doubled\n  indentation\tmatters {\"key\": [1, 2, 3]} SELECT * FROM users WHERE id = 42;"
).split(" ")


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def conversation(turns: int, seed: int = 7, *, with_tools: bool = True) -> dict[str, Any]:
    """A chat request of ~``turns`` user turns with tool calls and results; same seed -> same request."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent. " * 3}]
    call_id = 0
    for _ in range(turns):
        messages.append({"role": "user", "content": _sentence(rng, 5, 40)})
        if with_tools and rng.random() < 0.6:
            tool = rng.choice(TOOLS)["function"]
            call_id += 1
            args = {arg: _sentence(rng, 1, 4) for arg in tool["parameters"]["properties"]}
            messages.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call_{call_id}", "type": "function",
                                "function": {"name": tool["name"], "arguments": json.dumps(args)}}],
            })
            messages.append({"role": "tool", "tool_call_id": f"call_{call_id}", "content": _sentence(rng, 10, 120)})
        messages.append({"role": "assistant", "content": _sentence(rng, 5, 60)})
    request: dict[str, Any] = {"messages": messages}
    if with_tools:
        request["tools"] = TOOLS
    return request


def conversation_of_messages(count: int, seed: int = 11) -> dict[str, Any]:
    """Exactly ``count`` messages (the first is system), tools included."""
    turns = count
    request = conversation(turns, seed)
    while len(request["messages"]) < count:
        turns *= 2
        request = conversation(turns, seed)
    messages = request["messages"][:count]
    while messages[-1].get("tool_calls"):
        messages = messages[:-1]
    return {"messages": messages, "tools": request["tools"]}
