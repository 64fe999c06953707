"""Secrets through one agent's Baton, on a fake host: the whole corpus planted in user messages, tool results,
assistant text and ``baton_capture`` items, then a compaction and a session end, with every logger at DEBUG. No
secret reaches ``.baton/``, a log line, a tool answer, the status or the Baton block handed back to the host; each
capture and the compaction record their redactions.

Why here: redaction, the tools, the compaction and the session's draft are the core's; the host's hooks only hand
them the messages (Hermes: ``handle_tool_call`` -> ``tool_handler.handle``, ``compress`` -> ``compact``,
``on_session_end`` -> ``compaction.ended``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from batontest.engine_kit import TIKTOKEN_ENV, LogSink, installed_host_runtime, make_agent
from batontest.secrets_check import leaks_in_store, leaks_in_text
from batontest.secrets_corpus import SAMPLES, leaky_document

from baton_engine.agent.agent import Agent
from baton_engine.handoff.store import HandoffStore, find_project_root
from baton_engine.messages.markers import is_baton_message


def leaky_transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Deploy the service. My keys:\n" + leaky_document(20)}]
    for i in range(0, len(SAMPLES), 10):
        call = f"call_{i:03d}"
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function", "function": {
                "name": "terminal", "arguments": json.dumps({"command": f"cat .env # {SAMPLES[i].text}"})}}]},
            {"role": "tool", "tool_call_id": call, "content": leaky_document(10, offset=i)},
            {"role": "assistant", "content": f"Found credentials: {SAMPLES[(i + 5) % len(SAMPLES)].text}"},
        ]
    return messages + [{"role": "user", "content": "Now finish the deploy with " + leaky_document(8, offset=30)}]


def capture(agent: Agent, messages: list[dict[str, Any]], kind: str, **args: Any) -> dict[str, Any]:
    answer = agent.tool_handler.handle("baton_capture", {"kind": kind, **args}, messages)
    assert not leaks_in_text(answer), f"baton_capture {kind} echoed a secret"
    return json.loads(answer)


def test_no_secret_reaches_the_store_the_logs_or_the_brief(project: Path, debug_logs: LogSink) -> None:
    messages = leaky_transcript()
    with installed_host_runtime(TIKTOKEN_ENV):
        agent = make_agent(project)
        agent.session_started("session-1", model=None, rotated=False, platform="cli", conversation_id=None)
        assert capture(agent, messages, "objective", objective="Deploy with " + SAMPLES[0].text)["ok"]
        answers = [
            capture(agent, messages, "decision", item={"decision": f"Use {s.text}", "rationale": s.text})
            for s in SAMPLES[:20]
        ] + [
            capture(agent, messages, "evidence", item={"claim": "deploy ran", "type": "command",
                                                       "ref": "make deploy", "result": s.text})
            for s in SAMPLES[20:40]
        ] + [
            capture(agent, messages, "failed_attempt", item={"attempt": s.text, "outcome": "401 " + s.text})
            for s in SAMPLES[40:]
        ]
        for sample, answer in zip(SAMPLES, answers, strict=True):
            assert answer["ok"], answer
            assert answer["redactions"], f"{sample.name}: capture recorded no redaction"
        result = agent.compact(messages, None, None, False).messages
        status = agent.status()
        status_json = json.dumps(agent.status(), default=str)
        agent.compaction.ended(result, 0)  # the session's end, no usage reported yet
    assert status["degradation"]["reason"] is None and agent.compression_count == 1
    block = [m for m in result if is_baton_message(m)]
    assert block, "no Baton block in the compacted list"
    assert leaks_in_text(json.dumps(block)) == [], "the brief handed to the model holds a secret"
    assert leaks_in_text(status_json) == []
    assert leaks_in_store(project) == []
    assert leaks_in_text(debug_logs.text) == []
    record = HandoffStore(find_project_root(project)).load(status["latest_handoff"]["id"])
    fields = [r.field for r in record.redactions]
    for prefix in ("work.objective", "decisions", "evidence", "failed_attempts"):
        assert any(f.startswith(prefix) for f in fields), f"no redaction recorded under {prefix}: {fields}"
    assert len(record.redactions) >= len(SAMPLES)
