"""The llamacpp backend against a REAL llama.cpp llama-server (tox env llama-real): its counts are the prompt sizes
the server itself reports for the same chat requests, its window is the server's per-slot window, and the server's
own context-overflow refusal is read into the window and the prompt size.

The server is built by ``scripts/llama_server_build.sh`` from the llama.cpp the ``llama-cpp-python`` sdist vendors
and serves a tiny random-weight Qwen3 GGUF with the real Qwen3 vocabulary and chat template
(``batontest.llama_gguf``), ``-c 8192 --parallel 2``: two slots of 4,096 tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from baton_llamacpp import LlamaCppBackend
from baton_llamacpp.detect import detect_llamacpp
from batontest.real_llama import MODEL_ALIAS, real_llama_server

from baton_engine.refusal import PROMPT_TOO_LONG, parse_refusal
from baton_engine.testing import assert_conformant
from baton_engine.testing.corpus import TOOLS, chat_requests
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import detect_server_backend

pytestmark = pytest.mark.llama_real

CTX, PARALLEL = 8192, 2
SLOT_WINDOW = CTX // PARALLEL


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with real_llama_server(tmp_path_factory.mktemp("llama"), ctx=CTX, parallel=PARALLEL) as url:
        yield url


@pytest.fixture
def backend(server: str) -> Iterator[LlamaCppBackend]:
    made = LlamaCppBackend(TokenizerConfig(url=server, model=MODEL_ALIAS, timeout_seconds=60))
    yield made
    made.close()


def _hermes_like() -> list[tuple[str, dict[str, Any]]]:
    """Requests shaped as Hermes sends them to a llama-server beyond the kit's corpus."""
    return [
        ("thinking-off", {"messages": [{"role": "system", "content": "You are Hermes."},
                                       {"role": "user", "content": "Think?"}],
                          "tools": TOOLS, "chat_template_kwargs": {"enable_thinking": False}}),
        ("reasoning-history", {"messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "Add them."},
            {"role": "user", "content": "3+3?"}]}),
        ("extra-body", {"messages": [{"role": "user", "content": "hi"}], "tool_choice": "auto", "tools": TOOLS,
                        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}),
    ]


def _served(server: str, request: dict[str, Any]) -> httpx.Response:
    """The same request as a real chat completion (one output token: the weights are random)."""
    extra = request.get("extra_body") or {}
    body = {**{k: v for k, v in request.items() if k != "extra_body"}, **extra,
            "model": MODEL_ALIAS, "max_tokens": 1, "temperature": 0}
    return httpx.post(f"{server}/v1/chat/completions", json=body, timeout=300)


def test_the_window_is_the_per_slot_window(backend: LlamaCppBackend, server: str) -> None:
    assert backend.max_model_len == SLOT_WINDOW
    props = httpx.get(f"{server}/props", timeout=10).json()
    assert props["total_slots"] == PARALLEL
    assert backend.count_text("x").max_model_len == SLOT_WINDOW


@pytest.mark.parametrize(("name", "request_"), [*chat_requests(), *_hermes_like()],
                         ids=[name for name, _ in [*chat_requests(), *_hermes_like()]])
def test_counts_equal_what_the_server_reports(backend: LlamaCppBackend, server: str, name: str,
                                              request_: dict[str, Any]) -> None:
    """0 difference: ``usage.prompt_tokens`` (and ``timings``: processed + cached) of the real chat completion,
    or ``n_prompt_tokens`` of its real refusal when the prompt does not fit the 4,096-token slot."""
    counted = backend.count_chat(request_)
    reply = _served(server, request_)
    if reply.status_code == 200:
        data = reply.json()
        assert counted.tokens == data["usage"]["prompt_tokens"]
        assert counted.tokens == data["timings"]["prompt_n"] + data["timings"]["cache_n"]
        assert counted.tokens < SLOT_WINDOW
    else:
        error = reply.json()["error"]
        assert (reply.status_code, error["type"]) == (400, "exceed_context_size_error"), error
        assert (error["n_prompt_tokens"], error["n_ctx"]) == (counted.tokens, SLOT_WINDOW)
    print(f"\n[llama-real] {name}: baton {counted.tokens}, server {reply.status_code}")


def test_a_too_long_request_is_refused_and_the_refusal_read(backend: LlamaCppBackend, server: str) -> None:
    request = {"messages": [{"role": "user", "content": "token budget " * 3000}]}
    counted = backend.count_chat(request).tokens
    assert counted > SLOT_WINDOW
    reply = _served(server, request)
    assert reply.status_code == 400
    refusal = parse_refusal(reply.json())
    assert refusal is not None
    assert (refusal.kind, refusal.server, refusal.window, refusal.prompt_tokens) == (
        PROMPT_TOO_LONG, "llama.cpp", SLOT_WINDOW, counted)
    assert parse_refusal(reply.text) == refusal  # the body as text, as an SDK error's message carries it


def test_conformant_with_the_hf_backend_as_reference(server: str, hf) -> None:
    report = assert_conformant(LlamaCppBackend(TokenizerConfig(url=server, timeout_seconds=60)), reference=hf)
    print(f"\n[llama-real] agreement: {report.check('agreement').detail}; speed: {report.check('speed').detail}")


def test_detected_on_an_unconfigured_route(server: str) -> None:
    assert detect_llamacpp(server + "/v1", MODEL_ALIAS, 5.0) is True
    assert detect_server_backend(server + "/v1", "any-name-hermes-uses", 5.0) == "llamacpp"


def test_through_the_counter_the_count_is_exact(backend: LlamaCppBackend) -> None:
    counted = TokenCounter(backend, fallback_margin_tokens=512).count_chat(chat_requests()[0][1])
    assert counted.exact is True and counted.source == backend.source and counted.max_model_len == SLOT_WINDOW
