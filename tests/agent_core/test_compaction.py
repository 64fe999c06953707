"""One agent's compaction (``Agent.compact``) through a fake host: the whole handoff cycle on a real git project with
real tokenizers, what it folds in and reads, and each way it degrades.

Why here: the cycle, its store and its degradations are the core's; Hermes' ``compress`` hook only hands its list
over (what its boundary makes of a raised bug stays in ``tests/hermes/test_compress.py``).
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from batontest import assets
from batontest.faulty_servers import refused_url
from batontest.gitrepo import git
from batontest.records import handoff_records
from batontest.secrets_corpus import SAMPLES
from batontest.started_agent import ADAPTER_VERSION, qwen3_tokenizer, settings, started_agent
from batontest.tool_rounds import conversation, tool_round

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import get_runtime
from baton_engine.messages.markers import is_baton_message
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.plugins import build_backend

SECRET_SAMPLE = SAMPLES[0]


def qwen3_agent(project: Path, **block: Any) -> Agent:
    return started_agent(project, settings(tokenizer=qwen3_tokenizer(), **block))


def compact(agent: Agent, messages: Any, current_tokens: int | None = None,
            focus_topic: str | None = None) -> list[dict[str, Any]]:
    return agent.compact(messages, current_tokens, focus_topic, False).messages


def capture(agent: Agent, args: dict[str, Any], messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return json.loads(agent.tool_handler.handle("baton_capture", args, messages))


def handoff_block(messages: list[dict[str, Any]]) -> dict[str, Any]:
    blocks = [m for m in messages if m.get("role") == "user" and str(m.get("content", "")).startswith("[Baton handoff")]
    assert len(blocks) == 1, [str(m.get("content"))[:40] for m in messages]
    return blocks[0]


def test_three_compactions_make_three_linked_ready_handoffs(project: Path) -> None:
    agent = qwen3_agent(project, fresh_tail_tokens=2000)
    request = f"Refactor src/app.py; the deploy key is in this note: {SECRET_SAMPLE.text}"
    messages = conversation(request, 6)
    counter = get_runtime().counter()
    assert counter is not None and counter.source.startswith("hf:")
    previous_id, ids = None, []
    for compaction in range(3):
        before = copy.deepcopy(messages)
        focus = "the app module" if compaction == 0 else None
        out = compact(agent, messages, 50_000, focus)
        assert messages == before, "the input list is never mutated"
        # the host's next request, its usage not yet come: the compaction left nothing that compacts it again
        assert agent.compaction_decision(0, awaiting_usage=True).compact is False
        block = handoff_block(out)
        assert get_runtime().count_chat({"messages": [block]}).tokens <= 1400
        assert out[-1]["role"] in ("tool", "user", "assistant")
        assert any(m.get("role") == "user" and not is_baton_message(m) for m in out), "latest request kept"
        handoff = agent.status()["latest_handoff"]
        assert handoff["status"] == "ready" and agent.compression_count == compaction + 1
        assert handoff["parents"] == ([] if previous_id is None else [previous_id])
        assert f"[Baton handoff {handoff['short_id']} | status: ready" in block["content"]
        previous_id = handoff["id"]
        ids.append(previous_id)
        agent.session_started(f"session-{compaction + 2}", model=None, rotated=True, platform=None,
                              conversation_id=None)
        messages = out + tool_round(100 + compaction) + [{"role": "user", "content": f"next part {compaction}"}]
        messages += tool_round(200 + compaction)
    by_id = {r["id"]: r for r in handoff_records(project)}
    assert sorted(by_id) == sorted(ids)
    records = [by_id[i] for i in ids]
    assert [r["automation"]["trigger"] for r in records] == ["pre_compaction"] * 3
    assert records[0]["work"]["constraints"] == ["Focus for the next phase: the app module"]
    assert records[0]["artifacts"][0]["path"] == "src/app.py" and records[0]["artifacts"][0]["content_hash"]
    assert records[0]["origin"]["adapter_version"] == ADAPTER_VERSION
    assert records[0]["origin"]["session_id"].startswith("sha256:")
    stored = "".join(p.read_text() for p in (project / ".baton").rglob("*") if p.is_file())
    for secret in SECRET_SAMPLE.secrets:
        assert secret not in stored
        assert all(secret not in str(m.get("content")) for m in [handoff_block(out)])


def test_compacted_list_renders_through_real_chat_templates(project: Path) -> None:
    agent = qwen3_agent(project, fresh_tail_tokens=1500)
    out = compact(agent, conversation("Port the parser", 5) + [{"role": "user", "content": "and test it"}])
    for path in (assets.qwen3_dir(), assets.mistral_nemo_dir()):
        backend, _selection = build_backend(TokenizerConfig(backend="hf", path=str(path)))
        counted = backend.count_chat({"messages": out})
        assert counted.exact and counted.tokens > 0
        backend.close()


def test_captured_items_are_folded_into_the_handoff(project: Path) -> None:
    agent = qwen3_agent(project)
    messages = conversation("Make the CLI faster", 3)
    first = capture(agent, {"kind": "decision", "item": {"decision": "cache the index", "rationale": "hot path"}},
                    messages)
    assert first["ok"] and first["item"]["id"] == "D-001"
    draft_id = first["handoff"]["id"]
    capture(agent, {"kind": "objective", "objective": "CLI under 100 ms"})
    compact(agent, messages)
    records = {r["id"]: r for r in handoff_records(project)}
    assert records[draft_id]["status"] == "archived"
    handoff = records[agent.status()["latest_handoff"]["id"]]
    assert handoff["work"]["objective"] == "CLI under 100 ms"
    assert [d["decision"] for d in handoff["decisions"]] == ["cache the index"]


def test_every_captured_record_is_in_the_post_compaction_context(project: Path) -> None:
    agent = qwen3_agent(project)
    messages = conversation("Fix the flaky upload test", 3)
    captures = [
        {"kind": "decision", "item": {"decision": "pin the fixture clock"}},
        {"kind": "evidence", "item": {"type": "test", "claim": "test_upload fails with ETIMEDOUT-4411",
                                      "ref": "tests/test_upload.py"}},
        {"kind": "failed_attempt", "item": {"attempt": "raising the timeout to 60 s", "outcome": "still flaky"}},
        {"kind": "open_item", "item": {"description": "stub the S3 client", "suggested_action": "add a fake"}},
    ]
    for args in captures:
        assert capture(agent, args, messages)["ok"]
    text = str(handoff_block(compact(agent, messages))["content"])
    for needle in ("pin the fixture clock", "ETIMEDOUT-4411", "raising the timeout to 60 s", "stub the S3 client"):
        assert needle in text, needle


def test_not_initialised_degrades_with_a_one_time_notice(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    agent = started_agent(tmp_path)
    caplog.set_level(logging.WARNING, logger="baton_engine.agent")
    messages = conversation("Do the thing", 12)
    out = compact(agent, messages)
    again = compact(agent, messages)
    assert out == again and len(out) < len(messages)
    assert out[0]["content"].startswith("[Baton degraded compaction | reason: not_initialised]")
    assert sum("baton init" in r.getMessage() for r in caplog.records) == 1
    status = agent.status()
    assert status["degradation"]["reason"] == "not_initialised" and "baton init" in status["degradation"]["detail"]
    assert agent.compression_count == 0
    assert len(out) <= 2 + 1 + 6  # note + notice + carried latest request + degradation_keep_recent (6)


def test_unwritable_store_degrades(project: Path) -> None:
    agent = started_agent(project)
    handoffs = project / ".baton" / "handoffs"
    handoffs.rmdir()
    handoffs.write_text("not a directory")  # as root, permissions cannot make a directory read-only
    out = compact(agent, conversation("Fix the bug", 4))
    assert agent.status()["degradation"]["reason"] == "disk_not_writable"
    assert out[0]["content"].startswith("[Baton degraded compaction | reason: disk_not_writable]")


def test_tokenizer_down_still_hands_off_and_says_so(project: Path) -> None:
    agent = started_agent(project, settings(tokenizer={"backend": "vllm", "url": refused_url(),
                                                       "timeout_seconds": 2}))
    out = compact(agent, conversation("Keep going", 4))
    status = agent.status()
    assert status["degradation"]["reason"] == "tokenizer_down"
    assert status["latest_handoff"]["status"] == "ready"
    assert handoff_block(out)


def test_a_brief_that_cannot_fit_points_at_the_stored_handoff(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: render raised and the compaction ended in internal_error with no usable brief. A counter so
    dense that not even the brief's marker fits (the soak's over-counting ratio) is stood in for here."""
    from baton_engine.handoff import render

    def too_small(*_args: Any, **kwargs: Any) -> Any:
        raise render.BriefTooSmall(f"a resume brief cannot fit in {kwargs['max_tokens']} tokens with this counter")

    monkeypatch.setattr(render, "render_brief", too_small)
    agent = started_agent(project)
    out = compact(agent, conversation("Keep going", 4))
    status = agent.status()
    assert status["degradation"]["reason"] is None and status["latest_handoff"]["status"] == "ready"
    short = status["latest_handoff"]["short_id"]
    assert f"Call baton_resume with ref {short} to read it." in handoff_block(out)["content"]


def test_captured_items_survive_later_compactions(project: Path) -> None:
    agent = started_agent(project)
    messages = conversation("Harden the uploader", 2)
    capture(agent, {"kind": "decision", "item": {"decision": "retry with backoff"}}, messages)
    first = compact(agent, messages)
    compact(agent, first + tool_round(50) + [{"role": "user", "content": "go on"}])  # nothing captured here
    second = capture(agent, {"kind": "decision", "item": {"decision": "cap uploads at 1 GB"}}, messages)
    assert second["item"]["id"] == "D-002", "the session draft continues the previous handoff's numbering"
    compact(agent, first + tool_round(60) + [{"role": "user", "content": "finish"}])
    by_id = {r["id"]: r for r in handoff_records(project)}
    latest = by_id[agent.status()["latest_handoff"]["id"]]
    assert [d["decision"] for d in latest["decisions"]] == ["retry with backoff", "cap uploads at 1 GB"]
    chain, node = [], latest
    while node["lineage"]["parents"]:
        chain.append(node["lineage"]["relation"])
        node = by_id[node["lineage"]["parents"][0]]
    assert chain == ["continue", "continue"] and agent.compression_count == 3


def test_one_compaction_reads_git_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Capture, validation and freshness share one read of git: `status --porcelain=v2` + `remote -v`."""
    from baton_engine.handoff import gitinfo

    asked: list[str] = []
    real = gitinfo.run_git

    def counted(root: Path, *args: str, **kwargs: Any) -> str | None:
        asked.append(args[0])
        return real(root, *args, **kwargs)

    monkeypatch.setattr(gitinfo, "run_git", counted)
    agent = qwen3_agent(project)
    out = compact(agent, conversation("Refactor the app.", 6))
    assert handoff_block(out) and agent.compaction.degradation_reason is None
    assert asked == ["status", "remote"]
    record = handoff_records(project)[-1]
    assert record["project"]["repository"]["head"] == git(project, "rev-parse", "HEAD")
    assert record["project"]["repository"]["dirty"] is False and record["status"] == "ready"


def test_one_compaction_redacts_its_record_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new handoff is redacted once (by capture, before its content id is set); validation and the save
    trust it and never scan it again. The session draft it folds is a record of its own: archiving it scans
    it once. (``contains_secret`` and validation both scan through ``redact_record``.)"""
    from baton_engine.handoff import redact

    scans: list[str] = []
    real = redact.redact_record

    def redact_record(data: Any, *args: Any, **kwargs: Any) -> Any:
        scans.append(str(data.get("id")))
        return real(data, *args, **kwargs)

    agent = qwen3_agent(project)
    messages = conversation("Refactor the app.", 6)
    assert capture(agent, {"kind": "decision", "decision": f"keep {SECRET_SAMPLE.text} out of logs"}, messages)["ok"]
    draft_id = agent.compaction.session_draft_id
    monkeypatch.setattr(redact, "redact_record", redact_record)
    compact(agent, messages)
    handoff_id = agent.compaction.last_handoff["id"]
    assert agent.compaction.degradation_reason is None and handoff_id != draft_id
    assert len(scans) == 2 and scans.count(draft_id) == 1 and handoff_id not in scans, scans
    stored = next(r for r in handoff_records(project) if r["id"] == handoff_id)
    assert not any(secret in json.dumps(handoff_records(project)) for secret in SECRET_SAMPLE.secrets)
    assert "[REDACTED:" in json.dumps(stored["decisions"])


def test_messages_counted_before_a_compaction_are_not_scanned_again(project: Path) -> None:
    """Each request's new messages are scanned ahead for the next compaction (the host asks after its pre-request
    estimate); the compaction then scans none of them itself."""
    from baton_engine.compaction import scan

    scan.clear()
    agent = started_agent(project, settings(fresh_tail_tokens=200))
    messages = conversation("Refactor the app.", 6)
    for end in range(1, len(messages) + 1):  # one more message per request, as a host's loop sends them
        agent.count_estimate(messages[:end])
        agent.prepare_compaction(messages[:end])
    compact(agent, copy.deepcopy(messages))
    figures = agent.status()["last_compaction_scan"]
    assert figures["region_messages"] >= 4 and figures["scanned_at_compaction"] == 0, figures
