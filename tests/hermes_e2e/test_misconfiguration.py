"""The real ``hermes chat -q`` (the installed CLI, a subprocess) with a misconfigured Baton: what the user
sees on the terminal, and that Baton (not Hermes' compressor) still budgets the request.

Why the CLI and not the driver: the start-up lines must reach the terminal the user runs Hermes in; Hermes
0.19 sends plugin warnings only to its log files (and one-shot ``-z`` shows none of them).

On Hermes 0.22 a ``chat -q`` process that has answered can still die in ``Py_FinalizeEx`` (SIGSEGV / SIGBUS): a core
dump showed a NeMo Relay native thread calling asyncio's ``call_soon_threadsafe`` while the interpreter finalized,
3 of ~23 runs of this module under load. It is the host's teardown crash, the kind upstream fixed for one-shot mode
only (hermes-agent #30387, #37632; PR #67905: ``-z`` leaves with ``os._exit``). ``exited`` accepts it only after
the answer was printed and with the interpreter's own fatal-error report; anything else is a failure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from batontest.hermes_home import git_project, hermes_config, hermes_env, write_hermes_home
from batontest.hermes_run import require_hermes
from batontest.model_server import ModelServer, ScriptedPolicy

pytestmark = pytest.mark.hermes
WINDOW = 65536


def _hermes_chat(workdir: Path, baton: dict[str, Any], extra_env: dict[str, str] | None = None
                 ) -> tuple[subprocess.CompletedProcess[str], ModelServer]:
    require_hermes()
    hermes = Path(sys.executable).with_name("hermes")  # the CLI installed beside this interpreter
    with ModelServer(ScriptedPolicy([], final_answer="Hello back."), context_window=WINDOW) as server:
        home = write_hermes_home(workdir / "hermes-home", hermes_config(
            base_url=server.base_url, model="qwen3-local", context_length=WINDOW, max_tokens=WINDOW, baton=baton))
        project = git_project(workdir / "project", {"README.md": "# demo\n"})
        # PYTHONFAULTHANDLER: a native crash reports itself on stderr (``exited`` reads that report)
        env = hermes_env(home, {**(extra_env or {}), "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                                "PYTHONFAULTHANDLER": "1"})
        done = subprocess.run([str(hermes), "chat", "-q", "Say hello"], cwd=project, env=env, capture_output=True,
                              text=True, timeout=240, stdin=subprocess.DEVNULL, check=False)
    return done, server


TEARDOWN_SIGNALS = frozenset({-signal.SIGSEGV, -signal.SIGBUS, -signal.SIGABRT})


def exited(done: subprocess.CompletedProcess[str], answer: str = "Hello back.") -> bool:
    """Hermes exited 0, or (the host's teardown crash above) died of a signal during the interpreter's
    finalization after printing ``answer``."""
    if done.returncode == 0:
        return True
    return done.returncode in TEARDOWN_SIGNALS and answer in done.stdout and "Fatal Python error" in done.stderr


def _baton_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("baton: ")]


def _budgeted_by_baton(server: ModelServer) -> None:
    """Baton is Hermes' engine: its tools are offered (only the selected context engine's are), and where the host
    sends an output cap (0.19's ``hermes chat`` sends model.max_tokens = the whole window, which the server refuses
    under Hermes' own compressor) Baton lowered it to what fits beside the counted prompt. (0.22's ``hermes chat``
    sends no cap at all: nothing to lower.)"""
    assert not server.rejections, [r.rejection for r in server.rejections]
    first = server.main_requests[0]
    offered = {(tool.get("function") or {}).get("name") for tool in first.tools or []}
    assert "baton_status" in offered, sorted(offered)
    assert first.max_tokens is None or first.max_tokens < WINDOW


def test_a_typo_key_is_named_on_the_terminal_and_baton_still_runs(tmp_path: Path) -> None:
    done, server = _hermes_chat(tmp_path, {"fresh_tail_token": 6000})
    assert exited(done), done.stderr[-2000:]
    lines = _baton_lines(done.stderr)
    assert len(lines) == 1 and "baton.fresh_tail_token in config.yaml is not a setting (ignored); " \
        "did you mean baton.fresh_tail_tokens?" in lines[0]
    assert "Hello back." in done.stdout
    _budgeted_by_baton(server)


@pytest.mark.parametrize("how", ["missing path", "unknown backend"])
def test_a_tokenizer_that_cannot_start_is_named_on_the_terminal(tmp_path: Path, how: str) -> None:
    missing = tmp_path / "models" / "qwen3"
    if how == "missing path":
        done, server = _hermes_chat(tmp_path, {"tokenizer": {"backend": "hf", "path": str(missing)}})
        expected = [f"{str(missing)!r} (no such directory)", "baton.tokenizer.path in config.yaml"]
    else:
        done, server = _hermes_chat(tmp_path, {}, {"BATON_TOKENIZER_BACKEND": "nosuch"})
        expected = ["set by BATON_TOKENIZER_BACKEND", "'nosuch' is not installed"]
    assert exited(done), done.stderr[-2000:]
    lines = _baton_lines(done.stderr)
    assert len(lines) == 1 and all(part in lines[0] for part in expected), lines
    assert "Baton counts with estimates" in lines[0]
    _budgeted_by_baton(server)


def test_only_a_teardown_crash_after_the_answer_is_accepted() -> None:
    def run(code: int, out: str, err: str) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(["hermes"], code, out, err)

    crashed = "Fatal Python error: Segmentation fault\n\nThread 0x0000000000000007 (most recent call first):"
    assert exited(run(0, "", "")) and exited(run(-signal.SIGSEGV, "Hello back.\n", crashed))
    assert not exited(run(-signal.SIGSEGV, "", crashed))  # died before answering
    assert not exited(run(-signal.SIGSEGV, "Hello back.\n", ""))  # no interpreter report: not the teardown crash
    assert not exited(run(1, "Hello back.\n", crashed)) and not exited(run(-signal.SIGKILL, "Hello back.\n", crashed))
