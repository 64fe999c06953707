"""Fixtures for the vllm backend: the loopback stand-in, a REAL vLLM server (marker vllm_real) and
a corpus of chat requests that exercise vLLM's normalisation (tools, tool calls, thinking, empties)."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batontest.assets import qwen3_dir
from batontest.real_vllm import real_vllm_server
from batontest.vllm_standin import VllmStandin

REAL_MODEL_NAME = "qwen3-tiny"
REAL_MAX_MODEL_LEN = 40960


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


@pytest.fixture(scope="module")
def real_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real vLLM 0.32 server (random weights, real Qwen3 tokenizer); stopped when its module ends
    (one real server at a time: the oracle loop starts its own).

    ``BATON_VLLM_URL`` points at an already running one instead (served as qwen3-tiny, same model dir).
    """
    running = os.environ.get("BATON_VLLM_URL")
    if running:
        yield running.rstrip("/")
        return
    with real_vllm_server(tmp_path_factory.mktemp("vllm"), max_model_len=REAL_MAX_MODEL_LEN,
                          served_model_name=REAL_MODEL_NAME) as url:
        yield url
