"""One counter per route: the tokenizer follows the model, and a tokenizer server's window stays with its routes."""

from __future__ import annotations

import re

import pytest

from baton_engine.agent.runtime import BatonRuntime
from baton_engine.hermes.config import HermesView
from baton_engine.settings import SettingsError, load_settings
from baton_engine.tokens.plugins import installed_backends
from batontest.assets import qwen3_dir
from batontest.vllm_standin import VllmStandin

MAIN_MODEL, MAIN_URL = "qwen3-local", "http://127.0.0.1:8000/v1"
MESSAGES = {"messages": [{"role": "user", "content": "hello there, how are the tokens today?"}]}


def runtime_with(baton: dict) -> BatonRuntime:
    return BatonRuntime(load_settings({}, baton), HermesView(engine="baton", model=MAIN_MODEL, base_url=MAIN_URL,
                                                             context_length=65536))


def test_the_configured_tokenizer_serves_the_configured_model_only() -> None:
    runtime = runtime_with({"tokenizer": {"backend": "hf", "path": str(qwen3_dir())}})
    main = runtime.for_route(MAIN_MODEL, MAIN_URL, "custom")
    assert main is runtime.main and main.source().startswith("hf:")
    assert main.count_chat(MESSAGES).exact
    # another model (a /model switch, a fallback provider) is not counted with Qwen3's tokenizer
    other = runtime.for_route("claude-sonnet-4", "https://api.anthropic.com", "anthropic")
    assert "auto for model 'claude-sonnet-4'" in other.why
    assert not other.count_chat(MESSAGES).exact
    # an OpenAI-family name gets tiktoken through auto
    assert runtime.for_route("gpt-4o", "https://api.openai.com/v1", "openai").source().startswith("tiktoken")
    # the same model on another server is another route
    assert runtime.for_route(MAIN_MODEL, "http://10.9.9.9:8000/v1", "custom") is not runtime.main


def test_a_tokenizer_routes_entry_wins_and_counters_are_shared_per_tokenizer() -> None:
    runtime = runtime_with({"tokenizer": {"backend": "rough"},
                            "tokenizer_routes": [{"match": {"model": "qwen3-*b"}, "backend": "hf",
                                                  "path": str(qwen3_dir())}]})
    first, second = runtime.for_route("qwen3-32b", None, None), runtime.for_route("qwen3-8b", "http://x:1/v1", None)
    assert "tokenizer_routes entry model=qwen3-*b" in first.why
    assert first.counter() is second.counter() and first.count_chat(MESSAGES).exact
    assert runtime.for_route(MAIN_MODEL, MAIN_URL, None).source().startswith("rough")


def test_a_routes_window_is_its_servers_else_its_entrys_else_unknown() -> None:
    runtime = runtime_with({"tokenizer": {"backend": "rough"},
                            "tokenizer_routes": [{"match": {"model": "qwen3-*b"}, "backend": "hf",
                                                  "path": str(qwen3_dir()), "context_length": "32768"}]})
    assert runtime.for_route("qwen3-8b", None, None).known_window() == 32_768
    assert runtime.for_route("gpt-4o", "https://api.openai.com/v1", "openai").known_window() is None


def test_a_servers_max_model_len_is_the_window_of_its_own_routes_only() -> None:
    with VllmStandin(max_model_len=40_960) as server:
        runtime = runtime_with({"tokenizer": {"backend": "vllm", "url": server.url, "model": server.model_name}})
        main = runtime.for_route(MAIN_MODEL, MAIN_URL, "custom")
        assert main.count_chat(MESSAGES).exact
        assert main.server_window() == 40_960
        elsewhere = runtime.for_route("gpt-4o", "https://api.openai.com/v1", "openai")
        elsewhere.count_chat(MESSAGES)
        assert elsewhere.server_window() is None
        runtime.close()


@pytest.mark.parametrize(("routes", "message"), [
    ({"match": {"model": "gpt-*"}}, "backend in config.yaml is required"),
    ({"match": {}, "backend": "tiktoken"}, "non-empty 'match'"),
    ({"match": {"name": "x"}, "backend": "tiktoken"}, "match.name in config.yaml is not a match key"),
    ({"match": {"model": "x"}, "backend": "tiktoken", "pth": "/m"},
     "pth in config.yaml is not a setting; did you mean baton.tokenizer_routes[0].path?"),
    ({"match": {"model": "x"}, "backend": "tiktoken", "context_length": 10}, "context_length in config.yaml must be"),
])
def test_bad_tokenizer_routes_say_what_is_wrong(routes: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        load_settings({}, {"tokenizer_routes": [routes]})


def test_a_new_routes_vllm_server_is_asked_once_and_counts_for_itself() -> None:
    """Issue 30 item 3: a route nobody configured (``/model``, a fallback provider) whose server is vLLM counts
    exactly through its /tokenize, budgets against its max_model_len, and the server is asked once."""
    with VllmStandin(max_model_len=32_768) as server:
        runtime = runtime_with({"tokenizer": {"backend": "hf", "path": str(qwen3_dir())}})
        url = server.url + "/v1"
        routes = [runtime.for_route(server.model_name, url, "custom") for _ in range(3)]
        detectors = [name for name, spec in installed_backends().items() if spec.detect is not None]
        assert detectors == ["llamacpp", "vllm"]
        # one probe per detector (llamacpp's answers no, vllm's yes), once for the server, before any count
        assert server.requests_received["/v1/models"] == len(detectors)
        route = routes[-1]
        assert "its server counts for itself (vllm)" in route.why and route.source() == "vllm:" + server.url.split("//")[1]
        counted = route.count_chat(MESSAGES)
        expected = server.tokenize({**MESSAGES, "model": server.model_name})[1]["count"]
        assert counted.exact and counted.tokens == expected
        assert route.server_window() == 32_768
        # the same server does not serve another model: not asked to count it
        assert "not the configured model" in runtime.for_route("another-model", url, "custom").why


def test_a_server_that_cannot_count_keeps_the_estimate() -> None:
    from batontest.model_server import ModelServer, ScriptedPolicy

    runtime = runtime_with({"tokenizer": {"backend": "hf", "path": str(qwen3_dir())}})
    with ModelServer(ScriptedPolicy([]), model_name="chat-only") as server:  # an OpenAI-compatible chat server
        route = runtime.for_route("chat-only", server.base_url, "custom")
    assert "not the configured model" in route.why and not route.count_chat(MESSAGES).exact
    unreachable = runtime.for_route("nowhere", "http://127.0.0.1:9/v1", "custom")
    assert "not the configured model" in unreachable.why
