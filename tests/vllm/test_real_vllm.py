"""Conformance against a REAL vLLM 0.32 server (tox env vllm-real): the hf backend, the vllm backend
and the loopback stand-in must all agree with it, token for token."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from baton_engine.testing import assert_conformant
from baton_engine.tokens.contract import CannotCount, TokenizerConfig
from baton_hf.backend import HfBackend
from baton_vllm import VllmBackend
from baton_vllm.payload import chat_payload

from .conftest import REAL_MAX_MODEL_LEN, REAL_MODEL_NAME

pytestmark = pytest.mark.vllm_real


@pytest.fixture(scope="module")
def real(real_vllm: str) -> VllmBackend:
    backend = VllmBackend(TokenizerConfig(url=real_vllm + "/v1", model=REAL_MODEL_NAME, timeout_seconds=30))
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def hf(qwen3_tokenizer_dir) -> HfBackend:
    return HfBackend.from_config(TokenizerConfig(backend="hf", path=str(qwen3_tokenizer_dir)))


def _tokens(url: str, payload: dict[str, Any]) -> tuple[int, list[int] | None]:
    reply = httpx.post(url + "/tokenize", json=payload, timeout=30)
    return reply.status_code, reply.json().get("tokens") if reply.status_code == 200 else None


def test_hf_backend_count_equals_real_vllm(real: VllmBackend, hf: HfBackend, chat_case: dict[str, Any]) -> None:
    got = real.count_chat(chat_case)
    assert got.exact is True and got.max_model_len == REAL_MAX_MODEL_LEN
    assert hf.count_chat(chat_case).tokens == got.tokens


def test_standin_tokens_equal_real_vllm(real_vllm: str, standin, chat_case: dict[str, Any]) -> None:
    real_status, real_tokens = _tokens(real_vllm, chat_payload(chat_case, REAL_MODEL_NAME))
    standin_status, standin_tokens = _tokens(standin.url, chat_payload(chat_case, standin.model_name))
    assert real_status == standin_status == 200
    assert standin_tokens == real_tokens


@pytest.mark.parametrize("text", ["hello world", "", "数据 🚀 <|im_start|> literal", "a  b\n\n\tc " * 50])
def test_text_counts_agree(real: VllmBackend, hf: HfBackend, standin, text: str) -> None:
    standin_backend = VllmBackend(TokenizerConfig(url=standin.url))
    assert real.count_text(text).tokens == hf.count_text(text).tokens == standin_backend.count_text(text).tokens
    standin_backend.close()


@pytest.mark.parametrize(
    "payload",
    [
        {"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": True, "continue_final_message": True},
        {"messages": [{"role": "user", "content": "x"}], "model": "not-served"},
        {"prompt": "x", "model": "not-served"},
        {"messages": [{"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"k": 1}}}]}]},
    ],
    ids=["both-prompt-flags", "unknown-model-chat", "unknown-model-text", "dict-arguments"],
)
def test_standin_rejects_what_real_vllm_rejects(real_vllm: str, standin, payload: dict[str, Any]) -> None:
    real_status, _ = _tokens(real_vllm, payload)
    standin_status, _ = _tokens(standin.url, payload)
    assert real_status == standin_status and real_status in (400, 404)


def test_max_model_len_read_from_the_real_server(real_vllm: str) -> None:
    fresh = VllmBackend(TokenizerConfig(url=real_vllm, model=REAL_MODEL_NAME, context_length=32768))
    assert fresh.max_model_len == REAL_MAX_MODEL_LEN  # GET /v1/models, before any count
    assert fresh.count_text("x").max_model_len == REAL_MAX_MODEL_LEN
    mismatch = fresh.max_model_len_mismatch
    assert mismatch is not None and (mismatch.server, mismatch.effective) == (REAL_MAX_MODEL_LEN, 32768)
    fresh.close()


def test_unknown_model_is_cannot_count_on_the_real_server(real_vllm: str) -> None:
    wrong = VllmBackend(TokenizerConfig(url=real_vllm, model="not-served"))
    with pytest.raises(CannotCount, match="HTTP 404"):
        wrong.count_text("x")
    wrong.close()


def test_conformance_kit_against_real_vllm_with_hf_as_reference(real_vllm: str, hf: HfBackend) -> None:
    """The kit an author would run (``baton tokens check vllm --reference hf``), against the real server.

    A fresh backend: the kit closes it at the end, and the module's ``real`` backend is shared."""
    backend = VllmBackend(TokenizerConfig(url=real_vllm, model=REAL_MODEL_NAME, timeout_seconds=30))
    report = assert_conformant(backend, reference=hf)
    print(report.text())
    assert report.check("agreement").detail == "equal to hf:qwen3 on 14 of 14 corpus items"
    assert report.check("results").detail == "9/9 chat requests and 5/5 texts counted"
