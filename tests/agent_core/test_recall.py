"""Recall through one agent (``Agent``) on a fake host: ``baton_recall`` answers from what a compaction took out,
and each handoff carries the region's anchors and the lineage's user words (record field ``continuity`` and the
brief), redacted; with an embedder configured, a paraphrase finds what was said.

Why here: the in-process index, continuity and ranking are the core's; reading Hermes' own session store is Hermes'
(``tests/hermes/test_recall_engine.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from batontest.records import handoff_records
from batontest.schemas import assert_conforms
from batontest.secrets_corpus import SAMPLES
from batontest.started_agent import qwen3_tokenizer, settings, started_agent

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import get_runtime
from baton_engine.compaction import continuity
from baton_engine.messages.markers import is_baton_message

SECRET = SAMPLES[0]
BRIEF_MAX = 1200


def tool_round(index: int, output: str) -> list[dict[str, Any]]:
    call = f"call_{index}"
    return [
        {"role": "assistant", "content": f"Step {index}.", "tool_calls": [{"id": call, "type": "function", "function": {
            "name": "terminal", "arguments": json.dumps({"command": f"make check-{index}"})}}]},
        {"role": "tool", "tool_call_id": call,
         "content": json.dumps({"output": output + "\n" + " ".join(f"w{index}-{n}" for n in range(300)),
                                "exit_code": 2 if index == 0 else 0, "error": None})},
    ]


def recalling_agent(project: Path) -> Agent:
    return started_agent(project, settings(tokenizer=qwen3_tokenizer(), fresh_tail_tokens=600,
                                           brief_max_tokens=BRIEF_MAX))


def compact(agent: Agent, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return agent.compact(messages, 50_000, None, False).messages


def recall(agent: Agent, **args: Any) -> dict[str, Any]:
    return json.loads(agent.tool_handler.handle("baton_recall", args, None))


def test_recall_after_two_compactions_and_a_rotation(project: Path) -> None:
    agent = recalling_agent(project)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Never deploy on Fridays; the staging host is stg-7.internal."},
        *tool_round(0, f"build-4821 FAILED: checksum mismatch in bundle-9f3c2a7b\nkey {SECRET.text}"),
        {"role": "user", "content": "Also remember the budget code is BX-3310."},
        *tool_round(1, "ok"), *tool_round(2, "ok"),
        {"role": "user", "content": "Now fix the release pipeline."},
    ]
    messages += tool_round(3, "ok") + tool_round(4, "ok")
    first = compact(agent, messages)
    agent.session_started("session-2", model=None, rotated=True, platform=None, conversation_id=None)
    second = compact(agent, [*first, *tool_round(5, "ok"), *tool_round(6, "ok"), *tool_round(7, "ok")])
    assert agent.compression_count == 2 and agent.compaction.degradation_reason is None

    records = handoff_records(project)
    assert len(records) == 2
    for record in records:
        assert_conforms(record)
        assert SECRET.text not in json.dumps(record)
    state = records[-1]["continuity"]
    words = [item["text"] for item in state["user_words"]["items"]]
    # the second region holds none of the first user messages: they come from the lineage
    assert "Never deploy on Fridays; the staging host is stg-7.internal." in words
    assert "Also remember the budget code is BX-3310." in words
    commands = [c["command"] for c in records[0]["continuity"]["anchors"]["commands"]]
    assert commands[0] == "make check-0" and records[0]["continuity"]["anchors"]["commands"][0]["exit_code"] == 2
    assert any("build-4821 FAILED" in line for line in records[0]["continuity"]["anchors"]["errors"])

    block = next(m["content"] for m in second if is_baton_message(m) and m["role"] == "user")
    assert continuity.RECALL_LINE in block and '"Also remember the budget code is BX-3310."' in block
    brief = block.split("\n\n", 1)[1].rsplit("\n\n", 1)[0]
    assert get_runtime().main.count_text(brief).tokens <= BRIEF_MAX + 2  # the join newlines

    assert block.count("Also remember the budget code is BX-3310.") == 1  # the cycle's section only
    resumed = json.loads(agent.tool_handler.handle("baton_resume", {"max_tokens": 4000}, None))
    assert 'User said: "Never deploy on Fridays; the staging host is stg-7.internal."' in resumed["brief"]["text"]

    found = recall(agent, mode="search", query="build-4821")
    assert found["ok"] and found["hits"][0]["tool_name"] == "terminal", found
    assert "make check-0" in found["hits"][0]["arguments"]
    expanded = recall(agent, mode="expand", ref=found["hits"][0]["ref"], budget_tokens=4000)
    assert expanded["ok"] and expanded["complete"]
    assert "build-4821 FAILED: checksum mismatch in bundle-9f3c2a7b" in expanded["text"]
    assert SECRET.text not in json.dumps(expanded) and "[REDACTED" in expanded["text"]


def test_recall_tool_errors_are_json(project: Path) -> None:
    agent = recalling_agent(project)
    assert recall(agent, mode="search", query="anything") == {"ok": True, "mode": "search", "query": "anything",
                                                              "found": False, "hits": []}
    for args, kind in [({"mode": "search", "query": "  "}, "input_error"), ({"mode": "search"}, "input_error"),
                       ({"mode": "expand", "ref": "msg-0000000000000000"}, "not_found"),
                       ({"mode": "expand", "ref": "msg-1", "budget_tokens": 10**9}, "input_error"),
                       ({"mode": "delete"}, "input_error")]:
        answer = recall(agent, **args)
        assert answer["ok"] is False and answer["error"]["kind"] == kind, (args, answer)


def test_an_embedder_in_config_ranks_a_paraphrase_after_compaction(project: Path) -> None:
    """``embedder`` in the settings: a compaction queues the region's vectors off the request path, status says
    hybrid, and a paraphrase finds the statement in one search."""
    from batontest.embedding_standin import EmbeddingStandin

    from baton_engine.recall import dense

    with EmbeddingStandin() as server:
        agent = started_agent(project, settings(tokenizer=qwen3_tokenizer(), fresh_tail_tokens=600, embedder={
            "backend": "openai", "url": server.url, "model": "toy"}))
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Staging pgbouncer settled: DB_PORT=6543."},
            *(m for n in range(6) for m in tool_round(n, f"Review note {n}: rename the helper in module {n}.")),
            {"role": "user", "content": "Now fix the release pipeline."}]
        compact(agent, messages)
        dense.wait_idle()
        assert server.requests, "the compaction queued the region's vectors"
        assert agent.status()["recall"]["ranking"] == "hybrid (openai:toy)"
        lineage = agent.status()["recall"]["lineage"]
        assert lineage["rows_embedded"] > 0 and lineage["rows_pending"] == 0, lineage
        found = recall(agent, mode="search", query="which socket does the pre-production pooler listen on?")
    assert "DB_PORT=6543" in found["hits"][0]["snippet"]
