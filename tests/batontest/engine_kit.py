"""Helpers of the tests that put Baton under faults, fuzzing and planted secrets: a runtime installed from an
environment, a real engine or one agent's Baton on a fake host, every log line at DEBUG, a read-only tree.

Users: the core's through a fake host (``tests/agent_core``: compaction fuzzing, tokenizer faults, secrets:
``installed_host_runtime``, ``make_agent``), the engine's (``tests/hermes``: entry fuzzing, Hermes' hooks under a
failing tokenizer, no network: ``installed_runtime``, ``make_engine``), the CLI's (``tests/cli/test_no_network.py``)
and redaction's (``tests/policy/test_secrets_cli.py``). Kept free of Hermes imports at module level, so the default
(non-hermes) environment can use them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any

TIKTOKEN_ENV = {"BATON_TOKENIZER_BACKEND": "tiktoken", "BATON_TOKENIZER_MODEL": "gpt-4o"}
SLACK_SECONDS = 2.5  # scheduling slack on a loaded 2-core machine (the slow fault lasts 10 s, the others longer)
# the one tool the fault tests' agents offer, and a transcript of its rounds (``transcript``)
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


class LogSink(logging.Handler):
    """Every record of every logger at DEBUG, formatted as a handler would print it (args + traceback)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@contextlib.contextmanager
def capture_all_logs() -> Iterator[LogSink]:
    """Root at DEBUG with a sink; every existing logger re-enabled, everything restored afterwards."""
    sink = LogSink()
    root = logging.getLogger()
    previous = root.level
    loggers = [lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    saved = [(lg, lg.disabled, lg.level) for lg in loggers]
    for lg in loggers:
        lg.disabled = False
        if lg.level > logging.DEBUG:
            lg.setLevel(logging.DEBUG)
    root.addHandler(sink)
    root.setLevel(logging.DEBUG)
    try:
        yield sink
    finally:
        root.removeHandler(sink)
        root.setLevel(previous)
        for lg, disabled, level in saved:
            lg.disabled, lg.level = disabled, level


@contextlib.contextmanager
def installed_runtime(env: Mapping[str, str], *, context_length: int = 65536, model: str | None = None,
                      base_url: str | None = None) -> Iterator[Any]:
    """Install a Baton runtime built from ``env`` as the process runtime (what the plugin's ``register`` does)."""
    from batontest.hosted_agents import installed

    from baton_engine.agent.runtime import BatonRuntime
    from baton_engine.hermes.config import HermesView
    from baton_engine.settings import load_settings

    view = HermesView(engine="baton", model=model, base_url=base_url, context_length=context_length)
    with installed(BatonRuntime(load_settings(env=dict(env)), view)) as runtime:
        yield runtime


@contextlib.contextmanager
def installed_host_runtime(env: Mapping[str, str], *, context_length: int = 65536, model: str | None = None,
                           base_url: str | None = None) -> Iterator[Any]:
    """``installed_runtime`` without Hermes: the same settings from ``env``, the host's main route and window given
    as the core's own view (``agent/runtime.NoView``), for the tests of one agent's Baton through a fake host."""
    from batontest.hosted_agents import installed

    from baton_engine.agent.runtime import BatonRuntime, NoView
    from baton_engine.settings import load_settings

    view = NoView(model=model, base_url=base_url, context_length=context_length)
    with installed(BatonRuntime(load_settings(env=dict(env)), view)) as runtime:
        yield runtime


def make_agent(project_dir: Any) -> Any:
    """One agent's Baton (``agent/agent.Agent``) for ``project_dir`` on a fake host whose working directory it is,
    built as ``make_engine`` builds Hermes' engine (threshold percent 0.75, the window fitted to the runtime's), no
    model told yet."""
    from pathlib import Path

    from batontest.fake_host import FakeHost
    from batontest.started_agent import ADAPTER_VERSION, THRESHOLD_PERCENT

    from baton_engine.agent.agent import Agent

    agent = Agent(FakeHost(Path(project_dir)), project_dir, threshold_percent=THRESHOLD_PERCENT,
                  adapter_version=ADAPTER_VERSION)
    agent.requests.fit_window()
    return agent


def make_engine(project_dir: Any) -> Any:
    """A real ``BatonContextEngine`` for ``project_dir`` (imports Hermes: callers carry marker ``hermes``)."""
    from baton_engine.hermes.engine import BatonContextEngine

    return BatonContextEngine(project_dir=project_dir)


@contextlib.contextmanager
def read_only_tree(path: Any) -> Iterator[None]:
    """Make ``path`` and everything under it unwritable: chmod, plus ``chattr +i`` when running as root
    (root ignores permission bits). Raises ``RuntimeError`` when the tree stays writable."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(path)
    directories = [root, *[p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()]]
    modes = {d: d.stat().st_mode for d in directories}
    immutable: list[Path] = []
    try:
        for directory in directories:
            directory.chmod(0o555)
        if os.geteuid() == 0:
            for directory in directories:
                done = subprocess.run(["chattr", "+i", str(directory)], capture_output=True)
                if done.returncode == 0:
                    immutable.append(directory)
        probe = root / ".write-probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            raise RuntimeError(f"{root} stays writable (no chattr?); cannot simulate a read-only disk")
        yield
    finally:
        for directory in immutable:
            subprocess.run(["chattr", "-i", str(directory)], capture_output=True)
        for directory, mode in modes.items():
            directory.chmod(mode)


def transcript(tag: str, turns: int = 12) -> list[dict[str, Any]]:
    """``turns`` rounds of reading a file (``TOOLS``), tagged with ``tag``, then the user's next request."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Fix the failing test ({tag})."}]
    for i in range(turns):
        call = f"call{tag}{i}"
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "read_file", "arguments": '{"path":"README.md"}'}}]},
            {"role": "tool", "tool_call_id": call, "content": (f"{tag} line {i} " * 80).strip()},
            {"role": "assistant", "content": f"Step {i} of {tag} done."},
        ]
    return messages + [{"role": "user", "content": f"Carry on with {tag}."}]


def fallback_tokens(system: str, margin: int, messages: list[dict[str, Any]]) -> int:
    """What a request of ``system``, ``messages`` and ``TOOLS`` counts while the tokenizer is down: rough + its
    measured margin (``rough.request_margin``, at least ``margin``, the configured fallback margin)."""
    from baton_engine.tokens.rough import estimate_chat_request, request_margin

    request = {"messages": [{"role": "system", "content": system}, *messages], "tools": TOOLS}
    estimate = estimate_chat_request(request)
    return estimate + request_margin(request, estimate, margin)
