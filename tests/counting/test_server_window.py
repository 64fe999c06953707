"""The window a server states for itself (``tokens/server_window``): vLLM and llama.cpp through their backends'
``window``, Ollama through its own routes (the documented bodies, ``batontest.ollama_standin``); anything else
says nothing."""

from __future__ import annotations

from batontest.llama_standin import LlamaStandin
from batontest.model_server import ModelServer, ScriptedPolicy
from batontest.ollama_standin import MODEL, OllamaStandin

from baton_engine.tokens.server_window import ps_context_length, root_of, server_window, show_num_ctx


def test_vllm_states_max_model_len_through_its_backend() -> None:
    with ModelServer(ScriptedPolicy([]), context_window=16_384, counts_for_itself=True) as server:
        found = server_window(server.base_url, server.model_name, 5.0)
        assert found is not None and (found.tokens, found.said_by) == (16_384, "vllm server")
        assert server_window(server.base_url, "another-model", 5.0) is None  # it does not serve that one


def test_llama_cpp_states_its_per_slot_n_ctx_through_its_backend() -> None:
    with LlamaStandin(n_ctx=4096) as server:
        found = server_window(server.url + "/v1", "qwen3", 5.0)
    assert found is not None and (found.tokens, found.said_by) == (4096, "llamacpp server")


def test_ollama_states_the_loaded_models_context_length_first() -> None:
    """/api/ps is what the runner was started with (Modelfile num_ctx, OLLAMA_CONTEXT_LENGTH or the VRAM default):
    its 4,096 wins over the Modelfile's 2,048 of /api/show (a request or a reload may have changed it)."""
    with OllamaStandin() as server:
        found = server_window(server.base_url, MODEL, 5.0)
        assert found is not None and found.tokens == 4096 and "/api/ps" in found.said_by and found.ollama
        assert server_window(server.base_url, "gemma4:latest", 5.0).tokens == 4096  # the same model to Ollama
        assert all(body is None for method, _, body in server.asked if method == "GET")  # no prompt, no credential


def test_ollama_without_the_model_loaded_states_the_modelfile_num_ctx_and_nothing_without_one() -> None:
    with OllamaStandin() as server:
        server.ps = {"models": []}
        found = server_window(server.base_url, MODEL, 5.0)
        assert found is not None and found.tokens == 2048 and "num_ctx" in found.said_by
        assert ("POST", "/api/show", {"model": MODEL}) in server.asked  # the model's name only
        server.show["parameters"] = "temperature 0.7"  # the trained 131,072 is not what Ollama serves
        assert server_window(server.base_url, MODEL, 5.0) is None
        assert server_window(server.base_url, None, 5.0) is None  # no model to ask about


def test_ollama_replies_are_read_strictly() -> None:
    assert ps_context_length({"models": [{"name": "gemma4:latest", "context_length": 8192}]}, "gemma4") == 8192
    assert ps_context_length({"models": [{"name": "other", "context_length": 8192}]}, "gemma4") is None
    assert ps_context_length({"models": [{"name": "gemma4", "size": 1}]}, "gemma4") is None  # before 0.9.7
    assert ps_context_length({"models": [{"name": "gemma4", "context_length": "4096"}]}, "gemma4") is None
    assert ps_context_length([], "gemma4") is None
    capped = {"parameters": "num_ctx 262144", "model_info": {"general.architecture": "llama",
                                                            "llama.context_length": 8192}}
    assert show_num_ctx(capped) == 8192  # Ollama serves no more than the model was trained for
    assert show_num_ctx({"parameters": "num_ctx                        8192\nstop \"<|im_end|>\""}) == 8192
    assert show_num_ctx({"parameters": "num_ctx lots"}) is None and show_num_ctx(None) is None


def test_a_server_that_states_nothing_or_is_down_gives_no_window() -> None:
    with ModelServer(ScriptedPolicy([]), context_window=16_384) as server:  # OpenAI-compatible, not vLLM
        assert server_window(server.base_url, server.model_name, 5.0) is None
    assert server_window("http://127.0.0.1:9/v1", "m", 2.0) is None


def test_root_of_strips_the_api_prefix() -> None:
    assert root_of("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"
    assert root_of("http://h:11434") == "http://h:11434"
