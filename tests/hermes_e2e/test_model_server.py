"""The loopback model server behaves like a strict OpenAI-compatible provider.

These run without Hermes (plain httpx), so a broken stand-in is caught before the end-to-end
tests blame the engine for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from batontest.assets import qwen3_dir
from batontest.model_server import ModelServer, Reply, ScriptedPolicy, ToolCall, protocol_problem, todo_round

USER = [{"role": "user", "content": "Summarise the build log, please."}]
# the server loads its tokenizer on the first request: seconds on a loaded machine, past httpx's 5 s default
CLIENT_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def qwen3_tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen3_dir()))


def sse_events(response: httpx.Response) -> Iterator[Any]:
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: "):]
            yield data if data == "[DONE]" else json.loads(data)


def test_streaming_reply_has_role_toolcall_finish_usage_then_done() -> None:
    script = [todo_round(1, items=2, words_per_item=40)]
    with ModelServer(ScriptedPolicy(script)) as server, httpx.Client(base_url=server.base_url, timeout=CLIENT_TIMEOUT) as client:
        body = {"model": "m", "messages": USER, "stream": True, "stream_options": {"include_usage": True},
                "max_tokens": 1000}
        with client.stream("POST", "/chat/completions", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            events = list(sse_events(response))
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    usage_chunk, finish_chunk = chunks[-1], chunks[-2]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["prompt_tokens"] == server.requests[0].prompt_tokens
    assert finish_chunk["choices"][0]["finish_reason"] == "tool_calls"
    calls = [c for chunk in chunks[1:-2] for c in chunk["choices"][0]["delta"].get("tool_calls") or []]
    assert calls[0]["id"] == "call_0_0" and calls[0]["function"]["name"] == "todo"
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments) == script[0].tool_calls[0].arguments
    assert len(calls) > 2  # arguments really arrive in several deltas


def test_prompt_tokens_are_the_real_qwen3_count(qwen3_tokenizer: Any) -> None:
    messages = [{"role": "system", "content": "You are terse."}, *USER,
                {"role": "assistant", "content": "Which log?"}, {"role": "user", "content": "build.log"}]
    expected = len(qwen3_tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                       return_dict=False))
    with ModelServer(ScriptedPolicy([]), prompt_inflation=5000) as server, httpx.Client(timeout=CLIENT_TIMEOUT) as client:
        reply = client.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": messages})
    assert reply.status_code == 200
    assert server.requests[0].prompt_tokens == expected
    assert reply.json()["usage"]["prompt_tokens"] == expected + 5000  # inflation is reported, never checked


def test_non_streaming_auxiliary_call_does_not_advance_the_script() -> None:
    policy = ScriptedPolicy([Reply(content="first scripted step")], auxiliary_answer="a title")
    with ModelServer(policy) as server, httpx.Client(timeout=CLIENT_TIMEOUT) as client:
        aux = client.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": USER})
        models = client.get(f"{server.base_url}/models")
    assert aux.json()["choices"][0]["message"]["content"] == "a title"
    assert aux.json()["object"] == "chat.completion"
    assert policy.position == 0
    assert server.auxiliary_requests and not server.main_requests
    assert models.json()["data"][0]["max_model_len"] == 65536


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([*USER, {"role": "tool", "tool_call_id": "call_x", "content": "orphan"}], "must be a response"),
        ([*USER, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "todo", "arguments": "{}"}}]},
          {"role": "user", "content": "next"}], "must be followed by tool messages"),
    ],
)
def test_protocol_violations_are_rejected_with_400(messages: list[dict[str, Any]], fragment: str) -> None:
    with ModelServer(ScriptedPolicy([])) as server, httpx.Client(timeout=CLIENT_TIMEOUT) as client:
        reply = client.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": messages})
    assert reply.status_code == 400 and fragment in reply.json()["error"]["message"]
    assert [r.status for r in server.rejections] == [400]


def test_prompt_plus_output_budget_above_the_window_is_rejected() -> None:
    with ModelServer(ScriptedPolicy([]), context_window=65536) as server, httpx.Client(timeout=CLIENT_TIMEOUT) as client:
        url = f"{server.base_url}/chat/completions"
        fits = client.post(url, json={"model": "m", "messages": USER, "max_tokens": 1000})
        prompt = server.requests[0].prompt_tokens
        assert prompt is not None
        exact_fit = client.post(url, json={"model": "m", "messages": USER, "max_completion_tokens": 65536 - prompt})
        over = client.post(url, json={"model": "m", "messages": USER, "max_tokens": 65536 - prompt + 1})
    assert fits.status_code == 200 and exact_fit.status_code == 200
    assert over.status_code == 400 and "maximum context length is 65536" in over.json()["error"]["message"]


def test_protocol_problem_accepts_parallel_calls_with_all_results() -> None:
    call = {"type": "function", "function": {"name": "todo", "arguments": "{}"}}
    messages = [*USER, {"role": "assistant", "content": "", "tool_calls": [{**call, "id": "a"}, {**call, "id": "b"}]},
                {"role": "tool", "tool_call_id": "b", "content": "2"},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "assistant", "content": "done"}]
    assert protocol_problem(messages) is None
    assert protocol_problem(messages[:3]) is not None  # result "a" missing before the end


def test_scripted_replies_are_deterministic() -> None:
    first = ScriptedPolicy([todo_round(2, planted="sk-FAKE-planted"), Reply(tool_calls=(ToolCall("todo", {}),))])
    second = ScriptedPolicy([todo_round(2, planted="sk-FAKE-planted"), Reply(tool_calls=(ToolCall("todo", {}),))])
    stream = {"stream": True}
    assert [first(stream) for _ in range(3)] == [second(stream) for _ in range(3)]
    assert "sk-FAKE-planted" in json.dumps(first.steps[0].tool_calls[0].arguments)


def test_a_reply_can_be_cut_lack_usage_or_break_the_stream_and_the_tokenizer_can_be_down() -> None:
    """The faults the gateway soak injects, as a client sees them: ``cut`` ends with finish_reason "length",
    ``usage=False`` sends no usage chunk (nor a usage field), ``junk`` a chunk that is not JSON, and
    ``tokenizer_down`` fails /tokenize with 500 while chat still answers."""
    script = [Reply(content="Half an answ", cut=True, usage=False), Reply(content="Fine.", junk=True)]
    with ModelServer(ScriptedPolicy(script), counts_for_itself=True) as server, \
            httpx.Client(base_url=server.url, timeout=CLIENT_TIMEOUT) as client:
        body = {"model": "m", "messages": USER, "stream": True, "stream_options": {"include_usage": True}}
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            cut = list(sse_events(response))
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        server.tokenizer_down = True
        down = client.post("/tokenize", json={"model": server.model_name, "messages": USER})
        server.tokenizer_down = False
        up = client.post("/tokenize", json={"model": server.model_name, "messages": USER})
    assert cut[-2]["choices"][0]["finish_reason"] == "length" and all("usage" not in c for c in cut[:-1])
    with pytest.raises(ValueError):
        json.loads(lines[1][len("data: "):])
    assert json.loads(lines[-3][len("data: "):])["choices"][0]["finish_reason"] == "stop"
    assert (down.status_code, up.status_code) == (500, 200)
    assert (server.tokenize_requests, server.tokenize_failures) == (2, 1)
