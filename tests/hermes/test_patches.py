"""Guarded estimator patches, the llm_request clamp and the auxiliary clamp, on hermes-agent 0.19.0's modules."""

from __future__ import annotations

import copy
import importlib
import logging
from types import SimpleNamespace

import pytest

from batontest.agent_frames import LoopAgent, in_agent
from batontest.assets import qwen3_dir
from batontest.engines import activated, hermes_estimator, unconfirmed_cap

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.config import HermesView
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation, Patch
from baton_engine.settings import load_settings
from baton_engine.tokens.contract import TokenizerConfig

pytestmark = pytest.mark.hermes
MODEL, BASE_URL, CONTEXT = "qwen3-test", "http://127.0.0.1:9/v1", 65536
TODO_PARAMETERS = {"type": "object", "properties": {"item": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "todo", "description": "track tasks",
                                           "parameters": TODO_PARAMETERS}}]
# The names each tested Hermes has (docs/hermes-versions.md): 0.19.0's estimators in conversation_loop; 0.22's
# pre-API estimate read from model_metadata at each call and its usage anchor in three modules.
TARGETS_019 = [("agent.turn_context", "estimate_request_tokens_rough"),
               ("agent.conversation_loop", "estimate_request_tokens_rough"),
               ("agent.conversation_loop", "estimate_messages_tokens_rough"),
               ("agent.conversation_loop", "_estimate_tools_tokens_rough"),
               ("agent.auxiliary_client", "_build_call_kwargs"),
               ("agent.auxiliary_client", "_validate_llm_response")]
TARGETS_022 = [("agent.turn_context", "estimate_request_tokens_rough"),
               ("agent.model_metadata", "estimate_messages_tokens_rough"),
               ("agent.conversation_loop", "_estimate_tools_tokens_rough"),
               ("agent.usage_anchor", "anchored_context_tokens"),
               ("agent.turn_context", "anchored_context_tokens"),
               ("agent.turn_request_assembly", "anchored_context_tokens"),
               ("agent.auxiliary_client", "_build_call_kwargs"),
               ("agent.auxiliary_client", "_validate_llm_response")]
TARGETS = TARGETS_019 if hasattr(importlib.import_module("agent.conversation_loop"),
                                 "estimate_messages_tokens_rough") else TARGETS_022


def _messages(n: int = 6) -> list[dict]:
    out: list[dict] = [{"role": "system", "content": "You are Hermes."},
                       {"role": "user", "content": "Plan the release"}]
    for i in range(n):
        out.append({"role": "assistant", "content": (f"working on step {i} " * 20).strip()})
        out.append({"role": "user", "content": f"ok, continue with {i}"})
    return out


@pytest.fixture
def runtime(qwen3_env) -> BatonRuntime:
    installed = BatonRuntime(load_settings(), HermesView(model=MODEL, base_url=BASE_URL, context_length=CONTEXT))
    set_runtime(installed)
    return installed


@pytest.fixture
def active(runtime: BatonRuntime):
    with activated() as activation:  # every name exists in hermes-agent 0.19.0
        yield activation


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


@pytest.fixture
def agent(project, runtime: BatonRuntime) -> LoopAgent:
    engine = BatonContextEngine(project_dir=project)
    engine.update_model(MODEL, CONTEXT, base_url=BASE_URL, provider="custom")
    return LoopAgent(engine, TOOLS)


def exact_count(runtime: BatonRuntime, request: dict) -> int:
    counted = runtime.counter().backend.count_chat(request)
    assert counted.exact
    return counted.tokens


def test_preflight_estimate_is_the_exact_provider_count(active: Activation, runtime: BatonRuntime,
                                                        agent: LoopAgent) -> None:
    turn_context = importlib.import_module("agent.turn_context")
    messages = _messages()[1:]
    exact = exact_count(runtime, {"messages": [{"role": "system", "content": "SYS"}, *messages], "tools": TOOLS})
    assert in_agent(agent, turn_context.estimate_request_tokens_rough, messages, system_prompt="SYS",
                    tools=TOOLS) == exact


def test_without_a_calling_agent_the_estimators_are_hermes_own(active: Activation) -> None:
    turn_context = importlib.import_module("agent.turn_context")
    original = turn_context.estimate_request_tokens_rough.__baton_original__
    messages = _messages()[1:]
    assert turn_context.estimate_request_tokens_rough(messages, system_prompt="SYS", tools=TOOLS) == original(
        messages, system_prompt="SYS", tools=TOOLS)


def test_pre_api_estimate_and_middleware_share_one_round_trip(active: Activation, runtime: BatonRuntime,
                                                              agent: LoopAgent) -> None:
    """The pre-API estimate sees Hermes' stored messages (with its bookkeeping keys), the middleware the
    wire request: one view, one backend call per request from the very first one."""
    loop = importlib.import_module("agent.conversation_loop")
    counter = runtime.counter()
    stored = _messages()
    stored[2] = {**stored[2], "reasoning": "thinking...", "finish_reason": "stop", "_thinking_prefill": True}
    for turn in range(3):
        wire = [{k: v for k, v in m.items() if k not in ("reasoning", "finish_reason", "_thinking_prefill", "timestamp",
                                                         "tool_name")} for m in stored]
        exact = exact_count(runtime, {"messages": wire, "tools": TOOLS})
        calls_before = counter.stats().backend_calls
        pressure = in_agent(agent, hermes_estimator("estimate_messages_tokens_rough"), stored) + in_agent(
            agent, loop._estimate_tools_tokens_rough, TOOLS)
        assert pressure == exact
        request = {"model": MODEL, "messages": wire, "tools": TOOLS, "max_tokens": 65536, "stream": True}
        result = in_agent(agent, active.llm_request, request=copy.deepcopy(request), original_request=request,
                          model=MODEL, base_url=BASE_URL)
        assert result["request"]["max_tokens"] == unconfirmed_cap(CONTEXT, exact)
        ledger = agent.context_compressor.requests.ledger
        assert counter.stats().backend_calls - calls_before == 1, ("one round trip per request", ledger.counted, ledger.memo_hits)
        again = in_agent(agent, active.llm_request, request=copy.deepcopy(request), original_request=request,
                         model=MODEL, base_url=BASE_URL)  # a retry of the same request
        assert again == result and counter.stats().backend_calls - calls_before == 1, "0 on a retry"
        stored = stored + [{"role": "assistant", "content": f"more {turn}", "finish_reason": "stop"},
                           {"role": "user", "content": f"go {turn}", "timestamp": 1_764_000_000 + turn}]


def test_template_kwargs_and_options_are_counted(active: Activation, runtime: BatonRuntime, agent: LoopAgent) -> None:
    """Qwen3's enable_thinking changes the rendered prompt: the count follows extra_body.chat_template_kwargs,
    and the next pre-API estimate borrows the frame so it still shares the middleware's count."""
    messages = _messages(2)
    thinking_off = {"messages": messages, "tools": TOOLS, "chat_template_kwargs": {"enable_thinking": False}}
    off, on = exact_count(runtime, thinking_off), exact_count(runtime, {"messages": messages, "tools": TOOLS})
    assert off != on
    request = {"model": MODEL, "messages": messages, "tools": TOOLS, "max_tokens": 65536,
               "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    result = in_agent(agent, active.llm_request, request=request, model=MODEL, base_url=BASE_URL)
    assert result["request"]["max_tokens"] == unconfirmed_cap(CONTEXT, off)
    assert in_agent(agent, hermes_estimator("estimate_messages_tokens_rough"), messages) == off


def test_middleware_lowers_the_65536_default_so_it_fits(active: Activation, runtime: BatonRuntime,
                                                        agent: LoopAgent) -> None:
    request = {"model": MODEL, "messages": _messages(40), "max_tokens": 65536}
    snapshot = copy.deepcopy(request)
    result = in_agent(agent, active.llm_request, request=request, original_request=snapshot, model=MODEL,
                      base_url=BASE_URL)
    assert request == snapshot, "the caller's request is never mutated"
    prompt = exact_count(runtime, {"messages": request["messages"]})
    assert result["request"]["max_tokens"] == unconfirmed_cap(CONTEXT, prompt)
    assert agent.context_compressor.get_status()["output_budget"]["last_action"] == "lower_cap_to"


def test_middleware_never_adds_a_cap_field(active: Activation, agent: LoopAgent) -> None:
    for request in ({"model": "o3-mini", "messages": _messages(), "max_completion_tokens": 65536},
                    {"model": MODEL, "messages": _messages()}):
        result = in_agent(agent, active.llm_request, request=copy.deepcopy(request), model=request["model"],
                          base_url=BASE_URL)
        fields = set(result["request"]) if result else set(request)
        assert "max_tokens" not in fields or "max_tokens" in request


def test_middleware_without_an_agent_or_inactive_leaves_the_request(active: Activation, project) -> None:
    """No calling agent and no known session: left alone; a session bound by on_session_start is found."""
    engine = BatonContextEngine(project_dir=project)
    engine.update_model(MODEL, CONTEXT, base_url=BASE_URL)
    request = {"model": MODEL, "messages": _messages(), "max_tokens": 65536}
    assert active.llm_request(request=request, model=MODEL, base_url=BASE_URL) is None
    engine.on_session_start("s-1")
    assert active.llm_request(request=request, model=MODEL, base_url=BASE_URL, session_id="s-1") is not None
    active.deactivate()
    assert in_agent(LoopAgent(engine), active.llm_request, request=request, model=MODEL, base_url=BASE_URL) is None


def test_a_request_whose_prompt_alone_cannot_fit_is_shortened_for_itself(active: Activation, runtime: BatonRuntime,
                                                                          agent: LoopAgent) -> None:
    """Hermes did not compact (cooldown, stuck): the request is never sent certain to be refused. It carries the
    most recent whole turns behind a note, within the window less the minimum reply; the transcript is unchanged."""
    turns = [m for i in range(12) for m in ({"role": "user", "content": f"question {i} " + "word " * 6000},
                                            {"role": "assistant", "content": f"answer {i}"})]
    request = {"model": MODEL, "messages": [{"role": "system", "content": "You are Hermes."}, *turns,
                                            {"role": "user", "content": "the latest request"}], "max_tokens": 65536}
    before = copy.deepcopy(request)
    assert exact_count(runtime, {"messages": request["messages"]}) > CONTEXT
    result = in_agent(agent, active.llm_request, request=request, model=MODEL, base_url=BASE_URL)
    assert request == before
    sent = result["request"]
    assert sent["messages"][0] == request["messages"][0] and sent["messages"][-1] == request["messages"][-1]
    assert len(sent["messages"]) < len(request["messages"])
    prompt = exact_count(runtime, {"messages": sent["messages"]})
    assert prompt + sent["max_tokens"] <= CONTEXT and sent["max_tokens"] >= 4096
    status = agent.context_compressor.get_status()["output_budget"]
    assert status["requests_shortened"] == 1 and status["last_action"] == "lower_cap_to"


def test_auxiliary_builder_is_clamped_on_the_agents_route_only(active: Activation, runtime: BatonRuntime,
                                                               agent: LoopAgent) -> None:
    aux = importlib.import_module("agent.auxiliary_client")
    messages = _messages()[1:4]
    built = in_agent(agent, aux._build_call_kwargs, "nvidia", MODEL, messages, max_tokens=65536, base_url=BASE_URL)
    original = aux._build_call_kwargs.__baton_original__("nvidia", MODEL, messages, max_tokens=65536,
                                                         base_url=BASE_URL)
    prompt = exact_count(runtime, {"messages": messages})
    # Hermes drops an auxiliary cap for most providers; NVIDIA NIM (and Anthropic-wire endpoints) keep it
    fields = [f for f in ("max_tokens", "max_completion_tokens") if f in original]
    assert fields
    assert [f for f in ("max_tokens", "max_completion_tokens") if f in built] == fields  # no field added
    for field in fields:
        assert built[field] == unconfirmed_cap(CONTEXT, prompt)
    # positional base_url binds by signature, not by position guesses
    positional = in_agent(agent, aux._build_call_kwargs, "nvidia", MODEL, messages, None, 65536, None, 30.0, None,
                          None, BASE_URL)
    assert positional == built
    other = in_agent(agent, aux._build_call_kwargs, "nvidia", "summary-model", messages, max_tokens=65536,
                     base_url=BASE_URL)
    assert other == aux._build_call_kwargs.__baton_original__("nvidia", "summary-model", messages, max_tokens=65536,
                                                              base_url=BASE_URL)


def test_an_auxiliary_call_to_another_model_is_budgeted_on_that_models_route(qwen3_env, agent: LoopAgent) -> None:
    """A summary model with a ``tokenizer_routes`` entry (its tokenizer and window): the auxiliary call counts with
    that tokenizer and gets a cap within THAT window, keeping the unconfirmed room (its usage never comes back)."""
    small = 20_000
    settings = load_settings({}, {"tokenizer_routes": [{"match": {"model": "summary-*"}, "backend": "hf",
                                                       "path": str(qwen3_dir()), "context_length": small}]})
    installed = BatonRuntime(settings, HermesView(model=MODEL, base_url=BASE_URL, context_length=CONTEXT))
    set_runtime(installed)
    aux = importlib.import_module("agent.auxiliary_client")
    messages = _messages()[1:4]
    with activated():
        built = in_agent(agent, aux._build_call_kwargs, "nvidia", "summary-model", messages, max_tokens=65536,
                         base_url="http://10.0.0.2:8000/v1")
    counter = installed.counter_of(TokenizerConfig(backend="hf", path=str(qwen3_dir())))
    prompt = counter.count_chat({"messages": messages}).tokens
    assert built["max_tokens"] == unconfirmed_cap(small, prompt)
    assert agent.context_compressor.get_status()["output_budget"]["auxiliary_last_reason"] is not None


def test_an_auxiliary_reply_verifies_its_own_route_never_the_agents(qwen3_env, agent: LoopAgent) -> None:
    """Auxiliary calls to another model (its ``tokenizer_routes`` entry): each reply's usage, which Hermes validates in
    ``_validate_llm_response``, verifies THAT route's counts, kept across calls among the agent's routes (so they
    calibrate at its provider's scale), and never the agent's own route: its check, memo and anchor stay as they were.
    A reply validated again without a request built before it is not observed twice."""
    aux_url, scale = "http://10.0.0.2:8000/v1", 1.5
    settings = load_settings({}, {"tokenizer_routes": [{"match": {"model": "summary-*"}, "backend": "hf",
                                                       "path": str(qwen3_dir()), "context_length": 20_000}]})
    installed = BatonRuntime(settings, HermesView(model=MODEL, base_url=BASE_URL, context_length=CONTEXT))
    set_runtime(installed)
    counter = installed.counter_of(TokenizerConfig(backend="hf", path=str(qwen3_dir())))
    aux = importlib.import_module("agent.auxiliary_client")
    engine = agent.context_compressor
    with activated():
        in_agent(agent, aux._build_call_kwargs, "custom", MODEL, _messages(), max_tokens=512, base_url=BASE_URL)
        ledger = engine.requests.ledger
        own = (engine.get_status()["verification"], ledger.memo_key, ledger.anchor.observations)
        for n in range(3):
            messages = [{"role": "user", "content": f"summarise part {n}: " + "word " * (60 * (n + 1))}]
            in_agent(agent, aux._build_call_kwargs, "custom", "summary-model", messages, max_tokens=512,
                     base_url=aux_url)
            reported = round(counter.count_chat({"messages": messages}).tokens * scale)
            reply = SimpleNamespace(model="summary-model", choices=[SimpleNamespace(message=SimpleNamespace(
                content="a summary"))], usage=SimpleNamespace(prompt_tokens=reported, completion_tokens=3,
                                                               total_tokens=reported + 3))
            assert aux._validate_llm_response(reply, "compression") is reply
        aux._validate_llm_response(reply, "compression")  # no request built before it: not observed again
    status = engine.get_status()
    assert (status["verification"], ledger.memo_key, ledger.anchor.observations) == own
    [kept] = status["other_routes"]
    assert (kept["model"], kept["base_url"], kept["verdict"], kept["requests_seen"]) == \
        ("summary-model", aux_url, "calibrated", 3), kept
    assert kept["ratio"] == pytest.approx(scale, abs=0.02)
