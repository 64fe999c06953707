"""The compacted list, with Hermes' system prompt prepended, renders through the REAL chat templates
of Qwen3 and Mistral-NeMo (vLLM's request normalisation first, as a server would apply it)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton_engine.compaction import build_compacted_messages, degrade
from baton_hf.backend import HfBackend
from batontest import assets
from compaction.conversations import (
    HERMES_SYSTEM_PROMPT,
    assert_alternates,
    assert_valid_openai,
    block,
    cl100k_messages,
    conversations,
    latest_real_request,
    text_of,
)

TEMPLATES = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.fixture(scope="module")
def qwen3() -> HfBackend:
    return assets.hf_backend(assets.qwen3_dir())


@pytest.fixture(scope="module")
def nemo() -> HfBackend:
    return assets.hf_backend(assets.mistral_nemo_dir())


def as_hermes_sends(messages: list[dict]) -> dict:
    """Hermes prepends its system prompt unless the (gateway) transcript already starts with one."""
    prompt = [] if messages[0]["role"] == "system" else [{"role": "system", "content": HERMES_SYSTEM_PROMPT}]
    return {"messages": prompt + messages, "add_generation_prompt": True}


def assert_renders(backend: HfBackend, messages: list[dict], source: list) -> None:
    prompt = backend.render(as_hermes_sends(messages))
    assert "[Baton " in prompt and HERMES_SYSTEM_PROMPT in prompt
    latest = latest_real_request(source)
    if latest is not None:  # templates join text parts differently; each part must be there
        for line in text_of(latest).splitlines():
            assert line.strip()[:30] in prompt


@TEMPLATES
@given(messages=conversations(clean=True), fresh_tail_tokens=st.sampled_from([0, 60, 400, 3_000]), stale=st.booleans())
def test_compacted_lists_render_with_qwen3_and_mistral_nemo(
    qwen3: HfBackend, nemo: HfBackend, messages: list, fresh_tail_tokens: int, stale: bool
) -> None:
    def count(candidate: list[dict]) -> int:  # the real Qwen3 chat-template count, as the hf backend gives it
        return qwen3.count_chat({"messages": candidate, "add_generation_prompt": False}).tokens

    result = build_compacted_messages(
        messages, block=block(stale=stale), fresh_tail_tokens=fresh_tail_tokens, count_tokens=count
    )
    assert not result.counting_fell_back
    assert_valid_openai(result.messages)
    assert_alternates(result.messages)
    if result.tail_messages:
        assert count(result.messages[-result.tail_messages :]) <= fresh_tail_tokens
    for backend in (qwen3, nemo):
        assert_renders(backend, result.messages, messages)


@TEMPLATES
@given(messages=conversations(clean=True), keep_recent=st.integers(0, 8))
def test_degraded_lists_render_with_qwen3_and_mistral_nemo(
    qwen3: HfBackend, nemo: HfBackend, messages: list, keep_recent: int
) -> None:
    result = degrade(
        messages, reason="tokenizer_down", keep_recent=keep_recent, max_tokens=2_000, count_tokens=cl100k_messages
    )
    assert_alternates(result.messages)
    for backend in (qwen3, nemo):
        assert_renders(backend, result.messages, messages)


def test_zero_tail_shape_renders_the_block_before_the_request(qwen3: HfBackend, nemo: HfBackend) -> None:
    request = {"role": "user", "content": "Now rename the helper and rerun the tests."}
    messages = [
        {"role": "user", "content": "Start the refactor."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "abcdefghi", "type": "function", "function": {"name": "patch", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "patched"},
        {"role": "assistant", "content": "Refactor done."},
        request,
    ]
    result = build_compacted_messages(
        messages, block=block(stale=True), fresh_tail_tokens=0, count_tokens=cl100k_messages
    )
    for backend in (qwen3, nemo):
        prompt = backend.render(as_hermes_sends(result.messages))
        assert prompt.index("[Baton handoff 0c0ffee1") < prompt.index("STALE:") < prompt.index(request["content"])
        assert "Start the refactor." not in prompt and "patched" not in prompt
