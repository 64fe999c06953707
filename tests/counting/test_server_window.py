"""The window a server states for itself (``tokens/server_window``): vLLM through its backend's ``window``,
llama.cpp's /props and Ollama's /api/show through the generic reads; anything else says nothing."""

from __future__ import annotations

import json
from typing import Any

from batontest.loopback import JsonHandler, LoopbackServer
from batontest.model_server import ModelServer, ScriptedPolicy

from baton_engine.tokens.server_window import root_of, server_window

# Shapes of the real servers' replies (llama.cpp b6xxx `llama-server -c 16384 --parallel 4`; Ollama 0.12 /api/show
# of a model whose Modelfile sets num_ctx), cut to the fields that matter plus neighbours.
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096, "params": {"n_predict": -1}},
               "total_slots": 4, "model_path": "/models/qwen3.gguf", "chat_template": "{{ messages }}",
               "build_info": "b6000"}
OLLAMA_SHOW = {"modelfile": "FROM qwen3\nPARAMETER num_ctx 8192\n",
               "parameters": "num_ctx                        8192\nstop                           \"<|im_end|>\"",
               "template": "{{ .Prompt }}", "details": {"family": "qwen3"},
               "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}}


class _Handler(JsonHandler):
    owner: Any

    def do_GET(self) -> None:  # noqa: N802
        self.send_json(*self.owner.answers.get(("GET", self.path), (404, {"error": "not found"})))

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.owner.posted.append(body)
        self.send_json(*self.owner.answers.get(("POST", self.path), (404, {"error": "not found"})))


class Replies(LoopbackServer):
    handler = _Handler

    def __init__(self, answers: dict[tuple[str, str], tuple[int, Any]]) -> None:
        self.answers, self.posted = answers, []


def test_vllm_states_max_model_len_through_its_backend() -> None:
    with ModelServer(ScriptedPolicy([]), context_window=16_384, counts_for_itself=True) as server:
        found = server_window(server.base_url, server.model_name, 5.0)
        assert found is not None and (found.tokens, found.said_by) == (16_384, "vllm server")
        assert server_window(server.base_url, "another-model", 5.0) is None  # it does not serve that one


def test_llama_cpp_states_its_per_slot_n_ctx() -> None:
    with Replies({("GET", "/props"): (200, LLAMA_PROPS)}) as server:
        found = server_window(server.url + "/v1", "qwen3", 5.0)
    assert found is not None and found.tokens == 4096 and "llama.cpp" in found.said_by


def test_ollama_states_a_modelfile_num_ctx_and_nothing_without_one() -> None:
    with Replies({("POST", "/api/show"): (200, OLLAMA_SHOW)}) as server:
        found = server_window(server.url + "/v1", "qwen3", 5.0)
        assert found is not None and found.tokens == 8192 and "num_ctx" in found.said_by
        assert server.posted == [{"model": "qwen3"}]  # the model's name, no prompt, no credential
    without = {**OLLAMA_SHOW, "parameters": "stop \"<|im_end|>\""}  # the model's 40,960 is not what Ollama serves
    with Replies({("POST", "/api/show"): (200, without)}) as server:
        assert server_window(server.url + "/v1", "qwen3", 5.0) is None


def test_a_server_that_states_nothing_or_is_down_gives_no_window() -> None:
    with ModelServer(ScriptedPolicy([]), context_window=16_384) as server:  # OpenAI-compatible, not vLLM
        assert server_window(server.base_url, server.model_name, 5.0) is None
    with Replies({("GET", "/props"): (200, {"default_generation_settings": {"n_ctx": "4096"}})}) as server:
        assert server_window(server.url, None, 5.0) is None  # a wrong type is no window
    assert server_window("http://127.0.0.1:9/v1", "m", 2.0) is None


def test_root_of_strips_the_api_prefix() -> None:
    assert root_of("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"
    assert root_of("http://h:11434") == "http://h:11434"
