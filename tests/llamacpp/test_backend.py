"""The llamacpp backend against the loopback stand-in and fault injection: what it sends, what it reads, the window,
detection, failures within the timeout. Its counts against a REAL llama-server: test_real_llama.py."""

from __future__ import annotations

import copy
import pickle
import time
from importlib.metadata import entry_points

import pytest
from baton_llamacpp import LlamaCppBackend
from baton_llamacpp.detect import detect_llamacpp, llamacpp_window
from baton_llamacpp.endpoint import parse_endpoint
from baton_llamacpp.reply import parse_slot_window, parse_token_count, serves_model
from batontest.faulty_servers import FaultyServer, elapsed, refused_url
from batontest.llama_standin import LlamaStandin
from batontest.vllm_standin import VllmStandin

from baton_engine.tokens.contract import BackendConfigError, CannotCount, RequestNotCountable, TokenizerConfig
from baton_engine.tokens.counter import FALLBACK_SOURCE, TokenCounter
from baton_engine.tokens.hookspecs import ENTRY_POINT_GROUP
from baton_engine.tokens.plugins import detect_server_backend

SECRET = "sk-test-0123456789abcdef"
REQUEST = {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "count me please"}]}
SLACK = 2.5  # scheduling slack on a loaded 2-core machine (the slow fault lasts 10 s), as tests/vllm/test_faults.py


@pytest.fixture
def backend(standin: LlamaStandin) -> LlamaCppBackend:
    made = LlamaCppBackend(TokenizerConfig(url=standin.url, api_key=SECRET, timeout_seconds=10))
    yield made
    made.close()


def test_a_chat_count_renders_then_tokenizes_with_special_tokens(backend: LlamaCppBackend, standin, hf) -> None:
    del standin.bodies[:]
    got = backend.count_chat(REQUEST)
    assert (got.tokens, got.exact, got.source) == (hf.count_chat(REQUEST).tokens, True, backend.source)
    assert got.max_model_len == 4096  # the per-slot window /props states
    (route, rendered), (route2, tokenized) = standin.bodies
    assert (route, route2) == ("/apply-template", "/tokenize")
    assert rendered == {"messages": REQUEST["messages"]}
    assert tokenized["add_special"] is True and tokenized["parse_special"] is True
    assert tokenized["content"].startswith("<|im_start|>system\nsys<|im_end|>")


def test_text_counts_add_no_special_tokens(backend: LlamaCppBackend, standin, hf) -> None:
    del standin.bodies[:]
    assert backend.count_text("数据 🚀 <|im_start|> literal").tokens == hf.count_text("数据 🚀 <|im_start|> literal").tokens
    ((route, body),) = standin.bodies
    assert route == "/tokenize" and body["add_special"] is False


def test_only_the_fields_the_template_reads_are_sent_extra_body_wins(backend: LlamaCppBackend, standin) -> None:
    tools = [{"type": "function", "function": {"name": "noop", "description": "d"}}]
    request = {"model": "m", "max_tokens": 99, "stream": True, "temperature": 0.1,
               "messages": [{"role": "user", "content": "ignored"}], "tool_choice": "auto",
               "extra_body": {"messages": [{"role": "user", "content": "x"}], "tools": tools,
                              "chat_template_kwargs": {"enable_thinking": False}}}
    del standin.bodies[:]
    backend.count_chat(request)
    assert standin.bodies[0][1] == {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools,
                                    "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": False}}
    assert "extra_body" in request and request["max_tokens"] == 99  # not mutated


def test_the_configured_model_is_sent_for_a_router_mode_server(standin) -> None:
    backend = LlamaCppBackend(TokenizerConfig(url=standin.url, model="qwen3-8b"))
    del standin.bodies[:]
    backend.count_chat(REQUEST)
    assert [body["model"] for _, body in standin.bodies] == ["qwen3-8b", "qwen3-8b"]
    backend.close()


def test_the_window_is_asked_once_and_sent_credentials(backend: LlamaCppBackend, standin) -> None:
    before = standin.requests_received["/props"]
    assert backend.max_model_len == 4096
    for _ in range(3):
        assert backend.count_text("again").max_model_len == 4096
    assert standin.requests_received["/props"] == before + 1
    headers = {k.lower(): v for k, v in standin.last_headers.items()}
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert headers["user-agent"].startswith("baton-engine-llamacpp/")


def test_a_window_other_than_the_configured_one_is_warned_once(standin, caplog: pytest.LogCaptureFixture) -> None:
    backend = LlamaCppBackend(TokenizerConfig(url=standin.url, context_length=8192))
    with caplog.at_level("WARNING", logger="baton_llamacpp"):
        backend.count_text("a")
        backend.count_text("b")
    (record,) = caplog.records
    assert "n_ctx 4096 differs from the configured context_length 8192" in record.getMessage()
    backend.close()


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("http://h:8080", "http://h:8080"),
        ("http://h:8080/", "http://h:8080"),
        ("http://h:8080/v1", "http://h:8080"),
        ("http://h:8080/tokenize", "http://h:8080"),
        ("http://h:8080/apply-template", "http://h:8080"),
        (" https://gpu.example/llama/v1/ ", "https://gpu.example/llama"),
        ("http://[::1]:9/v1", "http://[::1]:9"),
    ],
)
def test_url_forms(url: str, root: str) -> None:
    endpoint = parse_endpoint(url)
    assert (endpoint.root, endpoint.tokenize_url, endpoint.props_url) == (root, root + "/tokenize", root + "/props")
    assert endpoint.source == "llamacpp:" + root.split("://", 1)[1].split("/", 1)[0]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (None, "needs the server URL"),
        ("ftp://h/", "http:// or https://"),
        ("http://user:pw@h:8080", "must not embed credentials"),
        ("http://h:8080/?x=1", "query string"),
        ("http://h:notaport", "not a valid URL"),
    ],
)
def test_bad_settings_fail_fast_with_a_fix(url: str | None, message: str) -> None:
    with pytest.raises(BackendConfigError, match=message) as caught:
        LlamaCppBackend(TokenizerConfig(url=url))
    assert "pw" not in str(caught.value)
    with pytest.raises(BackendConfigError, match="timeout_seconds"):
        LlamaCppBackend(TokenizerConfig(url="http://h", timeout_seconds=float("nan")))


def test_api_key_is_never_in_repr_or_source(backend: LlamaCppBackend) -> None:
    assert SECRET not in repr(backend) and SECRET not in backend.source
    assert backend.source.startswith("llamacpp:127.0.0.1:")


def test_a_request_the_server_rejects_is_not_countable_and_names_no_text(backend: LlamaCppBackend) -> None:
    with pytest.raises(RequestNotCountable, match=r"HTTP 400, invalid_request_error") as caught:
        backend.count_chat({"messages": [{"role": "user", "content": {"secret": "PROMPT-TEXT"}}]})
    assert "PROMPT-TEXT" not in str(caught.value)
    with pytest.raises(RequestNotCountable, match="no messages list"):
        backend.count_chat({"prompt": "x"})
    with pytest.raises(RequestNotCountable, match="not JSON-serialisable"):
        backend.count_chat({"messages": [{"role": "user", "content": object()}]})


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("status_500", "rejected the request at /apply-template (HTTP 500"),  # its template raised on the request
        ("status_400", "rejected the request at /apply-template (HTTP 400"),
        ("not_json", "/apply-template reply is not JSON"),
        ("json_array", "/apply-template reply is not a JSON object"),
        ("ok", "/apply-template reply has an invalid 'prompt'"),  # a vLLM /tokenize body is no llama-server reply
        ("reset", "llama-server request failed"),
    ],
)
def test_bad_replies_are_cannot_count_and_fall_back(fault: str, reason: str) -> None:
    with FaultyServer(fault) as server:  # type: ignore[arg-type]
        backend = LlamaCppBackend(TokenizerConfig(url=server.url, timeout_seconds=2))
        with pytest.raises(CannotCount) as caught:
            backend.count_chat(REQUEST)
        assert reason in str(caught.value) and server.url not in str(caught.value)
        counted = TokenCounter(backend, fallback_margin_tokens=512).count_chat(REQUEST)
        assert counted.exact is False and counted.source == FALLBACK_SOURCE
        assert counted.fallback_reason.startswith(backend.source + ": ")
        backend.close()


def test_a_failing_tokenize_is_a_server_failure_not_a_request_one() -> None:
    with LlamaStandin() as server:
        server.tokenize_status = 500
        backend = LlamaCppBackend(TokenizerConfig(url=server.url))
        with pytest.raises(CannotCount, match=r"answered HTTP 500 at /tokenize, server_error") as caught:
            backend.count_chat(REQUEST)
        assert not isinstance(caught.value, RequestNotCountable)  # the breaker counts it
        backend.close()


def test_a_server_without_a_usable_props_still_counts(hf, caplog: pytest.LogCaptureFixture) -> None:
    with LlamaStandin() as server:
        server.props_status = 404
        backend = LlamaCppBackend(TokenizerConfig(url=server.url))
        with caplog.at_level("WARNING", logger="baton_llamacpp"):
            got = backend.count_chat(REQUEST)
        assert (got.tokens, got.max_model_len) == (hf.count_chat(REQUEST).tokens, None)
        assert "window unknown" in caplog.text and "HTTP 404" in caplog.text
        backend.count_chat(REQUEST)
        assert server.requests_received["/props"] == 1  # asked once, not on every count
        backend.close()


def test_connection_refused_falls_back_fast() -> None:
    backend = LlamaCppBackend(TokenizerConfig(url=refused_url(), timeout_seconds=1.0))
    start = time.monotonic()
    with pytest.raises(CannotCount, match="unreachable"):
        backend.count_text("hello")
    assert elapsed(start) < 1.0 + SLACK
    assert backend.max_model_len is None


@pytest.mark.parametrize(("fault", "delay"), [("hang", 0.0), ("ok", 10.0), ("dribble", 0.2)])
def test_a_count_of_two_calls_never_blocks_longer_than_the_timeout(fault: str, delay: float) -> None:
    timeout = 0.6
    with FaultyServer(fault, delay=delay) as server:  # type: ignore[arg-type]
        backend = LlamaCppBackend(TokenizerConfig(url=server.url, timeout_seconds=timeout))
        start = time.monotonic()
        with pytest.raises(CannotCount, match="did not answer within 0.6 s|timed out"):
            backend.count_chat(REQUEST)
        assert elapsed(start) < timeout + SLACK
        backend.close()


def test_copies_and_close(backend: LlamaCppBackend) -> None:
    expected = backend.count_text("copy me").tokens
    restored = pickle.loads(pickle.dumps(backend))
    assert copy.deepcopy(backend).count_text("copy me").tokens == expected
    assert restored.count_text("copy me").tokens == expected and restored.max_model_len == 4096
    backend.close()
    assert backend.count_text("copy me").tokens == expected  # rebuilt lazily after close
    restored.close()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"tokens": [1, "2"]}', "tokens"),
        (b'{"tokens": [1, true]}', "tokens"),
        (b'{"count": 3}', "tokens"),
    ],
)
def test_tokenize_replies_are_read_strictly(body: bytes, problem: str) -> None:
    with pytest.raises(CannotCount, match=problem):
        parse_token_count(body)


@pytest.mark.parametrize("body", [b'{"n_ctx": 4096}', b'{"default_generation_settings": {"n_ctx": "4096"}}',
                                  b'{"default_generation_settings": {"n_ctx": 0}}'])
def test_props_replies_are_read_strictly(body: bytes) -> None:
    with pytest.raises(CannotCount, match="n_ctx"):
        parse_slot_window(body)


def test_detection_tells_llama_server_from_vllm_and_nothing() -> None:
    assert serves_model(b'{"data": [{"id": "a.gguf", "owned_by": "llamacpp"}]}', "any-name") is True
    two = b'{"data": [{"id": "a", "owned_by": "llamacpp"}, {"id": "b", "aliases": ["bee"], "owned_by": "llamacpp"}]}'
    assert serves_model(two, "bee") is True and serves_model(two, "c") is False
    assert serves_model(b'{"data": [{"id": "a", "owned_by": "vllm"}]}', None) is False
    with LlamaStandin() as llama, VllmStandin() as vllm:
        assert detect_llamacpp(llama.url + "/v1", "whatever-hermes-calls-it", 2.0) is True
        assert detect_llamacpp(vllm.url, None, 2.0) is False
        assert detect_server_backend(llama.url, None, 2.0) == "llamacpp"
        assert detect_server_backend(vllm.url, None, 2.0) == "vllm"
    assert detect_llamacpp(refused_url(), None, 0.5) is False
    assert detect_llamacpp("not a url", None, 0.5) is False


def test_the_window_is_the_per_slot_n_ctx_of_llama_server_only() -> None:
    """``BackendSpec.window`` (what ``baton doctor`` compares with config.yaml): /props' per-slot n_ctx of a
    llama-server, nothing from another server or a /props that says no window."""
    with LlamaStandin(n_ctx=4096) as llama, VllmStandin() as vllm:
        assert llamacpp_window(llama.url + "/v1", "whatever-hermes-calls-it", 2.0) == 4096
        assert llama.requests_received == {"/v1/models": 1, "/props": 1}
        assert llamacpp_window(vllm.url, None, 2.0) is None
        llama.props_status = 404
        assert llamacpp_window(llama.url, None, 2.0) is None
    assert llamacpp_window(refused_url(), None, 0.5) is None


def test_registered_through_the_entry_point_group() -> None:
    (entry,) = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == "llamacpp"]
    (spec,) = entry.load().baton_tokenizer_backends()
    assert spec.name == "llamacpp" and spec.detect is detect_llamacpp and spec.window is llamacpp_window
    built = spec.factory(TokenizerConfig(backend="llamacpp", url="http://127.0.0.1:1"))
    assert isinstance(built, LlamaCppBackend) and built.source == "llamacpp:127.0.0.1:1"
