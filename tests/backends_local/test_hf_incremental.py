"""Incremental rendering is exact: warm counts of growing conversations against cold full counts.

The reference for every count is a cold one: vLLM's normalisation, the public ``apply_chat_template(tokenize=False)``
and one encode of the whole string with a separate Rust tokenizer (no cache, no splitting, no reuse).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton_hf.normalize import normalize_request
from batontest import assets

from baton_hf.backend import HfBackend, _private_encoder
from baton_hf.template import detect_content_format

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "run"}},
]
SNIPPETS = ["東京", "🚀", "naïve café", "  ", "\n\n", "\t", "<|im_start|>", "</s>", "[INST]", "<think>", "x", "{\"a\": 1}"]


@pytest.fixture(scope="module")
def sentencepiece() -> HfBackend:
    return assets.hf_backend(assets.sentencepiece_dir())


_encoders: dict[int, Any] = {}


def cold_count(backend: HfBackend, request: dict[str, Any]) -> int:
    tokenizer = backend._tokenizer
    normalized = normalize_request(request, content_format=detect_content_format(tokenizer.chat_template))
    text = tokenizer.apply_chat_template(
        normalized.messages, tools=normalized.tools, tokenize=False, **normalized.chat_template_kwargs
    )
    if id(backend) not in _encoders:
        _encoders[id(backend)] = _private_encoder(tokenizer)
    return len(_encoders[id(backend)].encode(text, add_special_tokens=False).ids)


words = st.lists(st.one_of(st.sampled_from(SNIPPETS), st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8)), min_size=1, max_size=6
).map(" ".join).filter(str.strip)
call_ids = iter(range(10**9))


@st.composite
def turn(draw: Any) -> list[dict[str, Any]]:
    """One user turn: a user message (string, parts or a wrapped tool response), tool-call steps with results,
    a closing answer; reasoning on some assistant messages."""
    shape = draw(st.sampled_from(["text", "parts", "tool_response"]))
    if shape == "text":
        user: Any = draw(words)
    elif shape == "parts":
        user = [{"type": "text", "text": draw(words)} for _ in range(draw(st.integers(1, 3)))]
    else:  # Qwen3 does not treat this as a user query
        user = f"<tool_response>\n{draw(words)}\n</tool_response>"
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    for _ in range(draw(st.integers(0, 2))):
        ids = [f"c{next(call_ids) % 10**8:08d}" for _ in range(draw(st.integers(1, 2)))]  # 9 characters (Mistral)
        call: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "read_file", "arguments": f'{{"path": "{draw(words)}"}}'}}
            for i in ids]}
        if draw(st.booleans()):
            call["reasoning"] = draw(words)
        messages.append(call)
        messages += [{"role": "tool", "tool_call_id": i, "content": draw(words)} for i in ids]
    answer: dict[str, Any] = {"role": "assistant", "content": draw(words)}
    if draw(st.booleans()):
        answer["reasoning"] = draw(words)
    messages.append(answer)
    return messages


conversations = st.lists(turn(), min_size=2, max_size=6).map(lambda turns: [m for t in turns for m in t])
steps = st.lists(st.integers(1, 3), min_size=1, max_size=30)  # messages appended per request


def grow_and_compare(backend: HfBackend, messages: list[dict[str, Any]], step_sizes: list[int], system: bool) -> None:
    """Count ``messages`` warm as they grow by ``step_sizes`` after a fixed 24-message history; each count cold too."""
    history = long_conversation(6)[0 if system else 1:]
    backend.clear_cache()
    size = 0
    for step in [0, *step_sizes]:
        size = min(len(messages), size + step)
        request = {"messages": history + messages[:size], "tools": TOOLS}
        assert backend.count_chat(request).tokens == cold_count(backend, request)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(messages=conversations, step_sizes=steps, system=st.booleans())
def test_growing_conversations_count_exactly(
    qwen: HfBackend, nemo: HfBackend, sentencepiece: HfBackend, messages: list[dict[str, Any]],
    step_sizes: list[int], system: bool,
) -> None:
    for backend in (qwen, nemo, sentencepiece):
        grow_and_compare(backend, messages, step_sizes, system)


def long_conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for n in range(turns):
        call_id = f"call{n:05d}"
        messages += [
            {"role": "user", "content": f"Question {n}: what is in file_{n}.py? 東京"},
            {"role": "assistant", "content": "", "reasoning": f"Read file_{n}.py first.", "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": {"path": f"file_{n}.py"}}}]},
            {"role": "tool", "tool_call_id": call_id, "content": f"def f{n}():\n    return {n}\n"},
            {"role": "assistant", "content": f"It defines f{n}.", "reasoning": "Answer from the file."},
        ]
    return messages


@pytest.mark.parametrize("family", ["qwen", "nemo"])
def test_one_message_per_turn_is_counted_incrementally(request: pytest.FixtureRequest, family: str) -> None:
    backend: HfBackend = request.getfixturevalue(family)
    assert backend.incremental and backend.piecewise
    messages = long_conversation(30)
    backend.clear_cache()
    backend.count_chat({"messages": messages[:60], "tools": TOOLS})
    extended = backend._incremental.extended
    for size in range(61, len(messages) + 1):
        grown = {"messages": messages[:size], "tools": TOOLS}
        assert backend.count_chat(grown).tokens == cold_count(backend, grown)
    assert backend._incremental.extended - extended >= (len(messages) - 60) * 3 // 4


def test_qwen3_reasoning_dropped_before_the_new_user_query_is_recounted(qwen: HfBackend) -> None:
    """Appending a user message changes how Qwen3 renders the assistant turn before it: the count follows."""
    messages = long_conversation(12)
    qwen.clear_cache()
    qwen.count_chat({"messages": messages})
    assert "Answer from the file." in qwen.render({"messages": messages})
    extended = qwen._incremental.extended
    grown = {"messages": [*messages, {"role": "user", "content": "And now?"}]}
    assert "Answer from the file." not in qwen.render(grown)
    assert qwen.count_chat(grown).tokens == cold_count(qwen, grown)
    assert qwen._incremental.extended == extended + 1


def test_qwen3_tool_response_user_turn_needs_the_wider_window(qwen: HfBackend) -> None:
    """Qwen3 does not count a user message holding only a <tool_response> as a query, so an assistant reply after
    it shows its reasoning only with the real query in view: the window from the last user message alone renders
    it without, and only the one-user-turn-wider render shows the difference."""
    messages = [*long_conversation(10), {"role": "user", "content": "<tool_response>\nok\n</tool_response>"}]
    qwen.clear_cache()
    qwen.count_chat({"messages": messages})
    grown = {"messages": [*messages, {"role": "assistant", "content": "Done.", "reasoning": "It worked."}]}
    assert "It worked." in qwen.render(grown)
    assert qwen.count_chat(grown).tokens == cold_count(qwen, grown)


def test_a_deep_copy_keeps_counting_incrementally_and_exactly(qwen: HfBackend) -> None:
    messages = long_conversation(10)
    qwen.count_chat({"messages": messages})
    copied = copy.deepcopy(qwen)
    extended = copied._incremental.extended
    grown = {"messages": [*messages, {"role": "user", "content": "next"}]}
    assert copied.count_chat(grown).tokens == cold_count(qwen, grown)
    assert copied._incremental.extended == extended + 1


def test_ten_conversations_taking_turns_each_keep_counting_incrementally(qwen: HfBackend) -> None:
    """One backend serves every agent of a process: ten agents taking turns each re-render only their last turn."""
    agents = [[{"role": "system", "content": f"You are agent {a}."}, *long_conversation(6)[1:]] for a in range(10)]
    qwen.clear_cache()
    for messages in agents:
        qwen.count_chat({"messages": messages})
    extended = qwen._incremental.extended
    for n in range(3):
        for a, messages in enumerate(agents):
            messages.append({"role": "user", "content": f"Round {n} for agent {a}."})
            assert qwen.count_chat({"messages": messages}).tokens == cold_count(qwen, {"messages": messages})
    assert qwen._incremental.extended - extended == 30


def test_remembered_prompts_stay_within_the_total_bound(qwen: HfBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """``MAX_TOTAL_CHARS`` bounds all remembered prompts together: the least recent go first, the newest stays."""
    from baton_hf import incremental

    qwen.clear_cache()
    one = len(qwen.render({"messages": long_conversation(4)}))
    monkeypatch.setattr(incremental, "MAX_TOTAL_CHARS", 3 * one)
    for a in range(6):
        qwen.count_chat({"messages": [*long_conversation(4), {"role": "user", "content": f"agent {a:02d}"}]})
    states = list(qwen._incremental._states.values())
    assert 1 <= len(states) <= 3 and sum(len(state.text) for state in states) <= 3 * one + 100
    assert states[-1].messages[-1]["content"] == "agent 05"
    qwen.clear_cache()


def test_in_place_edits_of_earlier_messages_are_seen(qwen: HfBackend) -> None:
    messages = long_conversation(10)
    qwen.clear_cache()
    qwen.count_chat({"messages": messages})
    messages[5]["content"] = messages[5]["content"] + " (edited in place, much longer now)"
    grown = {"messages": [*messages, {"role": "user", "content": "next"}]}
    assert qwen.count_chat(grown).tokens == cold_count(qwen, grown)


def test_an_extension_renders_only_the_two_new_windows(qwen: HfBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two windows of the remembered list are the previous extension's windows of its grown list, kept with
    its state: a message appended after one that was no user query renders the two windows of the new list only."""
    messages = [*long_conversation(10), {"role": "user", "content": "next"}]
    qwen.clear_cache()
    qwen.count_chat({"messages": messages})
    messages.append({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "run", "arguments": {}}}]})
    qwen.count_chat({"messages": messages})
    renders = []
    original = qwen._incremental._render
    monkeypatch.setattr(qwen._incremental, "_render", lambda request: renders.append(1) or original(request))
    grown = {"messages": [*messages, {"role": "tool", "tool_call_id": "c", "content": "ok"}]}
    extended = qwen._incremental.extended
    assert qwen.count_chat(grown).tokens == cold_count(qwen, grown)
    assert qwen._incremental.extended == extended + 1 and len(renders) == 2


def test_an_in_place_edit_of_the_last_turn_is_seen_after_an_extension(qwen: HfBackend) -> None:
    """The windows kept with a state render its last turns: an edit there makes it another conversation (a full
    render), never a kept window's stale text."""
    messages = [*long_conversation(10), {"role": "user", "content": "next"}]
    qwen.clear_cache()
    qwen.count_chat({"messages": messages[:-1]})
    qwen.count_chat({"messages": messages})
    messages[-1]["content"] = "next, edited in place and longer"
    grown = {"messages": [*messages, {"role": "assistant", "content": "Done."}]}
    assert qwen.count_chat(grown).tokens == cold_count(qwen, grown)


def backend_with_template(template: str) -> HfBackend:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(assets.qwen3_dir()))
    tokenizer.chat_template = template
    return HfBackend(tokenizer, "custom")


NUMBERED = ("{% for m in messages %}<|im_start|>{{ m.role }} #{{ loop.index }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# Earlier output changes once the conversation is long; no window can see that, only the start-up probe.
LENGTH_SENSITIVE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n"
                    "{{ m.content if messages | length <= 20 or m.role != 'assistant' else '...' }}<|im_end|>\n"
                    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


# Every earlier answer changes when a later user message says "redo": windows see it spread back.
REDO = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' and "
        "messages[loop.index0:] | selectattr('content', 'equalto', 'redo') | list %}(superseded){% else %}"
        "{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
        "{% endif %}")


NO_TOOLS = ("{% for m in messages %}{% if m.role == 'tool' or m.tool_calls %}{{ raise_exception('no tools') }}"
            "{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_a_template_without_tool_support_is_proven_on_the_plain_probe() -> None:
    backend = backend_with_template(NO_TOOLS)
    assert backend.incremental
    messages = [m for m in long_conversation(12) if m["role"] != "tool" and not m.get("tool_calls")]
    backend.clear_cache()
    extended = backend._incremental.extended
    for size in range(12, len(messages) + 1):
        request = {"messages": messages[:size]}
        assert backend.count_chat(request).tokens == cold_count(backend, request)
    assert backend._incremental.extended > extended


def test_a_message_that_rewrites_every_earlier_turn_is_rendered_in_full() -> None:
    backend = backend_with_template(REDO)
    assert backend.incremental  # the probe conversation never says "redo"
    messages = long_conversation(10)
    backend.clear_cache()
    backend.count_chat({"messages": messages})
    grown = {"messages": [*messages, {"role": "user", "content": "redo"}]}
    assert "(superseded)" in backend.render(grown)
    assert backend.count_chat(grown).tokens == cold_count(backend, grown)


@pytest.mark.parametrize("template", [NUMBERED, LENGTH_SENSITIVE], ids=["numbered", "length-sensitive"])
def test_templates_whose_earlier_output_changes_are_rendered_in_full(template: str) -> None:
    backend = backend_with_template(template)
    assert not backend.incremental and backend.piecewise
    extended = backend._incremental.extended
    messages = long_conversation(8)
    for size in range(10, len(messages) + 1):
        request = {"messages": messages[:size]}
        assert backend.count_chat(request).tokens == cold_count(backend, request)
    assert backend._incremental.extended == extended


def test_sentencepiece_counts_whole_prompts(sentencepiece: HfBackend) -> None:
    assert not sentencepiece.piecewise and not sentencepiece.incremental
    messages = long_conversation(6)
    for size in range(8, len(messages) + 1):
        request = {"messages": messages[:size], "tools": TOOLS}
        assert sentencepiece.count_chat(request).tokens == cold_count(sentencepiece, request)
