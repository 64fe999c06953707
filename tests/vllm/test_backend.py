"""The vllm backend against the loopback stand-in: real counts, URL handling, payload rules, copies."""

from __future__ import annotations

import copy
import json
import os
import pickle
from importlib.metadata import entry_points
from typing import Any

import pytest

from baton_engine.tokens.contract import BackendConfigError, CannotCount, TokenizerConfig
from baton_engine.tokens.hookspecs import ENTRY_POINT_GROUP
from baton_hf.backend import HfBackend
from baton_vllm import VllmBackend
from baton_vllm.endpoint import parse_endpoint

SECRET = "sk-test-0123456789abcdef"


@pytest.fixture(scope="module")
def hf(qwen3_tokenizer_dir) -> HfBackend:
    return HfBackend.from_config(TokenizerConfig(backend="hf", path=str(qwen3_tokenizer_dir)))


@pytest.fixture
def backend(standin) -> VllmBackend:
    made = VllmBackend(TokenizerConfig(url=standin.url, model=standin.model_name, api_key=SECRET, timeout_seconds=10))
    yield made
    made.close()


def test_chat_counts_equal_the_hf_backend(backend: VllmBackend, hf: HfBackend, chat_case: dict[str, Any]) -> None:
    got = backend.count_chat(chat_case)
    assert got.exact is True
    assert got.source == backend.source
    assert got.max_model_len == 40960
    assert got.tokens == hf.count_chat(chat_case).tokens


@pytest.mark.parametrize("text", ["hello world", "", "  spaced\n\n\tout  ", "数据 🚀 <|im_start|> literal", "x" * 5000])
def test_text_counts_equal_the_hf_backend(backend: VllmBackend, hf: HfBackend, text: str) -> None:
    assert backend.count_text(text).tokens == hf.count_text(text).tokens


def test_requests_reuse_one_keep_alive_connection_and_send_credentials(backend: VllmBackend, standin) -> None:
    before = standin.total_requests
    for _ in range(5):
        backend.count_text("again")
    assert standin.total_requests == before + 5
    headers = {k.lower(): v for k, v in standin.last_headers.items()}
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert headers["user-agent"].startswith("baton-engine-vllm/")
    assert headers.get("connection", "keep-alive").lower() == "keep-alive"


def test_custom_user_agent(standin) -> None:
    backend = VllmBackend(TokenizerConfig(url=standin.url, user_agent="hermes-test/1"))
    backend.count_text("ua")
    assert standin.last_headers["User-Agent"] == "hermes-test/1"
    backend.close()


def test_max_model_len_comes_from_v1_models_before_any_count(standin) -> None:
    backend = VllmBackend(TokenizerConfig(url=standin.url + "/v1/", model=standin.model_name))
    before = standin.requests_received["/v1/models"]
    assert backend.max_model_len == 40960
    assert backend.max_model_len == 40960  # cached: asked once
    assert standin.requests_received["/v1/models"] == before + 1
    backend.close()


def test_unknown_model_is_cannot_count(standin) -> None:
    backend = VllmBackend(TokenizerConfig(url=standin.url, model="not-served"))
    with pytest.raises(CannotCount, match="HTTP 404"):
        backend.count_text("x")
    assert backend.max_model_len is None
    backend.close()


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("http://h:8000", "http://h:8000"),
        ("http://h:8000/", "http://h:8000"),
        ("http://h:8000/v1", "http://h:8000"),
        ("http://h:8000/v1/", "http://h:8000"),
        ("http://h:8000/tokenize", "http://h:8000"),
        (" https://gpu.example/vllm/tokenize ", "https://gpu.example/vllm"),
        ("http://[::1]:9/v1", "http://[::1]:9"),
    ],
)
def test_url_forms(url: str, root: str) -> None:
    endpoint = parse_endpoint(url)
    assert endpoint.root == root
    assert endpoint.tokenize_url == root + "/tokenize"
    assert endpoint.models_url == root + "/v1/models"
    assert endpoint.source == "vllm:" + root.split("://", 1)[1].split("/", 1)[0]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (None, "needs the server URL"),
        ("   ", "needs the server URL"),
        ("ftp://h/tokenize", "http:// or https://"),
        ("http://user:pw@h:8000", "must not embed credentials"),
        ("http://h:8000/tokenize?x=1", "query string"),
        ("http://h:notaport", "not a valid URL"),
    ],
)
def test_bad_urls_fail_fast_with_a_fix(url: str | None, message: str) -> None:
    with pytest.raises(BackendConfigError, match=message) as caught:
        VllmBackend(TokenizerConfig(url=url))
    assert "pw" not in str(caught.value)


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_bad_timeout_fails_fast(timeout: float) -> None:
    with pytest.raises(BackendConfigError, match="timeout_seconds"):
        VllmBackend(TokenizerConfig(url="http://h", timeout_seconds=timeout))


def test_api_key_is_never_in_repr_source_or_pickles_as_text(backend: VllmBackend) -> None:
    assert SECRET not in repr(backend)
    assert SECRET not in backend.source
    assert backend.source.startswith("vllm:127.0.0.1:")


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": {"type": "function", "function": {"name": "noop"}}}, "tool_choice"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"extra_body": {"response_format": {"type": "json_object"}}}, "response_format"),
        ({"add_generation_prompt": True, "continue_final_message": True}, "cannot both be true"),
        ({"chat_template_kwargs": "yes"}, "must be a mapping"),
        ({"messages": [{"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "noop", "arguments": {"k": 1}}}]}]},
         r"arguments must be a JSON string \(got dict\)"),
    ],
)
def test_requests_tokenize_cannot_mirror_are_refused_without_a_round_trip(
    backend: VllmBackend, standin, extra: dict[str, Any], reason: str
) -> None:
    tools = [{"type": "function", "function": {"name": "noop"}}]
    before = standin.total_requests
    with pytest.raises(CannotCount, match=reason):
        backend.count_chat({"messages": [{"role": "user", "content": "x"}], "tools": tools} | extra)
    assert standin.total_requests == before


def test_tool_choice_none_and_auto_keep_the_tools(backend: VllmBackend, hf: HfBackend) -> None:
    request = {"messages": [{"role": "user", "content": "x"}],
               "tools": [{"type": "function", "function": {"name": "noop", "description": "d"}}]}
    expected = hf.count_chat(request).tokens
    for choice in ("none", "auto"):
        assert backend.count_chat({**request, "tool_choice": choice}).tokens == expected


def test_extra_body_wins_and_reasoning_effort_folds_into_template_kwargs(backend: VllmBackend, hf: HfBackend) -> None:
    messages = [{"role": "user", "content": "Think about it."}]
    tools = [{"type": "function", "function": {"name": "noop", "description": "d"}}]
    request = {"messages": [{"role": "user", "content": "ignored"}], "tools": [],
               "extra_body": {"messages": messages, "tools": tools}, "reasoning_effort": "none"}
    expected = hf.count_chat({"messages": messages, "tools": tools,
                              "chat_template_kwargs": {"enable_thinking": False}}).tokens
    assert backend.count_chat(request).tokens == expected
    without = hf.count_chat({"messages": messages, "tools": tools}).tokens
    assert expected != without  # the fold changed the prompt, so the assertion above means something


def test_the_request_is_not_mutated(backend: VllmBackend) -> None:
    request = {"messages": [{"role": "assistant", "content": "a", "reasoning_content": "r"}],
               "reasoning_effort": "high", "chat_template_kwargs": {"x": 1}}
    snapshot = json.dumps(request, sort_keys=True)
    backend.count_chat(request)
    assert json.dumps(request, sort_keys=True) == snapshot


def test_non_json_request_is_cannot_count(backend: VllmBackend) -> None:
    with pytest.raises(CannotCount, match="not JSON-serialisable"):
        backend.count_chat({"messages": [{"role": "user", "content": object()}]})


def test_deepcopy_pickle_close_and_reuse(backend: VllmBackend) -> None:
    expected = backend.count_text("copy me").tokens
    clone = copy.deepcopy(backend)
    restored = pickle.loads(pickle.dumps(backend))
    assert clone.count_text("copy me").tokens == expected
    assert restored.count_text("copy me").tokens == expected
    assert restored.max_model_len == 40960
    backend.close()
    assert backend.count_text("copy me").tokens == expected  # rebuilt lazily after close
    clone.close()
    restored.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_uses_its_own_connection(backend: VllmBackend) -> None:
    expected = backend.count_text("fork me").tokens  # the parent now holds a live pooled connection
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: must not reuse the parent's socket or worker threads
        try:
            os.write(write_end, str(backend.count_text("fork me").tokens).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child_count = pipe.read()
    os.waitpid(pid, 0)
    assert child_count == str(expected)
    assert backend.count_text("fork me").tokens == expected  # the parent's connection still works


def test_registered_through_the_entry_point_group() -> None:
    (entry,) = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == "vllm"]
    plugin = entry.load()
    (spec,) = plugin.baton_tokenizer_backends()
    assert spec.name == "vllm"
    built = spec.factory(TokenizerConfig(backend="vllm", url="http://127.0.0.1:1"))
    assert isinstance(built, VllmBackend) and built.source == "vllm:127.0.0.1:1"
