"""Capture items through MCP use the ONE definition (``handoff.capture.ITEM_MODELS``): the input schema the
server lists is generated from those models, every kind is accepted, and a bad item is refused naming the field
with the same message the CLI's ``baton record`` and the engine's ``baton_capture`` give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from baton_engine.handoff import capture
from baton_engine.mcp.tools import TOOLS_BY_NAME, run_tool

ITEMS = {
    "decision": {"decision": "stream the file", "rationale": "memory", "alternatives_considered": ["mmap"]},
    "evidence": {"type": "test", "claim": "parser is 3x faster", "ref": "pytest -k parser", "result": "5 passed"},
    "failed_attempt": {"attempt": "regex parser", "outcome": "too slow"},
    "open_item": {"description": "wire the CLI", "priority": "high", "suggested_action": "add flag"},
}
BASE = {"work": {"title": "t", "objective": "o"}, "summary": {"current_state": "s"}}


def test_the_mcp_item_schemas_are_the_capture_item_models() -> None:
    schema = TOOLS_BY_NAME["handoff_capture"].input_schema()
    for kind, model in capture.ITEM_MODELS.items():
        listed = schema["$defs"][model.__name__]
        assert listed["properties"] == model.model_json_schema()["properties"], kind
        assert schema["properties"][capture.ITEM_FIELDS[kind]]["items"] == {"$ref": f"#/$defs/{model.__name__}"}


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_every_kind_is_captured_and_a_bad_item_names_the_field(project: Path, kind: str) -> None:
    field = capture.ITEM_FIELDS[kind]
    good, _summary = run_tool("handoff_capture", project, {**BASE, field: [ITEMS[kind]]})
    assert good["ok"], good
    bad, summary = run_tool("handoff_capture", project, {**BASE, field: [{"colour": "blue"}]})
    assert bad["ok"] is False and bad["error"]["kind"] == "input_error"
    assert f"{field}.0.colour" in bad["error"]["message"], summary
    try:
        capture.parse_item(kind, {"colour": "blue"})
    except Exception as exc:  # noqa: BLE001 - the same model refuses the same field everywhere
        assert "colour" in str(exc)
    else:
        raise AssertionError("parse_item accepted an unknown field")


def test_every_kind_round_trips_over_stdio(project: Path, mcp_session: Any) -> None:
    payload = {**BASE, **{capture.ITEM_FIELDS[kind]: [item] for kind, item in ITEMS.items()}}

    async def scenario(session: ClientSession) -> Any:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert listed["handoff_capture"].input_schema == TOOLS_BY_NAME["handoff_capture"].input_schema()
        created = await session.call_tool("handoff_capture", payload)
        assert not created.is_error, created.content
        short = created.structured_content["handoff"]["short_id"]
        return (await session.call_tool("handoff_resume", {"ref": short, "format": "json"})).structured_content

    resumed = mcp_session(project, scenario)
    record = resumed["record"]
    for kind, item in ITEMS.items():
        stored = record[capture.ITEM_FIELDS[kind]][0]
        assert {key: stored[key] for key in item} == item, kind
