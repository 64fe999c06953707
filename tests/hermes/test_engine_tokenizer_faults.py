"""Hermes' own hooks under a failing tokenizer: its pre-API estimate (patched), ``should_compress`` and the
``llm_request`` middleware, called from the agent's loop against a loopback /tokenize server that fails, answer the
core's fallback (rough + margin, never Hermes' own chars/4 estimate), the request still goes out with a budget from
it, ``get_status`` says why, and no hook waits longer than the configured timeout plus slack.

The faults themselves (every kind of failing server, the breaker, a compaction's one wait, a wrong max_model_len,
concurrent agents, a looping chat template) are the core's: ``tests/agent_core/test_tokenizer_faults.py``.
"""

from __future__ import annotations

import contextlib
import copy
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batontest.agent_frames import LoopAgent, in_agent
from batontest.engine_kit import SLACK_SECONDS, TOOLS, fallback_tokens, installed_runtime, make_engine, transcript
from batontest.faulty_servers import FaultyServer
from batontest.engines import activated, hermes_estimator

pytestmark = pytest.mark.hermes
pytest.importorskip("agent.conversation_loop")

TIMEOUT = 0.5
WINDOW = 65536
MARGIN = 1024
MODEL = "qwen3-local"
BASE_URL = "http://127.0.0.1:9/v1"
SYSTEM = "You are Hermes Agent."


@contextlib.contextmanager
def active_baton(url: str) -> Iterator[Any]:
    """The runtime and the plugin's activation (Hermes' estimators patched, middleware on), undone after."""
    env = {"BATON_TOKENIZER_BACKEND": "vllm", "BATON_TOKENIZER_URL": url,
           "BATON_TOKENIZER_TIMEOUT_SECONDS": str(TIMEOUT), "BATON_FALLBACK_MARGIN_TOKENS": str(MARGIN)}
    with installed_runtime(env, context_length=WINDOW, model=MODEL, base_url=BASE_URL), activated() as activation:
        yield activation


def agent_engine(project: Path) -> Any:
    """The engine as Hermes holds it: constructed, then told the model and window (``update_model``)."""
    engine = make_engine(project)
    engine.update_model(MODEL, WINDOW, base_url=BASE_URL, provider="custom")
    return engine


def timed(call: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.monotonic()
    result = call(*args, **kwargs)
    return result, time.monotonic() - start


def one_turn(activation: Any, engine: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What Hermes does around one API call: pre-API estimate -> should_compress -> llm_request middleware,
    each called from the agent's loop (a frame holding ``agent``)."""
    agent = LoopAgent(engine, TOOLS)
    estimate, estimate_seconds = timed(in_agent, agent, hermes_estimator("estimate_request_tokens_rough"), messages,
                                       system_prompt=SYSTEM, tools=TOOLS)
    decision, decide_seconds = timed(engine.should_compress, estimate)
    request = {"model": MODEL, "messages": [{"role": "system", "content": SYSTEM}, *messages], "tools": TOOLS,
               "max_tokens": WINDOW, "stream": True}
    original = copy.deepcopy(request)
    answer, middleware_seconds = timed(in_agent, agent, activation.llm_request, request=request,
                                       original_request=original, model=MODEL, base_url=BASE_URL, provider="custom")
    assert request == original, "the middleware mutated the request"
    sent = answer["request"] if answer else request
    return {"estimate": estimate, "decision": decision, "sent": sent, "changed": answer is not None,
            "seconds": max(estimate_seconds, decide_seconds, middleware_seconds)}


@pytest.mark.parametrize("fault", ["hang", "status_500"])
def test_hermes_hooks_send_every_request_with_the_cores_fallback_budget(project: Path, fault: str) -> None:
    messages = transcript(fault)
    with FaultyServer(fault) as server, active_baton(server.url) as activation:  # type: ignore[arg-type]
        engine = agent_engine(project)
        turn = one_turn(activation, engine, messages)
        status = engine.get_status()
    assert turn["seconds"] < TIMEOUT + SLACK_SECONDS
    assert turn["estimate"] == fallback_tokens(SYSTEM, MARGIN, messages)  # rough + margin, not Hermes' own chars/4
    assert turn["decision"] is False and status["last_decision"].startswith(f"request {turn['estimate']} below")
    sent = turn["sent"]
    assert sent["messages"][1:] == messages and sent["tools"] == TOOLS
    assert turn["changed"] and sent["max_tokens"] == WINDOW - turn["estimate"]  # margin already in the count
    tokenizer = status["tokenizer"]
    assert tokenizer["fallbacks"] >= 1 and "status_error" not in status
    reason = tokenizer["last_fallback_reason"] or ""
    opened = r"CircuitOpen: tokenizer unavailable: circuit open after CannotCount; retry in \d+s"
    assert re.match(rf"{re.escape(tokenizer['source'])}: (CannotCount|{opened})\b", reason), reason
    assert "Carry on" not in reason and fault not in reason.split(": ", 1)[1]  # no prompt text
