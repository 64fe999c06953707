"""No network: every ``baton`` command connects nowhere except the configured tokenizer URL.

A socket guard (``batontest.socket_guard``) patches ``socket.socket.connect``/``connect_ex``,
``socket.create_connection`` and ``socket.getaddrinfo``: every attempt is recorded, disallowed ones
are refused. The commands run in-process so the guard sees everything they do. The engine's half is
``tests/hermes/test_no_network.py``; baton-mcp's, ``tests/mcp/test_no_network.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from baton_engine.cli import cli
from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.operations.handoffs import ready_handoff
from batontest.engine_kit import TIKTOKEN_ENV
from batontest.faulty_servers import FaultyServer
from batontest.hermes_home import initialised_project
from batontest.socket_guard import SocketGuard, address_of

# No Hermes home of the user's is read (`doctor` is among the commands) and no tokenizer reaches for the hub.
os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="baton-test-home-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with one commit and an initialised ``.baton/`` (what ``baton init`` makes)."""
    return initialised_project(tmp_path / "proj")


def test_the_guard_refuses_and_records_what_it_does_not_allow() -> None:
    with FaultyServer("ok") as server, SocketGuard(allowed=[address_of(server.url)]) as guard:
        assert httpx.post(server.url + "/tokenize", json={}).status_code == 200
        with pytest.raises(httpx.ConnectError):
            httpx.get("http://192.0.2.1:8080/", timeout=2)
        with pytest.raises(httpx.ConnectError):
            httpx.get("https://huggingface.co/", timeout=2)
    refused = {(a.kind, a.host) for a in guard.refused}
    assert ("connect", "192.0.2.1") in refused and ("connect", "huggingface.co") in refused
    assert {a.host for a in guard.connections if a.allowed} == {"127.0.0.1"}


def cli_commands(project: Path, draft: str, ready: str, text_file: Path) -> list[list[str]]:
    return [
        ["status"], ["handoff", "list"], ["handoff", "show", ready, "--format", "prompt"], ["handoff", "validate", draft],
        ["record", "open-item", draft, "--input", "-"], ["handoff", "ready", draft, "--accept-warnings", "test"],
        ["resume"], ["resume", ready, "--format", "json"], ["checkpoint", "create", "--title", "t", "--objective", "o", "--state", "s"],
        ["fork", ready, "--label", "b"], ["detect", "--event", '{"explicit": true}'], ["doctor"], ["audit"],
        ["gc", "--dry-run"], ["migrate", "--dry-run"], ["tokens", "backends"], ["tokens", "count", str(text_file)],
        ["report"],
    ]


def run_cli_under_guard(project: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                        allowed: list[tuple[str, int]]) -> SocketGuard:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    draft = checkpoint_create(project, {"title": "draft", "objective": "o",
                                                   "summary": {"current_state": "s"}})["handoff"]["short_id"]
    ready = checkpoint_create(project, {"title": "ready", "objective": "o",
                                                   "summary": {"current_state": "s"}})["handoff"]["short_id"]
    ready_handoff(project, ready, accept_warnings="test")
    text_file = project.parent / "prompt.txt"
    text_file.write_text("Count these words, please.")
    monkeypatch.chdir(project)
    item = json.dumps({"description": "finish", "suggested_action": "run tests", "acceptance_check": "green"})
    with SocketGuard(allowed=allowed) as guard:
        for argv in cli_commands(project, draft, ready, text_file):
            result = CliRunner().invoke(cli, [*argv, "--json"], input=item)
            assert result.exit_code in (0, 2, 3, 4, 5), (argv, result.output[-500:])  # documented codes
            assert result.exception is None or isinstance(result.exception, SystemExit), argv
    return guard


def test_cli_commands_make_no_connection_with_a_local_tokenizer(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guard = run_cli_under_guard(project, monkeypatch, TIKTOKEN_ENV, allowed=[])
    assert guard.refused == [] and guard.connections == []


def test_cli_commands_connect_only_to_the_configured_tokenizer_url(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FaultyServer("ok", count=5) as server:
        env = {"BATON_TOKENIZER_BACKEND": "vllm", "BATON_TOKENIZER_URL": server.url}
        guard = run_cli_under_guard(project, monkeypatch, env, allowed=[address_of(server.url)])
        assert server.requests_received >= 1, "the tokenizer was never asked: the guard saw nothing to allow"
    assert guard.refused == []
    assert {(a.host, a.port) for a in guard.connections} == {address_of(server.url)}
