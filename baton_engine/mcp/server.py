"""The stdio MCP server: the tools of ``baton_engine.mcp.tools`` on the official MCP SDK's low-level ``Server``.

Why the low-level server: the input schemas come from the same pydantic models that check the arguments
(required fields, enums, no unknown keys), and the call result is built here exactly: the operation's dict as
structured content, a one-line text summary, ``isError`` with the Baton error kind on failure. The project
directory is fixed when the server starts; no tool takes a path to work in.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from baton_engine import __version__
from baton_engine.mcp.tools import TOOLS, Result, ToolSpec, run_tool

SERVER_NAME = "baton"
INSTRUCTIONS = (
    "Baton keeps validated handoff records of this project's work. At session start call baton_status and "
    "handoff_resume; treat the brief as working context, not truth, and verify a STALE brief before acting. "
    "Capture drafts at work boundaries with evidence you actually observed, validate, then mark ready."
)


def _tool(spec: ToolSpec) -> types.Tool:
    hints = types.ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=False, open_world_hint=False)
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema(),
                      annotations=hints)


def call_result(name: str, result: Result, summary: str) -> types.CallToolResult:
    """The operation's dict as structured content plus the summary line; a resume brief also as text."""
    content = [types.TextContent(text=summary)]
    brief = result.get("brief") if name == "handoff_resume" else None
    if brief:  # harnesses that show the model only text still get the brief itself
        content.append(types.TextContent(text=brief["text"]))
    return types.CallToolResult(content=content, structured_content=result, is_error="error" in result)


def build_server(start: Path) -> Server[Any]:
    """A server whose every tool works on the project found at (or above) ``start``."""
    start = Path(start).resolve()
    tools = [_tool(spec) for spec in TOOLS]

    async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        run = functools.partial(run_tool, params.name, start, params.arguments)
        result, summary = await anyio.to_thread.run_sync(run)
        return call_result(params.name, result, summary)

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(start: Path) -> None:
    server = build_server(start)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
