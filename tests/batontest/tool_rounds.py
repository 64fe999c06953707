"""A coding conversation of tool rounds (an edit, its tool result of ``words`` words): what a compaction has to cut
and keep pair-safe, shared by the core's compaction tests and the Hermes hook's."""

from __future__ import annotations

import json
from typing import Any


def tool_round(index: int, *, path: str = "src/app.py", words: int = 400) -> list[dict[str, Any]]:
    call_id = f"call_{index}"
    return [
        {"role": "assistant", "content": f"Step {index}: editing {path}.", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "write_file", "arguments": json.dumps({"path": path, "content": "x"})}}]},
        {"role": "tool", "tool_call_id": call_id, "content": " ".join(f"line{index}-{n}" for n in range(words))},
    ]


def conversation(request: str, rounds: int, start: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": request}]
    for index in range(start, start + rounds):
        messages += tool_round(index)
    return messages
