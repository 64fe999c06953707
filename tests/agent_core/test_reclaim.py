"""One agent's prune (``Agent.pruner``) through a fake host, with the real Qwen3 tokenizer: answered tool output
reclaimed to stubs with exact figures, what was pruned one ``baton_recall`` away, the session's cache account in
status and ``baton report``, and when a prune may not run.

Why here: when to prune, the reclaim and its account are the core's; Hermes' ``prune_tool_results_only`` hook only
hands its list over (its transports' requests of a pruned list, its config keys and its newer hooks are tested in
``tests/hermes/test_reclaim.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from batontest.hermes_requests import chat, history
from batontest.started_agent import qwen3_tokenizer, settings, started_agent
from batontest.validators import VALIDATORS

from baton_engine.agent.agent import Agent
from baton_engine.messages.markers import PRUNED_PREFIX
from baton_engine.operations.maintenance import report

WINDOW = 131_072


def reclaiming_agent(project: Path, **block: Any) -> Agent:
    baton = settings(tokenizer=qwen3_tokenizer(), **{"reclaim_trigger_tokens": 12_000, "reclaim_min_tokens": 2_000,
                                                     **block})
    return started_agent(project, baton, window=WINDOW)


def feed(agent: Agent, messages: list[dict[str, Any]], step: int = 6) -> list[dict[str, Any]]:
    """The session as a host's preflight feeds it: before each request, a prune of the list so far; a committed
    prune replaces the list (a new list, a non-zero count), as the host commits it."""
    current: list[dict[str, Any]] = []
    for start in range(0, len(messages), step):
        current = current + messages[start:start + step]
        pruned, count = agent.pruner.prune(current)
        if count and pruned is not current:
            current = pruned
    return current


def test_a_prune_reclaims_answered_output_with_exact_figures_and_recall_pages_it_back(project: Path) -> None:
    agent = reclaiming_agent(project)
    session = history(40_000)[1:]  # a compaction and a prune get the transcript without the system prompt
    final = feed(agent, session)
    reclaim = agent.status()["reclaim"]
    assert reclaim["prunes_committed"] >= 1, reclaim
    assert reclaim["reclaimed_exact"] is True and reclaim["reclaimed_tokens"] > 2_000
    last = reclaim["last"]
    # the figure is the exact difference of the two requests' counts (the second is the next request's count)
    after = agent.requests.count(agent.requests.view_of(final))
    assert after.exact and last["reclaimed"] == last["before"] - last["after"]
    stubs = [m for m in final if m.get("role") == "tool" and str(m.get("content")).startswith(PRUNED_PREFIX)]
    assert stubs and all("baton_recall" in m["content"] for m in stubs)
    assert VALIDATORS["chat_completions"](chat(final)) == []  # the pruned list is a request a provider accepts
    # what was pruned is one baton_recall away, whole
    stub = stubs[0]
    ref = stub["content"].split("ref=")[1].rstrip("]")
    original = next(m for m in session if m.get("tool_call_id") == stub["tool_call_id"])
    page = json.loads(agent.tool_handler.handle("baton_recall", {"mode": "expand", "ref": ref,
                                                                 "budget_tokens": 20_000}, None))
    assert page["ok"] is True, page
    assert page["complete"] is True and page["text"].strip() == original["content"].strip()


def test_baton_report_shows_the_account_status_shows(project: Path) -> None:
    """``baton report`` replays the session's metrics log (usage with the cache's fields, each prune) through the
    account status keeps: the same figures, from the log alone."""
    agent = reclaiming_agent(project)
    system, *session = history(40_000)
    current: list[dict[str, Any]] = []
    for start in range(0, len(session), 6):
        current = current + session[start:start + 6]
        pruned, count = agent.pruner.prune(current)
        if count and pruned is not current:
            current = pruned
        agent.on_request({"model": "qwen3", "messages": [system, *current], "max_tokens": 1024}, model="qwen3")
        sent = agent.requests.ledger.sent_count.tokens
        agent.observe_response_usage({"prompt_tokens": sent, "completion_tokens": 20,
                                      "prompt_tokens_details": {"cached_tokens": sent * 3 // 4}})
    status = agent.status()["reclaim"]
    assert status["prunes_committed"] >= 1 and status["responses"] > 1 and status["cache_read_tokens"] > 0, status
    summary = report(project)["summary"]
    keys = ("prompt_tokens", "cache_read_tokens", "cache_write_tokens", "uncached_prompt_tokens", "responses",
            "responses_reporting_cache", "reclaimed_tokens", "reclaimed_exact", "prunes_committed", "prunes_declined")
    assert {key: summary[key] for key in keys} == {key: status[key] for key in keys}


def test_no_prune_inside_a_compaction_or_on_a_request_that_must_compact(project: Path) -> None:
    session = history(40_000)[1:]
    agent = reclaiming_agent(project)
    agent.compaction.compacting = True
    assert agent.pruner.prune(session) == (session, 0)  # far above reclaim_trigger_tokens
    agent.compaction.compacting = False
    small = started_agent(project, settings(tokenizer=qwen3_tokenizer(), reclaim_trigger_tokens=1_000),
                          window=32_768)
    messages, count = small.pruner.prune(session)
    assert messages is session and count == 0
    assert small.status()["reclaim"]["prunes_declined"] == {"must_compact": 1}


def test_reclamation_is_off_at_a_zero_trigger(project: Path) -> None:
    agent = reclaiming_agent(project, reclaim_trigger_tokens=0)
    session = history(40_000)[1:]
    assert feed(agent, session) == session
    assert agent.status()["reclaim"]["prunes_committed"] == 0


def test_compacting_before_sending_is_decided_on_the_exact_count(project: Path) -> None:
    agent = started_agent(project, settings(tokenizer=qwen3_tokenizer()), window=65_536)
    assert agent.compacts_before_sending(history(8_000)[1:], awaiting_usage=False) is False
    assert agent.compacts_before_sending(history(60_000)[1:], awaiting_usage=False) is True
    assert agent.compacts_before_sending("not a list", awaiting_usage=False) is False


def test_a_new_session_starts_its_own_cache_account_and_a_rotation_keeps_it(project: Path) -> None:
    agent = reclaiming_agent(project)
    feed(agent, history(30_000)[1:])
    committed = agent.status()["reclaim"]["prunes_committed"]
    assert committed >= 1
    agent.session_started("session-1b", model=None, rotated=True, platform=None, conversation_id=None)
    assert agent.status()["reclaim"]["prunes_committed"] == committed
    agent.session_started("session-2", model=None, rotated=False, platform="cli", conversation_id=None)
    fresh = agent.status()["reclaim"]
    assert (fresh["prunes_committed"], fresh["reclaimed_tokens"], fresh["prompt_tokens"], fresh["last"]) == \
        (0, 0, 0, None)
