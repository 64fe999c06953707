"""`baton-mcp`, run as users run it (a subprocess on stdio, driven by the MCP SDK's client through all nine
tools), opens no network connection and looks up no host name.

How it is proven: a ``sitecustomize`` on the server's PYTHONPATH installs a CPython audit hook before any
Baton or SDK code runs. Audit events fire inside the interpreter for every ``socket.connect``/``connect_ex``
and name lookup, whichever library makes them (httpx, urllib, huggingface_hub, ...), and cannot be
bypassed or removed from Python. ``subprocess.Popen`` events are recorded too, so a child process that
could reach the network (``git fetch``/``ls-remote``) would show up. A control run proves the hook sees
what it must see.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from batontest.baton_cli import SCRIPTS, clean_env

BATON_MCP = SCRIPTS / "baton-mcp"
LOG_ENV = "BATON_TEST_NETWORK_AUDIT_LOG"
NETWORK_EVENTS = ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                  "socket.gethostbyaddr", "socket.sendto", "socket.sendmsg", "socket.bind")
GIT_OPTIONS_WITH_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}
LOOPBACK = ("127.0.0.1", "::1", "localhost")
GIT_NETWORK_COMMANDS = {"fetch", "pull", "push", "clone", "ls-remote", "submodule", "archive"}
GIT_REMOTE_NETWORK_COMMANDS = {"update", "show", "prune"}
SITECUSTOMIZE = '''
"""Test-only audit hook (tests/mcp/test_no_network.py): records network and process events as JSON lines."""
import json, os, socket, sys

_PATH = os.environ.get(%(env)r)
_EVENTS = %(events)r
_LOG = open(_PATH, "a", encoding="utf-8", buffering=1) if _PATH else None


def _write(entry):
    _LOG.write(json.dumps(entry, default=repr) + "\\n")


def _hook(event, args):
    if event in _EVENTS:
        if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
            sock = args[0]
            if getattr(sock, "family", None) == getattr(socket, "AF_UNIX", None):
                return  # local IPC, not the network
            _write({"event": event, "family": int(sock.family), "address": args[1] if len(args) > 1 else None})
        else:
            _write({"event": event, "host": args[0]})
    elif event == "subprocess.Popen":
        _write({"event": event, "executable": args[0], "args": list(args[1]) if args[1] else []})


if _LOG is not None:
    _write({"event": "hook_installed", "pid": os.getpid(), "argv": sys.argv})
    sys.addaudithook(_hook)
''' % {"env": LOG_ENV, "events": NETWORK_EVENTS}


@pytest.fixture
def audit(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment that loads the hook, and the log it writes."""
    site = tmp_path / "audit-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "audit.jsonl"
    env = clean_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    env[LOG_ENV] = str(log)
    return env, log


def entries(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


def git_reaches_network(args: list[str]) -> bool:
    """True for ``git -C repo fetch ...``, ``git remote update`` and the like (options with values skipped)."""
    rest = iter(args[1:])
    words = []
    for arg in rest:
        if arg in GIT_OPTIONS_WITH_VALUE:
            next(rest, None)
        elif not arg.startswith("-"):
            words.append(arg)
    if not words:
        return False
    if words[0] == "remote":  # `git remote` / `remote get-url` are local; update/show/prune contact the remote
        return len(words) > 1 and words[1] in GIT_REMOTE_NETWORK_COMMANDS
    return words[0] in GIT_NETWORK_COMMANDS


def network_use(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every network event, and every child process that is not a local git command.

    A bind to a loopback address is not network use (urllib3 probes IPv6 support with a bind to ``::1``)."""
    bad = [e for e in found if e["event"] in NETWORK_EVENTS
           and not (e["event"] == "socket.bind" and (e.get("address") or [None])[0] in LOOPBACK)]
    for entry in (e for e in found if e["event"] == "subprocess.Popen"):
        args = [str(a) for a in entry["args"]]
        program = Path(args[0]).name if args else str(entry["executable"])
        if program != "git" or git_reaches_network(args):
            bad.append(entry)
    return bad


async def all_tools(session: ClientSession, payload: dict[str, Any]) -> list[str]:
    """Every baton-mcp tool once (resume twice: brief and mark-resumed); the names of the tools called."""
    called: list[str] = []

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call_tool(name, arguments)
        assert not result.is_error, (name, result.content)
        assert result.structured_content["ok"] is True, (name, result.structured_content)
        called.append(name)
        return result.structured_content

    tools = {tool.name for tool in (await session.list_tools()).tools}
    await call("baton_status", {})
    first = (await call("handoff_capture", payload))["handoff"]["short_id"]
    await call("handoff_validate", {"ref": first})
    await call("handoff_ready", {"ref": first})
    await call("handoff_resume", {})
    await call("handoff_list", {})
    fork = (await call("handoff_fork", {"ref": first, "label": "offline"}))["handoff"]["short_id"]
    await call("handoff_merge", {"refs": [first, fork], "resolution": "fork wins"})
    await call("handoff_detect", {"event": {"explicit": True}, "capture": payload})
    await call("handoff_resume", {"ref": first, "mark_resumed": True, "format": "json"})
    assert set(called) == tools, f"tools not exercised: {sorted(tools - set(called))}"
    return called


@pytest.mark.parametrize("tokenizer", [{}, {"BATON_TOKENIZER_BACKEND": "tiktoken", "BATON_TOKENIZER_MODEL": "gpt-4o"}],
                         ids=["project-default", "tiktoken"])
def test_baton_mcp_over_stdio_makes_no_network_connection(
        project: Path, payload, audit: tuple[dict[str, str], Path], tokenizer: dict[str, str]) -> None:
    env, log = audit
    assert BATON_MCP.exists(), f"console script not installed at {BATON_MCP}; pip install -e '.[mcp]'"

    async def main() -> list[str]:
        params = StdioServerParameters(command=str(BATON_MCP), args=["--root", str(project)],
                                       env={**env, **tokenizer}, cwd=str(project))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await all_tools(session, payload())

    called = anyio.run(main)
    found = entries(log)
    installed = [e for e in found if e["event"] == "hook_installed"]
    assert any("baton-mcp" in " ".join(e["argv"]) for e in installed), f"hook not loaded in the server: {installed}"
    assert len(called) == 10
    assert network_use(found) == []
    assert any(e["event"] == "subprocess.Popen" for e in found), "the server ran no git: was the journey real?"


def test_the_audit_hook_sees_connections_lookups_and_network_git(audit: tuple[dict[str, str], Path],
                                                                 tmp_path: Path) -> None:
    """Control: the same hook in a child that connects, resolves and runs `git ls-remote` records all three."""
    env, log = audit
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    child = (
        "import socket, subprocess\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\nexcept OSError:\n    pass\n"
        f"subprocess.run(['git', '-C', '.', 'ls-remote', 'http://127.0.0.1:{port}/x.git'], capture_output=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", child], env=env, cwd=tmp_path, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    bad = network_use(entries(log))
    assert {e["event"] for e in bad} == {"socket.getaddrinfo", "socket.connect", "subprocess.Popen"}, bad
    assert any(e.get("address") == ["127.0.0.1", port] for e in bad if e["event"] == "socket.connect"), bad
