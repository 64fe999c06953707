"""baton-mcp as a real subprocess, driven by the MCP SDK's stdio client: tools, schemas and every tool's result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
from mcp import ClientSession

EXPECTED_TOOLS = {"baton_status", "handoff_capture", "handoff_validate", "handoff_ready", "handoff_resume",
                  "handoff_list", "handoff_fork", "handoff_merge", "handoff_detect"}
STATUSES = ["draft", "validated", "ready", "resumed", "superseded", "archived"]


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` (and a nullable ``anyOf``) to the object schema it names."""
    if "anyOf" in node:
        node = next(option for option in node["anyOf"] if option.get("type") != "null")
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


async def _tools(session: ClientSession) -> dict[str, Any]:
    return {tool.name: tool for tool in (await session.list_tools()).tools}


def test_lists_exactly_the_spec_tools_with_precise_schemas(project: Path, mcp_session) -> None:
    tools = mcp_session(project, _tools)
    assert set(tools) == EXPECTED_TOOLS  # and therefore no generic shell / init tool
    schemas = {name: tool.input_schema for name, tool in tools.items()}
    for name, schema in schemas.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        assert tools[name].description, name
    assert sorted(schemas["handoff_capture"]["required"]) == ["summary", "work"]
    assert resolve(schemas["handoff_capture"], schemas["handoff_capture"]["properties"]["work"])["required"] == [
        "title", "objective"]
    assert schemas["handoff_validate"]["required"] == ["ref"]
    assert schemas["handoff_ready"]["required"] == ["ref"]
    assert sorted(schemas["handoff_fork"]["required"]) == ["label", "ref"]
    assert schemas["handoff_merge"]["required"] == ["refs"]
    assert schemas["handoff_merge"]["properties"]["refs"]["minItems"] == 2
    assert "required" not in schemas["baton_status"] and "required" not in schemas["handoff_resume"]
    assert resolve(schemas["handoff_list"], schemas["handoff_list"]["properties"]["status"])["enum"] == STATUSES
    assert schemas["handoff_resume"]["properties"]["format"]["enum"] == ["prompt", "json"]
    origin = resolve(schemas["handoff_capture"], schemas["handoff_capture"]["properties"]["origin"])
    harness = resolve(schemas["handoff_capture"], origin["properties"]["harness"])
    assert harness["enum"] == ["codex", "claude-code", "cursor", "gemini-cli", "generic"]
    event = resolve(schemas["handoff_detect"], schemas["handoff_detect"]["properties"]["event"])
    assert event["additionalProperties"] is False and "explicit" in event["properties"]
    assert tools["baton_status"].annotations.read_only_hint is True
    assert tools["handoff_capture"].annotations.read_only_hint is False


def test_every_tool_answers_with_structured_content_and_one_summary_line(
        project: Path, mcp_session, payload, store_bytes) -> None:
    async def journey(session: ClientSession) -> dict[str, Any]:
        schemas = {name: tool.input_schema for name, tool in (await _tools(session)).items()}
        seen: dict[str, Any] = {}

        async def call(name: str, arguments: dict[str, Any], key: str | None = None) -> dict[str, Any]:
            jsonschema.validate(arguments, schemas[name])  # what we send is what the schema advertises
            result = await session.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            summary = result.content[0].text
            assert summary and "\n" not in summary, (name, summary)
            seen[key or name] = (result.structured_content, summary, [c.text for c in result.content])
            assert result.structured_content["ok"] is True
            return result.structured_content

        await call("baton_status", {}, "status_empty")
        first = (await call("handoff_capture", payload()))["handoff"]["short_id"]
        await call("handoff_validate", {"ref": first})
        await call("handoff_ready", {"ref": first})
        seen["bytes_before_resume"] = store_bytes(project)
        await call("handoff_resume", {})
        seen["bytes_after_resume"] = store_bytes(project)
        await call("handoff_list", {"status": "ready"})
        fork = (await call("handoff_fork", {"ref": first, "label": "tax-per-region"}))["handoff"]["short_id"]
        await call("handoff_merge", {"refs": [first, fork], "resolution": "the fork's approach holds"})
        await call("handoff_detect", {"event": {"turns": 3, "context_tokens": 1000, "context_window": 100000}},
                   "detect_quiet")
        await call("handoff_detect", {"event": {"explicit": True}, "capture": payload()}, "detect_capture")
        await call("handoff_resume", {"ref": first, "mark_resumed": True, "format": "json"}, "resume_marked")
        await call("baton_status", {}, "status_end")
        return seen

    seen = mcp_session(project, journey)
    assert seen["status_empty"][0]["counts"] == {} and seen["status_empty"][0]["root"] == str(project)
    captured, summary, _ = seen["handoff_capture"]
    first = captured["handoff"]["short_id"]
    assert captured["handoff"]["status"] == "draft" and first in summary
    assert (project / captured["path"]).is_file()
    assert seen["handoff_validate"][0]["validation"]["status"] == "pass"
    assert seen["handoff_ready"][0]["handoff"]["status"] == "ready"

    resumed, summary, texts = seen["handoff_resume"]
    assert resumed["handoff"]["short_id"] == first and resumed["freshness"]["stale"] is False
    assert "fresh" in summary and texts[1] == resumed["brief"]["text"]
    assert "Cart totals include tax" in resumed["brief"]["text"] and resumed["marked_resumed"] is False
    assert "record" not in resumed
    assert seen["bytes_after_resume"] == seen["bytes_before_resume"]  # resume writes nothing by default

    listed = seen["handoff_list"][0]["handoffs"]
    assert [entry["short_id"] for entry in listed] == [first]
    assert set(listed[0]) == {"id", "short_id", "status", "title", "created_at", "updated_at", "relation",
                              "parents", "owner"}  # metadata only: no evidence payloads

    forked = seen["handoff_fork"][0]
    assert forked["handoff"]["relation"] == "fork" and forked["parent"] == captured["handoff"]["id"]
    merged = seen["handoff_merge"][0]
    assert merged["handoff"]["relation"] == "merge" and len(merged["parents"]) == 2

    quiet = seen["detect_quiet"][0]
    assert quiet["recommend"] is False and quiet["created"] is None
    assert set(quiet["inputs_used"]) == {"context", "turn"} and "explicit" in quiet["inputs_unused"]
    assert 0.0 < quiet["pressure"] < 0.7 and quiet["reasons"]
    explicit = seen["detect_capture"][0]
    assert explicit["recommend"] is True and explicit["pressure"] == 1.0 and explicit["created"]["status"] == "draft"

    marked = seen["resume_marked"][0]
    assert marked["marked_resumed"] is True and marked["handoff"]["status"] == "resumed"
    assert marked["record"]["id"] == captured["handoff"]["id"] and marked["record"]["status"] == "resumed"
    # first (resumed), fork, merge and the detector's draft; the quiet detect created nothing
    assert seen["status_end"][0]["counts"] == {"draft": 3, "resumed": 1}


def test_unknown_tool_is_a_tool_error(project: Path, mcp_session) -> None:
    async def scenario(session: ClientSession) -> Any:
        return await session.call_tool("run_shell", {"command": "ls"})

    result = mcp_session(project, scenario)
    assert result.is_error
    assert result.structured_content["error"]["kind"] == "input_error"
    assert "unknown tool 'run_shell'" in result.content[0].text and "handoff_resume" in result.content[0].text


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    server = Path(sys.executable).parent / "baton-mcp"
    done = subprocess.run([str(server), "--root", str(tmp_path / "missing")], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2
    assert "--root" in done.stderr and "does not exist" in done.stderr


def test_baton_log_is_honoured_and_a_bad_value_is_a_usage_error(tmp_path: Path) -> None:
    server = Path(sys.executable).parent / "baton-mcp"
    done = subprocess.run([str(server), "--root", str(tmp_path)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, "BATON_LOG": "loud"})
    assert done.returncode == 2
    assert "BATON_LOG" in done.stderr and "debug" in done.stderr
