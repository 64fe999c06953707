"""The hf backend with real Qwen3 and Mistral-NeMo tokenizers, checked against direct apply_chat_template."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from importlib.metadata import entry_points
from typing import Any

import pytest

from baton_engine.tokens.contract import BackendConfigError, CannotCount, TokenizerConfig
from baton_hf.normalize import normalize_request
from batontest import assets
from batontest.threads import run_in_threads

from baton_hf.backend import HfBackend

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME_TOOL = {"type": "function", "function": {"name": "get_time"}}  # no description / parameters



def direct_count(backend: HfBackend, request: dict[str, Any]) -> int:
    """The reference: vLLM's normalisation + one apply_chat_template(tokenize=True) call."""
    tokenizer = backend._tokenizer
    from baton_hf.template import detect_content_format

    normalized = normalize_request(request, content_format=detect_content_format(tokenizer.chat_template))
    ids = tokenizer.apply_chat_template(
        normalized.messages, tools=normalized.tools, tokenize=True, return_dict=False, **normalized.chat_template_kwargs
    )
    return len(ids)


def tool_conversation(call_ids: tuple[str, str, str]) -> dict[str, Any]:
    first, second, third = call_ids
    return {
        "messages": [
            {"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": "Weather in Paris and Rome, and the time?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [  # parallel tool calls
                    {"id": first, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                    {"id": second, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
                ],
            },
            {"role": "tool", "tool_call_id": first, "content": '{"temp_c": 21, "sky": "clear"}'},
            {"role": "tool", "tool_call_id": second, "content": [{"type": "text", "text": "temp 25"}, {"type": "text", "text": "sunny"}]},
            {"role": "assistant", "content": "", "tool_calls": [{"id": third, "type": "function", "function": {"name": "get_time", "arguments": "not json"}}]},
            {"role": "tool", "tool_call_id": third, "content": "12:00"},
            {"role": "assistant", "content": "Paris 21C clear, Rome 25C sunny, it is noon."},
            {"role": "user", "content": "Thanks!  \n\n"},
        ],
        "tools": [WEATHER_TOOL, TIME_TOOL],
    }


QWEN_IDS = ("call_1", "call_2", "call_3")
NEMO_IDS = ("abcdefgh1", "abcdefgh2", "abcdefgh3")  # Mistral's template requires 9-character ids


def test_entry_point_registers_the_hf_backend() -> None:
    (entry,) = [ep for ep in entry_points(group="baton_engine.tokenizers") if ep.name == "hf"]
    (spec,) = entry.load().baton_tokenizer_backends()
    assert spec.name == "hf"
    backend = spec.factory(TokenizerConfig(backend="hf", path=str(assets.qwen3_dir()), model="Qwen/Qwen3-8B"))
    assert backend.source == "hf:Qwen/Qwen3-8B"
    assert backend.count_text("hello world").tokens == 2


def test_qwen3_tool_conversation_matches_direct_render(qwen: HfBackend) -> None:
    request = tool_conversation(QWEN_IDS)
    count = qwen.count_chat(request)
    assert count.exact and count.source == "hf:qwen3" and count.max_model_len == 131072
    assert count.tokens == direct_count(qwen, request)
    assert count.tokens > 200


def test_normalisation_changes_the_count_like_vllm(qwen: HfBackend) -> None:
    """Tools without description/parameters render with explicit nulls in vLLM: more tokens than a naive render."""
    request = {"messages": [{"role": "user", "content": "What time is it?"}], "tools": [TIME_TOOL]}
    naive = qwen._tokenizer.apply_chat_template(
        request["messages"], tools=request["tools"], tokenize=True, return_dict=False, add_generation_prompt=True
    )
    counted = qwen.count_chat(request).tokens
    assert counted == direct_count(qwen, request)
    null_fields = len(qwen._tokenizer.encode(', "description": null, "parameters": null', add_special_tokens=False))
    assert counted - len(naive) == pytest.approx(null_fields, abs=1)
    assert counted > len(naive)


def test_empty_and_missing_content(qwen: HfBackend, nemo: HfBackend) -> None:
    request = {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": None}, {"role": "user", "content": []}]}
    assert qwen.count_chat(request).tokens == direct_count(qwen, request)
    nemo_request = {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": None}]}
    assert nemo.count_chat(nemo_request).tokens == direct_count(nemo, nemo_request)


def test_enable_thinking_kwarg_reaches_the_template(qwen: HfBackend) -> None:
    base = {"messages": [{"role": "user", "content": "2+2?"}]}
    thinking_off = {**base, "chat_template_kwargs": {"enable_thinking": False, "unknown_flag": 1}}
    on, off = qwen.count_chat(base).tokens, qwen.count_chat(thinking_off).tokens
    assert off == direct_count(qwen, thinking_off)
    assert off - on == len(qwen._tokenizer.encode("<think>\n\n</think>\n\n", add_special_tokens=False))


def test_generation_prompt_and_continue_final_message(qwen: HfBackend) -> None:
    messages = [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi th"}]
    with_prompt = qwen.count_chat({"messages": messages[:1]}).tokens
    without = qwen.count_chat({"messages": messages[:1], "add_generation_prompt": False}).tokens
    assert with_prompt - without == len(qwen._tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False))
    continued = {"messages": messages, "add_generation_prompt": False, "continue_final_message": True}
    assert qwen.count_chat(continued).tokens == direct_count(qwen, continued)
    assert qwen.render(continued).endswith("Hi th")
    with pytest.raises(CannotCount, match="continue_final_message"):
        qwen.count_chat({"messages": messages, "continue_final_message": True})


def test_mistral_nemo_tool_conversation_matches_direct_render(nemo: HfBackend) -> None:
    request = tool_conversation(NEMO_IDS)
    request["messages"] = request["messages"][1:]  # NeMo's template places a system prompt differently; keep it simple
    count = nemo.count_chat(request)
    assert count.tokens == direct_count(nemo, request)
    assert "[TOOL_CALLS]" in nemo.render(request) and "[AVAILABLE_TOOLS]" in nemo.render(request)
    assert count.max_model_len is None  # the export does not know NeMo's context length


def test_template_rejection_is_cannot_count_without_prompt_text(nemo: HfBackend) -> None:
    request = tool_conversation(("secret-id-that-is-long", "b", "c"))
    with pytest.raises(CannotCount) as info:
        nemo.count_chat(request)
    assert "secret" not in str(info.value) and "Paris" not in str(info.value)
    assert "TemplateError" in str(info.value)


def test_count_text_is_exact_and_honours_special_token_strings(qwen: HfBackend) -> None:
    text = "  leading spaces <|im_end|>\n trailing\t\t<think>x</think>  \n\n<|im_start|><|im_start|>end "
    expected = len(qwen._tokenizer.encode(text, add_special_tokens=False))
    assert qwen.count_text(text).tokens == expected
    assert qwen.count_text("").tokens == 0


def test_growing_conversation_encodes_only_new_pieces(qwen: HfBackend) -> None:
    qwen.clear_cache()
    assert len(qwen._pieces) == 0
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for turn in range(30):
        messages.append({"role": "user" if turn % 2 == 0 else "assistant", "content": f"message number {turn} " * 5})
    request = {"messages": messages}
    qwen.count_chat(request)
    before = qwen._pieces.encoded_pieces
    grown = {"messages": [*messages, {"role": "user", "content": "one more question"}]}
    assert qwen.count_chat(grown).tokens == direct_count(qwen, grown)
    assert qwen._pieces.encoded_pieces - before <= 4  # new message text + changed tail, not 30 messages


def test_concurrent_counts_equal_sequential_counts(qwen: HfBackend) -> None:
    requests = [
        {"messages": [{"role": "user", "content": f"question {i} " * (i + 1)}], "tools": [WEATHER_TOOL] if i % 2 else None}
        for i in range(16)
    ]
    requests = [{k: v for k, v in r.items() if v is not None} for r in requests]
    expected = [direct_count(qwen, r) for r in requests]
    qwen.clear_cache()
    results: dict[int, int | None] = {}

    def work(index: int) -> None:
        for _ in range(5):
            results[index] = qwen.count_chat(requests[index]).tokens

    run_in_threads(work, len(requests))
    assert [results[i] for i in range(len(requests))] == expected


def test_missing_tokenizer_is_a_clear_config_error(tmp_path) -> None:
    with pytest.raises(BackendConfigError, match="BATON_TOKENIZER_PATH"):
        HfBackend.from_config(TokenizerConfig(backend="hf"))
    with pytest.raises(BackendConfigError, match="BATON_TOKENIZER_PATH") as info:
        HfBackend.from_config(TokenizerConfig(backend="hf", path=str(tmp_path / "nowhere")))
    # the whole path, and that it does not exist: that is what the user must fix (status shows only the name)
    assert f"{str(tmp_path / 'nowhere')!r} (no such directory)" in str(info.value)


def test_uncached_hub_id_fails_without_asking_the_hub_even_without_hf_hub_offline(tmp_path) -> None:
    """local_files_only=True means no network wait (an online lookup hung ~47 s here): the hub the process is
    pointed at (``HF_ENDPOINT``, a local listener) is never asked for the model, whatever the time the import takes
    on a loaded machine (a bound of 10 s failed at 13.8 s under load: issue 29)."""
    asked: list[str] = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler's contract
            asked.append(self.path)
            self.send_error(404)

        do_HEAD = do_GET  # noqa: N815

        def log_message(self, *args: Any) -> None: ...

    hub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    code = (
        "from baton_engine.tokens.contract import TokenizerConfig, BackendConfigError\n"
        "from baton_hf.backend import HfBackend\n"
        "try:\n    HfBackend.from_config(TokenizerConfig(backend='hf', path='no-such-org/no-such-model'))\n"
        "except BackendConfigError as e:\n    print('huggingface-cli download' in str(e))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_HOME=str(tmp_path), HF_ENDPOINT=f"http://127.0.0.1:{hub.server_address[1]}")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    finally:
        hub.shutdown()
    assert out.stdout.split() == ["True"], out.stderr[-500:]
    # (huggingface_hub 2 may ask the hub for its own agent list at import: not a lookup of the model)
    assert not [path for path in asked if "no-such-org" in path], asked


def test_hub_id_in_a_hand_made_cache_loads_offline(tmp_path) -> None:
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen3-Test" / "snapshots" / "0000"
    snapshot.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (snapshot / name).symlink_to(assets.qwen3_dir() / name)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    (tmp_path / "hub" / "models--Qwen--Qwen3-Test" / "refs").mkdir()
    (tmp_path / "hub" / "models--Qwen--Qwen3-Test" / "refs" / "main").write_text("0000")
    code = (
        "from baton_engine.tokens.contract import TokenizerConfig\nfrom baton_hf.backend import HfBackend\n"
        "b = HfBackend.from_config(TokenizerConfig(backend='hf', path='Qwen/Qwen3-Test'))\n"
        "print(b.source, b.count_text('hello world').tokens)\n"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["hf:Qwen/Qwen3-Test", "2"], out.stderr[-500:]
