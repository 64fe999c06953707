"""Guarded estimator patches, the llm_request clamp and the auxiliary clamp, on hermes-agent 0.19.0's modules."""

from __future__ import annotations

import copy
import importlib
import logging

import pytest

from baton_engine.hermes.config import HermesView
from baton_engine.hermes.patches import Activation, Patch
from baton_engine.hermes.runtime import BatonRuntime, set_runtime
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
MODEL, BASE_URL, CONTEXT = "qwen3-test", "http://127.0.0.1:9/v1", 65536
TODO_PARAMETERS = {"type": "object", "properties": {"item": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "todo", "description": "track tasks",
                                           "parameters": TODO_PARAMETERS}}]
TARGETS = [("agent.turn_context", "estimate_request_tokens_rough"),
           ("agent.conversation_loop", "estimate_request_tokens_rough"),
           ("agent.conversation_loop", "estimate_messages_tokens_rough"),
           ("agent.conversation_loop", "_estimate_tools_tokens_rough"),
           ("agent.auxiliary_client", "_build_call_kwargs")]


def _messages(n: int = 6) -> list[dict]:
    out: list[dict] = [{"role": "system", "content": "You are Hermes."},
                       {"role": "user", "content": "Plan the release"}]
    for i in range(n):
        out.append({"role": "assistant", "content": f"working on step {i} " * 20})
        out.append({"role": "user", "content": f"ok, continue with {i}"})
    return out


@pytest.fixture
def runtime(qwen3_env) -> BatonRuntime:
    installed = BatonRuntime(load_settings(), HermesView(model=MODEL, base_url=BASE_URL, context_length=CONTEXT))
    set_runtime(installed)
    return installed


@pytest.fixture
def active(runtime: BatonRuntime):
    activation = Activation()
    assert activation.activate() == []  # every name exists in hermes-agent 0.19.0
    yield activation
    activation.deactivate()


def test_patches_install_and_restore_the_originals() -> None:
    originals = {target: getattr(importlib.import_module(target[0]), target[1]) for target in TARGETS}
    activation = Activation()
    activation.activate()
    for (module, attr), original in originals.items():
        current = getattr(importlib.import_module(module), attr)
        assert current is not original and current.__baton_original__ is original
    activation.deactivate()
    for (module, attr), original in originals.items():
        assert getattr(importlib.import_module(module), attr) is original


def test_missing_names_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="baton_engine.hermes")
    missing = Patch("agent.turn_context", "estimate_something_removed", lambda original: original)
    absent = Patch("agent.module_of_a_future_version", "x", lambda original: original)
    assert missing.install() is False and absent.install() is False
    assert "not found in this Hermes version" in missing.skipped
    assert "not importable" in absent.skipped
    assert len([r for r in caplog.records if "baton patch skipped" in r.getMessage()]) == 2
    assert missing.restore() is False


def test_a_later_foreign_patch_is_left_alone() -> None:
    module = importlib.import_module("agent.turn_context")
    original = module.estimate_request_tokens_rough
    patch = Patch("agent.turn_context", "estimate_request_tokens_rough", lambda o: (lambda *a, **k: 1))
    patch.install()

    def foreign(*args, **kwargs):
        return 2

    module.estimate_request_tokens_rough = foreign
    try:
        assert patch.restore() is False
        assert module.estimate_request_tokens_rough is foreign
    finally:
        module.estimate_request_tokens_rough = original


def test_preflight_estimate_is_the_exact_provider_count(active: Activation, runtime: BatonRuntime) -> None:
    turn_context = importlib.import_module("agent.turn_context")
    messages = _messages()[1:]
    exact = runtime.counter().backend.count_chat({"messages": [{"role": "system", "content": "SYS"}, *messages],
                                                 "tools": TOOLS})
    assert exact.exact
    assert turn_context.estimate_request_tokens_rough(messages, system_prompt="SYS", tools=TOOLS) == exact.tokens


def test_pre_api_estimate_and_middleware_share_one_round_trip(active: Activation, runtime: BatonRuntime) -> None:
    loop = importlib.import_module("agent.conversation_loop")
    counter = runtime.counter()
    api_messages = _messages()
    exact = counter.backend.count_chat({"messages": api_messages, "tools": TOOLS}).tokens
    request = {"model": MODEL, "messages": api_messages, "tools": TOOLS, "max_tokens": 65536, "stream": True}
    for turn in range(3):
        calls_before = counter.stats().backend_calls
        pressure = loop.estimate_messages_tokens_rough(api_messages) + loop._estimate_tools_tokens_rough(TOOLS)
        assert pressure == exact
        result = active.llm_request(request=copy.deepcopy(request), original_request=request, model=MODEL,
                                    base_url=BASE_URL)
        assert result["request"]["max_tokens"] == CONTEXT - exact
        spent = counter.stats().backend_calls - calls_before
        assert spent == (2 if turn == 0 else 1), "tools learnt on the first request, then one round trip each"
        api_messages = api_messages + [{"role": "assistant", "content": f"more {turn}"},
                                       {"role": "user", "content": f"go {turn}"}]
        request = {**request, "messages": api_messages}
        exact = counter.backend.count_chat({"messages": api_messages, "tools": TOOLS}).tokens


def test_middleware_clamps_the_65536_default_so_it_fits(active: Activation, runtime: BatonRuntime) -> None:
    request = {"model": MODEL, "messages": _messages(40), "max_tokens": 65536}
    snapshot = copy.deepcopy(request)
    result = active.llm_request(request=request, original_request=snapshot, model=MODEL, base_url=BASE_URL)
    assert request == snapshot, "the caller's request is never mutated"
    prompt = runtime.count(request["messages"]).tokens
    assert result["request"]["max_tokens"] + prompt <= CONTEXT
    assert result["request"]["max_tokens"] == CONTEXT - prompt
    assert runtime.clamps == 1


def test_middleware_route_guard_and_inactive_state(active: Activation, runtime: BatonRuntime) -> None:
    request = {"model": "other-model", "messages": _messages(), "max_tokens": 65536}
    assert active.llm_request(request=request, model="other-model", base_url=BASE_URL) is None
    assert active.llm_request(request={**request, "model": MODEL}, model=MODEL, base_url="http://elsewhere/v1") is None
    active.deactivate()
    assert active.llm_request(request={**request, "model": MODEL}, model=MODEL, base_url=BASE_URL) is None


def test_middleware_leaves_a_request_that_needs_compaction_unchanged(active: Activation, runtime: BatonRuntime) -> None:
    huge = [{"role": "user", "content": "word " * 70000}]
    assert active.llm_request(request={"model": MODEL, "messages": huge, "max_tokens": 65536}, model=MODEL,
                              base_url=BASE_URL) is None
    assert "needs compaction" in runtime.last_clamp_reason


def test_auxiliary_builder_is_clamped_on_the_main_route_only(active: Activation, runtime: BatonRuntime) -> None:
    aux = importlib.import_module("agent.auxiliary_client")
    messages = _messages()[1:4]
    built = aux._build_call_kwargs("custom", MODEL, messages, max_tokens=65536, base_url=BASE_URL)
    prompt = runtime.count(messages).tokens
    assert built[next(f for f in ("max_tokens", "max_completion_tokens") if f in built)] == CONTEXT - prompt
    other = aux._build_call_kwargs("custom", "summary-model", messages, max_tokens=65536, base_url=BASE_URL)
    original = aux._build_call_kwargs.__baton_original__("custom", "summary-model", messages, max_tokens=65536,
                                                         base_url=BASE_URL)
    assert other == original
