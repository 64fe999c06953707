"""One agent's counting under tokenizer faults, through a fake host: the pre-request estimate
(``Agent.count_estimate``), the decision (``compaction_decision``), the request's budget (``on_request``) and the
compaction (``compact``) against a loopback /tokenize server that fails (500s, hangs, resets, bad bodies, slow or
dribbling replies; also a chat template that loops).

Every request still goes out (unchanged, or with a budget computed from the rough+margin fallback), the agent's
status says why, nothing waits longer than the configured timeout plus slack, and once the tokenizer failed the
circuit breaker answers the rest of the turn at once.

Why here: the counting, the fallback, the breaker and the budget are the core's; an expected fault (a tokenizer
down) degrades, never raises. What Hermes' own hooks (its patched estimator, ``should_compress``, the
``llm_request`` middleware) make of it is ``tests/hermes/test_engine_tokenizer_faults.py``'s.
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from batontest.assets import LOOP_TRIGGER, looping_template_dir
from batontest.engine_kit import SLACK_SECONDS, TOOLS, fallback_tokens, installed_host_runtime, make_agent, transcript
from batontest.engines import unconfirmed_cap
from batontest.fake_host import FakeHost
from batontest.faulty_servers import FaultyServer, refused_url
from batontest.hosted_agents import switch_model

import baton_engine.tokens.breaker as breaker
from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import get_runtime
from compaction.conversations import assert_valid_openai

TIMEOUT = 0.5
WINDOW = 65536
MARGIN = 1024
MODEL = "qwen3-local"
BASE_URL = "http://127.0.0.1:9/v1"
SYSTEM = "You are a coding agent."
FAULTS = ["refused", "reset", "hang", "status_500", "status_400", "not_json", "json_array", "slow", "dribble"]


@contextlib.contextmanager
def tokenizer_url(fault: str) -> Iterator[str]:
    if fault == "refused":
        yield refused_url()
        return
    kind, delay = {"slow": ("ok", 10.0), "dribble": ("dribble", 0.2)}.get(fault, (fault, 0.0))
    with FaultyServer(kind, delay=delay) as server:  # type: ignore[arg-type]
        yield server.url


def vllm_env(url: str, timeout: float = TIMEOUT) -> dict[str, str]:
    return {"BATON_TOKENIZER_BACKEND": "vllm", "BATON_TOKENIZER_URL": url,
            "BATON_TOKENIZER_TIMEOUT_SECONDS": str(timeout), "BATON_FALLBACK_MARGIN_TOKENS": str(MARGIN)}


@contextlib.contextmanager
def vllm_runtime(url: str, timeout: float = TIMEOUT) -> Iterator[Any]:
    """The runtime counting with the vLLM backend at ``url``, the host's main route ``MODEL`` at ``BASE_URL``."""
    with installed_host_runtime(vllm_env(url, timeout), context_length=WINDOW, model=MODEL,
                                base_url=BASE_URL) as runtime:
        yield runtime


def hosted_agent(project: Path) -> Agent:
    """The agent as a host holds it: built, then told the model and window (Hermes: ``update_model``)."""
    agent = make_agent(project)
    switch_model(agent, MODEL, WINDOW, base_url=BASE_URL, provider="custom")
    return agent


def timed(call: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.monotonic()
    result = call(*args, **kwargs)
    return result, time.monotonic() - start


def estimate(agent: Agent, messages: list[dict[str, Any]]) -> int | None:
    """The pre-request estimate as a host asks it (system prompt, messages, tools), then the scan ahead."""
    counted = agent.count_estimate(messages, system_prompt=SYSTEM, tools=TOOLS)
    agent.prepare_compaction(messages)
    return counted.tokens


def one_turn(agent: Agent, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What a host does around one API call: the pre-request estimate -> compact now? -> the request's budget."""
    tokens, estimate_seconds = timed(estimate, agent, messages)
    decision, decide_seconds = timed(lambda: agent.compaction_decision(tokens, awaiting_usage=False).compact)
    request = {"model": MODEL, "messages": [{"role": "system", "content": SYSTEM}, *messages], "tools": TOOLS,
               "max_tokens": WINDOW, "stream": True}
    original = copy.deepcopy(request)
    answer, request_seconds = timed(agent.on_request, request, model=MODEL, base_url=BASE_URL, provider="custom")
    assert request == original, "the budget mutated the request"
    sent = answer if answer is not None else request
    return {"estimate": tokens, "decision": decision, "sent": sent, "changed": answer is not None,
            "seconds": max(estimate_seconds, decide_seconds, request_seconds)}


@pytest.mark.parametrize("fault", FAULTS)
def test_every_request_goes_out_with_a_fallback_budget_and_status_says_why(project: Path, fault: str) -> None:
    messages = transcript(fault)
    with tokenizer_url(fault) as url, vllm_runtime(url):
        agent = hosted_agent(project)
        turn = one_turn(agent, messages)
        status = agent.status()
    assert turn["seconds"] < TIMEOUT + SLACK_SECONDS
    assert turn["estimate"] == fallback_tokens(SYSTEM, MARGIN, messages)  # rough + margin
    assert turn["decision"] is False and status["last_decision"].startswith(f"request {turn['estimate']} below")
    sent = turn["sent"]
    assert sent["messages"][1:] == messages and sent["tools"] == TOOLS
    assert turn["changed"] and sent["max_tokens"] == WINDOW - turn["estimate"]  # margin already in the count
    tokenizer = status["tokenizer"]
    assert tokenizer["fallbacks"] >= 1
    # The backend's source and the exception type first (a 400 on a tool-call history has its own type, and does
    # not trip the circuit breaker; after any other failure later counts in the turn fail fast and say after what).
    reason = tokenizer["last_fallback_reason"] or ""
    opened = r"CircuitOpen: tokenizer unavailable: circuit open after CannotCount; retry in \d+s"
    assert re.match(rf"{re.escape(tokenizer['source'])}: (CannotCount|ToolCallHistoryUnsupported|{opened})\b",
                    reason), reason
    assert "Carry on" not in reason and fault not in reason.split(": ", 1)[1]  # no prompt text


@pytest.mark.parametrize("fault", ["hang", "slow", "dribble", "reset", "status_500"])
def test_compact_waits_for_a_failing_tokenizer_at_most_once(project: Path, fault: str) -> None:
    """A compaction makes many counts; once the tokenizer failed, the rest must not each wait the timeout."""
    messages = transcript(fault, turns=30)
    with vllm_runtime(refused_url()):  # the cycle's own time with an instantly failing tokenizer
        _, baseline = timed(hosted_agent(project).compact, transcript("baseline", turns=30), None, None, False)
    with tokenizer_url(fault) as url, vllm_runtime(url):
        agent = hosted_agent(project)
        done, seconds = timed(agent.compact, messages, None, None, False)
        status = agent.status()
    result = done.messages
    assert_valid_openai(result)
    assert messages[-1] in result
    assert status["degradation"]["reason"] == "tokenizer_down" and agent.compression_count == 1
    assert seconds < baseline + TIMEOUT + SLACK_SECONDS, f"compact took {seconds:.1f} s (baseline {baseline:.1f} s)"


def test_wrong_max_model_len_keeps_exact_counts_and_requests_go_out(project: Path) -> None:
    with FaultyServer("ok", count=321, max_model_len=8192) as server, vllm_runtime(server.url):
        agent = hosted_agent(project)
        turn = one_turn(agent, transcript("mml"))
        stats = get_runtime().counter().stats()
    assert turn["estimate"] == 321
    assert turn["sent"]["messages"][1:] == transcript("mml")
    assert stats.last_max_model_len == 8192 and stats.fallbacks == 0


def test_wrong_max_model_len_budgets_against_the_smaller_window_and_says_so(project: Path) -> None:
    with FaultyServer("ok", count=321, max_model_len=8192) as server, vllm_runtime(server.url):
        agent = hosted_agent(project)
        turn = one_turn(agent, transcript("mml"))
        status = agent.status()
        # near the server's window, far below the host's 65536 (asked while the server is up: its max_model_len is
        # the window while its counter runs)
        compacts_near_the_server_window = agent.compaction_decision(8192 - 100, awaiting_usage=False).compact
    assert turn["sent"]["max_tokens"] <= 8192 - 321
    assert "8192" in repr(status)
    assert status["window"] == {  # the host's words: FakeHost.name and window_label
        "fake_context_length": WINDOW, "server_max_model_len": 8192, "refusal_window": None, "server_stated": None,
        "effective": 8192,
        "source": "server max_model_len",
        "mismatch": f"server max_model_len 8192 < Fake context_length {WINDOW}; budgeting against 8192"}
    # The compaction threshold fits the server's window too (output reserve kept below it; budget.compression_window:
    # at 8K the ceiling less the clamped reply and margin)
    assert agent.threshold_tokens == get_runtime().threshold_for(8192, agent.threshold_percent) == 8192 - 1024 - 256
    assert status["trigger"]["threshold"] == agent.threshold_tokens  # what status says it compacts at
    assert compacts_near_the_server_window is True


def test_a_server_window_larger_than_the_hosts_leaves_the_budget_alone(project: Path) -> None:
    with FaultyServer("ok", count=321, max_model_len=4 * WINDOW) as server, vllm_runtime(server.url):
        agent = hosted_agent(project)
        turn = one_turn(agent, transcript("big"))
        status = agent.status()
    assert turn["changed"] and turn["sent"]["max_tokens"] == unconfirmed_cap(WINDOW, 321)
    assert status["window"]["effective"] == WINDOW and status["window"]["source"] == FakeHost.window_label
    assert status["window"]["mismatch"] is None and status["window"]["server_max_model_len"] == 4 * WINDOW


def concurrent_turns(project: Path, url: str, timeout: float, agents: int = 8) -> list[dict[str, Any]]:
    """``agents`` threads, each with its own deep copy of one configured agent (as Hermes 0.19 copies its
    registered engine), all counting through the process's one counter."""
    with vllm_runtime(url, timeout):
        registered = hosted_agent(project)
        registered.status()  # builds the shared counter first: the copies must not carry it
        barrier = threading.Barrier(agents)

        def agent(index: int) -> dict[str, Any]:
            copied = copy.deepcopy(registered)
            barrier.wait()
            return one_turn(copied, transcript(f"agent{index}"))

        with ThreadPoolExecutor(max_workers=agents) as pool:
            return list(pool.map(agent, range(agents)))


def test_slow_server_beyond_the_timeout_under_concurrent_agents(project: Path) -> None:
    with FaultyServer("ok", delay=10.0) as server:
        turns = concurrent_turns(project, server.url, TIMEOUT, agents=8)
    for index, turn in enumerate(turns):
        assert turn["seconds"] < TIMEOUT + SLACK_SECONDS
        assert turn["estimate"] == fallback_tokens(SYSTEM, MARGIN, transcript(f"agent{index}"))
        assert turn["changed"] and turn["sent"]["max_tokens"] == WINDOW - turn["estimate"]


def test_slow_server_within_the_timeout_gives_every_concurrent_agent_exact_budgets(project: Path) -> None:
    with FaultyServer("ok", delay=0.3, count=777, max_model_len=WINDOW) as server:
        turns = concurrent_turns(project, server.url, timeout=5.0, agents=8)
        assert server.requests_received >= 8
    for turn in turns:
        assert turn["estimate"] == 777
        assert turn["changed"] and turn["sent"]["max_tokens"] == unconfirmed_cap(WINDOW, 777)


def test_a_chat_template_that_loops_costs_one_request_the_deadline_and_the_loop_goes_on(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hf backend with a template that loops for hours on this conversation: the request goes out with the
    fallback budget after the count deadline (1 s here), and the next one does not wait again."""
    monkeypatch.setattr(breaker, "LOCAL_COUNT_DEADLINE_SECONDS", 1.0)
    env = {"BATON_TOKENIZER_BACKEND": "hf", "BATON_TOKENIZER_PATH": str(looping_template_dir(tmp_path / "looping")),
           "BATON_FALLBACK_MARGIN_TOKENS": str(MARGIN)}
    messages = [*transcript("loop")[:-1], {"role": "user", "content": f"Carry on. {LOOP_TRIGGER}"}]
    with installed_host_runtime(env, context_length=WINDOW, model=MODEL, base_url=BASE_URL) as runtime:
        assert runtime.counter() is not None  # started (its probes never loop): the turns time counting only
        agent = hosted_agent(project)
        first = one_turn(agent, messages)
        second = one_turn(agent, messages + [{"role": "assistant", "content": "Still here."},
                                             {"role": "user", "content": "Go on."}])
        tokenizer = agent.status()["tokenizer"]
    assert first["seconds"] < 1.0 + SLACK_SECONDS and second["seconds"] < SLACK_SECONDS
    assert first["estimate"] == fallback_tokens(SYSTEM, MARGIN, messages)
    assert first["changed"] and first["sent"]["max_tokens"] == WINDOW - first["estimate"]
    assert second["sent"]["messages"][-1] == {"role": "user", "content": "Go on."}
    assert tokenizer["counter"] == "ready" and tokenizer["breaker"]["last_error_type"] == "CountTimedOut"
