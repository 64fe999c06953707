"""A REAL ``hermes gateway run`` with the API server platform, in a subprocess, against a loopback model server.

Why: a gateway serves many people from one process and one working directory, which is exactly where a
context engine may mix conversations up; only the real gateway keys its agents the way Hermes does
(a new ``AIAgent`` per request, ``platform="api_server"``, the ``X-Hermes-Session-Key`` header as the
engine's ``conversation_id``, a session id derived from the first user message or sent as
``X-Hermes-Session-Id``). The operator's setup is what a user writes: ``config.yaml`` with the model,
``context.engine: baton``, ``plugins.enabled: [baton]``, ``terminal.cwd`` (the project every agent works
in) and ``platform_toolsets``; the platform is switched on through ``API_SERVER_*`` variables.

    with HermesGateway(home, project) as gateway:
        reply = gateway.chat("agent:main:api:user-1", [{"role": "user", "content": "hello"}])
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pytest

from batontest import conversation_tap
from batontest.hermes_run import require_hermes

# ``hermes gateway run`` with ``run_agent`` imported first, in the main thread: the gateway otherwise imports it in
# a worker thread on the first request, where its tool discovery's ``ast.parse`` can race another thread's and
# CPython 3.11.7 fails with "SystemError: AST constructor recursion depth mismatch" (seen on Hermes 0.22)
# The conversation tap (its file is the first argument) is installed first: every request the gateway sends names
# the conversation Hermes says it belongs to.
GATEWAY_MAIN = ("import runpy, sys; import run_agent; runpy.run_path(sys.argv[1])['install'](); "
                "sys.argv = ['hermes', *sys.argv[2:]]; runpy.run_module('hermes_cli.main', run_name='__main__')")
READY_TIMEOUT = 150.0  # seconds for the gateway to answer /health (about 5 s on an idle machine, over 60 s at load 25)
CHAT_TIMEOUT = 120.0


def require_gateway() -> None:
    """Hermes, Baton's entry point and the API server's aiohttp (hermes-agent's ``[messaging]`` extra; the tox
    env ``hermes`` installs it); skip without aiohttp unless BATON_REQUIRE_HERMES=1."""
    require_hermes()
    if importlib.util.find_spec("aiohttp") is None:
        message = "the API server platform needs aiohttp (hermes-agent[messaging]; tox env hermes installs it)"
        if os.environ.get("BATON_REQUIRE_HERMES") == "1":
            pytest.fail(message)
        pytest.skip(message)


def gateway_config(config: dict[str, Any], project: Path, toolsets: list[str]) -> dict[str, Any]:
    """``config`` (``hermes_home.hermes_config``) as a gateway operator completes it: the provider's key in the
    model block (the gateway reads credentials from config.yaml only), every agent's working directory, the
    API server's toolsets, and no download of Hermes' command scanner (tirith) at start-up."""
    done = {**config, "model": {**config["model"], "api_key": "sk-local"}}
    done["terminal"] = {"cwd": str(project)}
    done["platform_toolsets"] = {"api_server": list(toolsets)}
    done["security"] = {"tirith_enabled": False}
    return done


@dataclass
class ChatReply:
    """One ``/v1/chat/completions`` answer: the assistant's text and the session headers Hermes sent back."""

    content: str
    session_id: str
    session_key: str | None


class HermesGateway:
    """``python -m hermes_cli.main gateway run`` (the ``hermes`` console script) in ``project`` with
    ``HERMES_HOME=home``; its log goes to ``home/gateway.log``. ``env`` is ``hermes_home.hermes_env(home)``."""

    def __init__(self, home: Path, project: Path, env: dict[str, str]) -> None:
        self.home, self.project = home, project
        self.api_key = secrets.token_hex(16)  # the API server refuses short or placeholder keys
        self.port = _free_port()
        self.env = {**env, "API_SERVER_ENABLED": "true", "API_SERVER_HOST": "127.0.0.1",
                    "API_SERVER_PORT": str(self.port), "API_SERVER_KEY": self.api_key}
        self.log_path = home / "gateway.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The gateway process's id (its memory is read from /proc)."""
        assert self._process is not None, "the gateway is not running"
        return self._process.pid

    def __enter__(self) -> Self:
        log = self.log_path.open("wb")
        self._process = subprocess.Popen([sys.executable, "-c", GATEWAY_MAIN, conversation_tap.__file__,
                                          "gateway", "run", "-v"],
                                         cwd=self.project, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise AssertionError(f"hermes gateway exited ({self._process.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise AssertionError(f"hermes gateway did not answer /health in {READY_TIMEOUT:.0f} s:\n{self.log_tail()}")

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:] if self.log_path.exists() else ""

    def chat(self, session_key: str | None, messages: list[dict[str, Any]], *,
             session_id: str | None = None) -> ChatReply:
        """One non-streaming chat completion, authenticated, in the conversation ``session_key``
        (``X-Hermes-Session-Key``; None sends no header: Hermes then keys the session by its id alone);
        ``session_id`` continues that Hermes session (``X-Hermes-Session-Id``: its history comes from state.db)."""
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"}
        if session_key is not None:
            headers["X-Hermes-Session-Key"] = session_key
        if session_id is not None:
            headers["X-Hermes-Session-Id"] = session_id
        body = json.dumps({"model": "hermes-agent", "messages": messages}).encode()
        request = urllib.request.Request(f"{self.url}/v1/chat/completions", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=CHAT_TIMEOUT) as response:
                answer = json.loads(response.read())
                session_id = response.headers.get("X-Hermes-Session-Id", "")
                key = response.headers.get("X-Hermes-Session-Key")
        except urllib.error.HTTPError as error:
            raise AssertionError(f"gateway answered {error.code}: {error.read()[:500]!r}\n{self.log_tail()}") from None
        return ChatReply(answer["choices"][0]["message"]["content"] or "", session_id, key)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
