"""The hf backend without transformers' private compiler, and piecewise counting that checks itself."""

from __future__ import annotations

from typing import Any

import pytest

from baton_hf.normalize import normalize_request
from baton_engine.tokens.pieces import PieceCounter
from batontest import assets

from baton_hf import jinja_env
from baton_hf.backend import HfBackend, _private_encoder, _split_tokens
from baton_hf.probes import probe_texts
from baton_hf.sandbox import install_fast_paths
from baton_hf.template import accepted_kwargs, detect_content_format

REQUEST = {
    "messages": [
        {"role": "system", "content": "Be brief. 東京 ✓"},
        {"role": "user", "content": [{"type": "text", "text": "Time in Paris?"}, {"type": "text", "text": "  now"}]},
        {"role": "assistant", "content": "", "reasoning": "Use the tool.", "tool_calls": [
            {"id": "call00001", "type": "function", "function": {"name": "get_time", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call00001", "content": "12:00"},
        {"role": "assistant", "content": "Noon 🚀"},
    ],
    "tools": [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}],
}
GENERATION_TAG = ("{% for m in messages %}{% generation %}{% for part in m['content'] %}{{ part.text }}"
                  "{% endfor %}{% endgeneration %}{% endfor %}")


def whole_count(backend: HfBackend, text: str) -> int:
    return len(_private_encoder(backend._tokenizer).encode(text, add_special_tokens=False).ids)


def public_render(tokenizer: Any, request: dict[str, Any]) -> str:
    normalized = normalize_request(request, content_format=detect_content_format(tokenizer.chat_template))
    return tokenizer.apply_chat_template(normalized.messages, tools=normalized.tools, tokenize=False,
                                         **normalized.chat_template_kwargs)


def qwen_tokenizer(template_suffix: str) -> Any:
    """Qwen3 with its template plus a comment: a template string no cache has seen yet."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(assets.qwen3_dir()))
    tokenizer.chat_template = tokenizer.chat_template + "{#- " + template_suffix + " #}"
    return tokenizer


@pytest.fixture
def no_private_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jinja_env, "PRIVATE_COMPILER", "transformers.utils.chat_template_utils._gone_in_a_release")
    assert jinja_env.private_compiler() is None


def test_without_the_private_compiler_counts_are_unchanged(qwen: HfBackend, no_private_compiler: None) -> None:
    tokenizer = qwen_tokenizer("no private compiler")
    template = tokenizer.chat_template
    assert not install_fast_paths(template)
    assert detect_content_format(template) == detect_content_format(qwen._template)
    assert "enable_thinking" in accepted_kwargs(template, tokenizer.apply_chat_template)
    assert detect_content_format(GENERATION_TAG + "{#- fallback #}") == "openai"
    backend = HfBackend(tokenizer, "qwen3-public")
    count = backend.count_chat(REQUEST).tokens
    assert count == qwen.count_chat(REQUEST).tokens == whole_count(backend, public_render(tokenizer, REQUEST))
    assert backend.piecewise and backend.incremental


def test_with_the_private_compiler_the_fast_paths_are_installed(qwen: HfBackend) -> None:
    tokenizer = qwen_tokenizer("private compiler")
    assert jinja_env.private_compiler() is not None
    assert install_fast_paths(tokenizer.chat_template)
    assert "is_safe_attribute" in vars(jinja_env.compiled_environment(tokenizer.chat_template))
    assert detect_content_format(GENERATION_TAG) == "openai"
    assert HfBackend(tokenizer, "qwen3-private").count_chat(REQUEST).tokens == qwen.count_chat(REQUEST).tokens


def test_real_tokenizers_keep_piecewise_counting(qwen: HfBackend, nemo: HfBackend) -> None:
    assert qwen.piecewise and nemo.piecewise


def test_sentencepiece_metaspace_switches_piecewise_off() -> None:
    backend = assets.hf_backend(assets.sentencepiece_dir())
    assert not backend.piecewise and not backend.incremental
    encoder = _private_encoder(backend._tokenizer)
    tokens = _split_tokens(encoder)
    splitting = PieceCounter(
        lambda pieces: [len(e.ids) for e in encoder.encode_batch(list(pieces), add_special_tokens=False)], tokens
    )
    texts = [*probe_texts(frozenset(tokens)), backend.render(REQUEST)]
    assert any(splitting.count(text) != whole_count(backend, text) for text in texts)  # why the check exists
    for text in texts:
        assert backend.count_text(text).tokens == whole_count(backend, text)
    assert backend.count_chat(REQUEST).tokens == whole_count(backend, public_render(backend._tokenizer, REQUEST))
