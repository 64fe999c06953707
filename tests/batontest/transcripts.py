"""Hermes-shaped (hermes-agent 0.19.0) transcripts for the continuity tests."""

from __future__ import annotations

import json
from typing import Any

SECRET = "sk-proj-" + "Q7" * 12 + "xYz"


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def result(call_id: str, **fields: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(fields, ensure_ascii=False)}


def numbered(first: int, lines: list[str]) -> str:
    return "\n".join(f"{first + n}|{line}" for n, line in enumerate(lines))


def coding_session() -> list[dict[str, Any]]:
    """Read, failing test, patch, passing test: the tools and result JSON Hermes really produces."""
    source = [f"def step_{n}(x):  # retry_budget {n}" for n in range(1, 120)]
    return [
        {"role": "user", "content": "The ledger test fails on build 9f2c3a1b; fix src/ledger/settle.py please."},
        {"role": "assistant", "content": "Reading the module first.",
         "tool_calls": [call("c1", "read_file", path="src/ledger/settle.py", offset=1, limit=200)]},
        result("c1", content=numbered(1, source), total_lines=119, file_size=4000, truncated=False),
        {"role": "assistant", "content": None,
         "tool_calls": [call("c2", "terminal", command="pytest -q tests/test_settle.py")]},
        result("c2", output="F.\nE   AssertionError: settle() returned 3, expected 4\n"
                            "FAILED tests/test_settle.py::test_round - AssertionError\n1 failed, 1 passed",
               exit_code=1, error=None),
        {"role": "assistant", "content": "The rounding in 9f2c3a1b is off; patching.",
         "tool_calls": [call("c3", "patch", mode="replace", path="src/ledger/settle.py",
                             old_string="round(x)", new_string="round(x + 0.5)")]},
        result("c3", success=True, diff="-round(x)\n+round(x + 0.5)", files_modified=["/repo/src/ledger/settle.py"]),
        {"role": "assistant", "content": None,
         "tool_calls": [call("c4", "terminal", command="pytest -q tests/test_settle.py"),
                        call("c5", "search_files", pattern="round\\(", path="src/ledger")]},
        result("c4", output="..\n2 passed", exit_code=0, error=None),
        result("c5", total_count=1, matches=[{"path": "src/ledger/settle.py", "line": 7, "content": "round(x + 0.5)"}]),
        {"role": "user", "content": f"Thanks. The deploy key is API_KEY={SECRET} if you need it."},
        {"role": "assistant", "content": "Done: the settle test passes."},
    ]
