"""A REAL llama.cpp llama-server for the llama-real tests: the tiny random-weight Qwen3 GGUF (real vocabulary and
chat template), one process, stopped with its test module.

Why here: one definition of the binary lookup (``BATON_LLAMA_SERVER``, built by ``scripts/llama_server_build.sh``),
the model file, the readiness wait and the shutdown.

    with real_llama_server(tmp, ctx=8192, parallel=2) as url:
        ...  # url has no /v1
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from batontest.assets import REPO_ROOT
from batontest.llama_gguf import tiny_qwen3_gguf

READY_TIMEOUT_SECONDS = float(os.environ.get("BATON_LLAMA_READY_TIMEOUT", "120"))
MODEL_ALIAS = "qwen3-tiny"


def server_binary() -> Path:
    """``BATON_LLAMA_SERVER``, else ``<repo>/.llama-server/build/bin/llama-server``; skips without one, or fails
    under ``BATON_REQUIRE_LLAMA_REAL=1`` (the llama-real tox env never skips silently)."""
    configured = os.environ.get("BATON_LLAMA_SERVER")
    binary = Path(configured) if configured else REPO_ROOT / ".llama-server" / "build" / "bin" / "llama-server"
    if not binary.exists():
        message = (f"no llama-server at {binary}: run `bash scripts/llama_server_build.sh` (or `tox -e llama-real`), "
                   "or set BATON_LLAMA_SERVER to a llama-server binary")
        if os.environ.get("BATON_REQUIRE_LLAMA_REAL") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return binary


@contextmanager
def real_llama_server(workdir: Path, *, ctx: int, parallel: int, alias: str = MODEL_ALIAS) -> Iterator[str]:
    """Start ``llama-server -m tiny.gguf -c ctx --parallel parallel --alias alias`` and yield its base URL (the
    model is served under ``alias``); SIGTERM on exit."""
    binary = server_binary()
    model = tiny_qwen3_gguf()
    port = _free_port()
    log_path = workdir / f"llama-server-{port}.log"
    command = [str(binary), "-m", str(model), "-c", str(ctx), "--parallel", str(parallel), "--host", "127.0.0.1",
               "--port", str(port), "--alias", alias, "--threads", "2"]
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, url, log_path)
        print(f"\nreal llama-server ready in {time.monotonic() - started:.1f} s on {url} (-c {ctx} "
              f"--parallel {parallel})", file=sys.stderr)
        yield url
    finally:
        _stop(process)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_ready(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    """GET /health answers 200 once the model is loaded (503 while loading)."""
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            pytest.fail(f"llama-server exited with {process.returncode} before it was ready:\n{tail}", pytrace=False)
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-3000:]
    pytest.fail(f"llama-server not ready after {READY_TIMEOUT_SECONDS:.0f} s:\n{tail}", pytrace=False)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
