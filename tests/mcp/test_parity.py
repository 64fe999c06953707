"""Parity: every baton-mcp tool's structured result equals the real `baton ... --json` output for the same
operation on the same project state (`.baton/` is restored between the two runs).

Only what the operation itself generates differs between two runs (new record ids, wall-clock timestamps,
file names built from them), so those are replaced by stable placeholders; everything else must be equal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from batontest.records import handoff_records
from mcp import ClientSession

TIMESTAMP_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
FILE_STAMP_RE = re.compile(r"\d{8}T\d{6}Z--")


def record_ids(root: Path) -> list[str]:
    return [record["id"] for record in handoff_records(root)]


def normalized(result: dict[str, Any], new_ids: list[str]) -> str:
    text = json.dumps(result, sort_keys=True)
    for index, record_id in enumerate(new_ids):
        text = text.replace(record_id, f"<new-{index}>").replace(record_id.replace("-", "")[-8:], f"<new-{index}>")
    return FILE_STAMP_RE.sub("<stamp>--", TIMESTAMP_RE.sub("<time>", text))


def cli_args(tool: str, arguments: dict[str, Any], json_file: Callable[[Any], str]) -> list[str]:
    """The `baton` command line for the same operation as ``tool(arguments)``."""
    args = dict(arguments)
    if tool == "baton_status":
        return ["status"]
    if tool == "handoff_capture":
        return ["checkpoint", "create", "--input", json_file(args)]
    if tool == "handoff_validate":
        return ["handoff", "validate", args["ref"], *[f"--recheck={c}" for c in args.get("recheck", [])]]
    if tool == "handoff_ready":
        extra = [f"--accept-warnings={args['accept_warnings']}"] if "accept_warnings" in args else []
        return ["handoff", "ready", args["ref"], *extra]
    if tool == "handoff_resume":
        line = ["resume", *([args["ref"]] if "ref" in args else []), f"--format={args.get('format', 'prompt')}"]
        line += ["--mark-resumed"] if args.get("mark_resumed") else []
        return line + ([f"--max-tokens={args['max_tokens']}"] if "max_tokens" in args else [])
    if tool == "handoff_list":
        return ["handoff", "list", *([f"--status={args['status']}"] if "status" in args else [])]
    if tool == "handoff_fork":
        return ["fork", args["ref"], f"--label={args['label']}"]
    if tool == "handoff_merge":
        return ["merge", *args["refs"], *([f"--resolution={args['resolution']}"] if "resolution" in args else [])]
    if tool == "handoff_detect":
        line = ["detect"] + ([f"--event={json.dumps(args['event'])}"] if "event" in args else [])
        return line + (["--capture", json_file(args["capture"])] if "capture" in args else [])
    raise AssertionError(f"no CLI mapping for {tool}")


@pytest.fixture
def state(project: Path, baton, json_file, payload) -> dict[str, str]:
    """A ready handoff A and a draft B whose open item is vague (validation warns), made with the CLI."""
    made = {}
    for name, data in (("A", payload()), ("B", payload(open_items=[{"description": "look at totals again"}]))):
        created = baton("checkpoint", "create", "--json", "--input", json_file(data), cwd=project)
        assert created.code == 0, created.stderr
        made[name] = created.data["handoff"]["short_id"]
    assert baton("handoff", "ready", made["A"], "--json", cwd=project).code == 0
    return made


def cases(refs: dict[str, str], payload: Callable[..., dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    a, b = refs["A"], refs["B"]
    return [
        ("baton_status", {}),
        ("handoff_capture", payload()),
        ("handoff_validate", {"ref": a, "recheck": ["git status"]}),
        ("handoff_validate", {"ref": b}),
        ("handoff_ready", {"ref": b}),  # warnings without acknowledgement: the same error on both surfaces
        ("handoff_ready", {"ref": b, "accept_warnings": "spike; the next owner decides"}),
        ("handoff_resume", {}),
        ("handoff_resume", {"ref": a, "format": "json", "mark_resumed": True, "max_tokens": 300}),
        ("handoff_resume", {"ref": "ffffffff"}),
        ("handoff_list", {}),
        ("handoff_list", {"status": "draft"}),
        ("handoff_fork", {"ref": a, "label": "per-region tax"}),
        ("handoff_merge", {"refs": [a, b]}),  # no resolution: refused on both surfaces
        ("handoff_merge", {"refs": [a, b], "resolution": "A's table holds; B's item stays open"}),
        ("handoff_detect", {"event": {"turns": 30, "context_tokens": 90000, "context_window": 100000}}),
        ("handoff_detect", {"event": {"explicit": True}, "capture": payload()}),
    ]


def test_every_tool_matches_the_cli_json_on_the_same_state(
        project: Path, state: dict[str, str], baton, mcp_session, snapshot, json_file, payload) -> None:
    requests = cases(state, payload)
    assert {tool for tool, _ in requests} == {"baton_status", "handoff_capture", "handoff_validate",
                                              "handoff_ready", "handoff_resume", "handoff_list", "handoff_fork",
                                              "handoff_merge", "handoff_detect"}
    saved = snapshot(project)
    before = record_ids(project)

    async def compare(session: ClientSession) -> list[tuple[str, str, str, bool]]:
        outcomes = []
        for tool, arguments in requests:
            cli = baton(*cli_args(tool, arguments, json_file), "--json", cwd=project)
            cli_new = [i for i in record_ids(project) if i not in before]
            saved.restore()
            result = await session.call_tool(tool, arguments)
            mcp_new = [i for i in record_ids(project) if i not in before]
            saved.restore()
            assert (cli.code != 0) == result.is_error, (tool, arguments, cli.stdout, result.content)
            outcomes.append((tool, normalized(cli.data, cli_new), normalized(result.structured_content, mcp_new),
                             result.is_error))
        return outcomes

    outcomes = mcp_session(project, compare)
    for tool, from_cli, from_mcp, _error in outcomes:
        assert from_mcp == from_cli, tool
    errors = [tool for tool, *_rest, error in outcomes if error]
    assert errors == ["handoff_ready", "handoff_resume", "handoff_merge"]  # error dicts compared too
