"""The first-party backends pass the conformance kit, with a reference where one can check their counts."""

from __future__ import annotations

import pytest
from baton_llamacpp import LlamaCppBackend
from baton_tiktoken.backend import TiktokenBackend
from baton_vllm import VllmBackend
from batontest.assets import hf_backend, mistral_nemo_dir, qwen3_dir
from batontest.llama_standin import LlamaStandin
from batontest.vllm_standin import VllmStandin

from baton_engine.testing import assert_conformant
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.rough import RoughBackend


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"], ids=["o200k", "cl100k"])
def test_tiktoken(model: str) -> None:
    report = assert_conformant(TiktokenBackend.from_config(TokenizerConfig(model=model)))
    assert report.check("honest-exact").detail == "exact text counts depend on the text, not its length"


@pytest.mark.parametrize("tokenizer_dir", [qwen3_dir, mistral_nemo_dir], ids=["qwen3", "mistral-nemo"])
def testhf_backend(tokenizer_dir) -> None:
    report = assert_conformant(hf_backend(tokenizer_dir()))
    assert report.check("results").detail == "9/9 chat requests and 5/5 texts counted"


def test_vllm_against_the_standin_with_hf_as_reference() -> None:
    with VllmStandin(qwen3_dir()) as server:
        backend = VllmBackend(TokenizerConfig(url=server.url, model=server.model_name))
        report = assert_conformant(backend, reference=hf_backend(qwen3_dir()))
    assert report.check("agreement").detail == "equal to hf:qwen3 on 14 of 14 corpus items"


def test_llamacpp_against_the_standin_with_hf_as_reference() -> None:
    with LlamaStandin(qwen3_dir()) as server:
        report = assert_conformant(LlamaCppBackend(TokenizerConfig(url=server.url)), reference=hf_backend(qwen3_dir()))
    assert report.check("agreement").detail == "equal to hf:qwen3 on 14 of 14 corpus items"


def test_rough() -> None:
    report = assert_conformant(RoughBackend())
    assert report.check("honest-exact").detail == "no length probe got an exact count"
