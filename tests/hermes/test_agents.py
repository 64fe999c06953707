"""One engine per agent: ``clone_for_agent`` (Hermes 0.22) and ``copy.deepcopy`` (0.19) give each agent its own
ledger, route and memos, sharing only the process runtime. (Ten agents taking turns never redo each other's work:
``tests/agent_core/test_many_agents.py``, through a fake host.)"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.hosted_agents import agent_conversation

from baton_engine.agent.runtime import BatonRuntime, set_runtime
from baton_engine.hermes.config import HermesView
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
MODEL, BASE_URL, CONTEXT = "qwen3-test", "http://127.0.0.1:9/v1", 65536
TOOLS = [{"type": "function", "function": {"name": "todo", "description": "track tasks",
                                           "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture
def runtime(qwen3_env: Path) -> BatonRuntime:
    installed = BatonRuntime(load_settings(), HermesView(model=MODEL, base_url=BASE_URL, context_length=CONTEXT))
    set_runtime(installed)
    return installed


@pytest.fixture
def template(runtime: BatonRuntime, project: Path) -> BatonContextEngine:
    """The engine the plugin registers (``plugin.register``: configured for Hermes' model before any agent)."""
    engine = BatonContextEngine(project_dir=project)
    engine.update_model(MODEL, CONTEXT, base_url=BASE_URL, provider="custom")
    return engine


def api_call(activation: Activation, agent: LoopAgent, messages: list[dict[str, Any]]) -> int:
    """What Hermes' loop asks per API call: the pre-API estimate, should_compress, the middleware."""
    tokens = in_agent(agent, activation.estimators._count, messages)
    agent.context_compressor.should_compress(tokens)
    in_agent(agent, activation.llm_request, request={"model": MODEL, "messages": messages, "tools": TOOLS,
                                                     "max_tokens": 1024}, model=MODEL, base_url=BASE_URL)
    return tokens


def test_a_clone_takes_the_configuration_and_nothing_of_the_state(template: BatonContextEngine,
                                                                  runtime: BatonRuntime) -> None:
    template.on_session_start("registered-session", platform="cli")
    template.compaction.objective = "the template's own objective"
    template.requests.ledger.counted = 7
    _ = template.requests.memos.digests  # the template's memo exists
    clone = template.clone_for_agent()
    assert type(clone) is BatonContextEngine and clone is not template
    assert (clone.route, clone.context_length, clone.threshold_tokens, clone.project.explicit) == \
        (template.route, template.context_length, template.threshold_tokens, template.project.explicit)
    assert clone.requests.ledger is not template.requests.ledger and clone.requests.ledger.counted == 0
    assert clone.requests.memos is not template.requests.memos and clone.requests.memos.computed() == 0 and clone.requests.memos._digests is None
    assert (clone.compaction.session_id, clone.compaction.objective, clone.compaction.policy) == (None, None, type(template.compaction.policy)())
    assert clone.counting().counter() is template.counting().counter() is runtime.counter()  # the shared runtime


@pytest.mark.parametrize("make", [BatonContextEngine.clone_for_agent, copy.deepcopy], ids=["clone", "deepcopy"])
def test_two_agents_in_one_process_share_no_request_state(template: BatonContextEngine, make: Any) -> None:
    first, second = LoopAgent(make(template), TOOLS), LoopAgent(make(template), TOOLS)
    alone = LoopAgent(make(template), TOOLS)
    with_activation = Activation()
    with_activation.active = True
    one, two = agent_conversation(1, 6), agent_conversation(2, 9)
    counts = [api_call(with_activation, first, one), api_call(with_activation, second, two)]
    assert counts == [api_call(with_activation, alone, one), api_call(with_activation, alone, two)]
    a, b = first.context_compressor, second.context_compressor
    assert a.requests.ledger is not b.requests.ledger and a.requests.ledger.memo_key != b.requests.ledger.memo_key
    assert a.requests.ledger.frame.messages[0]["content"] == "You are agent 1."
    assert b.requests.ledger.frame.messages[0]["content"] == "You are agent 2."
    assert (a.requests.ledger.counted, a.requests.ledger.memo_hits, b.requests.ledger.counted, b.requests.ledger.memo_hits) == (1, 1, 1, 1)
    assert a.requests.memos.projected.remembered() == [len(one)] and b.requests.memos.projected.remembered() == [len(two)]
    b.update_model("another-model", 131072, base_url="http://127.0.0.1:10/v1")
    assert a.route.model == MODEL and a.context_length == CONTEXT and template.route.model == MODEL


def test_a_deepcopy_of_a_used_engine_starts_with_empty_memos(template: BatonContextEngine) -> None:
    activation = Activation()
    activation.active = True
    used = LoopAgent(copy.deepcopy(template), TOOLS)
    api_call(activation, used, agent_conversation(1, 4))
    copied = copy.deepcopy(used.context_compressor)
    assert copied.requests.memos is not used.context_compressor.requests.memos and copied.requests.memos.computed() == 0
    assert used.context_compressor.requests.memos.computed() > 0
    assert copied.requests.ledger is not used.context_compressor.requests.ledger and copied.requests.ledger.frame == \
        used.context_compressor.requests.ledger.frame  # the rest of the state copied, as Hermes 0.19 expects
