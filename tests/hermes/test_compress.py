"""compress(): the whole handoff cycle on a real git project with real tokenizers, and every degradation."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from batontest import assets
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import started_engine
from batontest.faulty_servers import refused_url
from batontest.gitrepo import git
from batontest.records import handoff_records as _records
from batontest.secrets_corpus import SAMPLES

from baton_engine.agent.runtime import get_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import ExactEstimators
from baton_engine.messages.markers import is_baton_message
from baton_engine.settings import load_settings
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.plugins import build_backend

pytestmark = pytest.mark.hermes
SECRET_SAMPLE = SAMPLES[0]


def _tool_round(index: int, *, path: str = "src/app.py", words: int = 400) -> list[dict[str, Any]]:
    call_id = f"call_{index}"
    return [
        {"role": "assistant", "content": f"Step {index}: editing {path}.", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "write_file", "arguments": json.dumps({"path": path, "content": "x"})}}]},
        {"role": "tool", "tool_call_id": call_id, "content": " ".join(f"line{index}-{n}" for n in range(words))},
    ]


def _conversation(request: str, rounds: int, start: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": request}]
    for index in range(start, start + rounds):
        messages += _tool_round(index)
    return messages


def _engine(project: Path, **block: Any) -> BatonContextEngine:
    return started_engine(project, load_settings(hermes_block=block or None))


def _block(messages: list[dict[str, Any]]) -> dict[str, Any]:
    blocks = [m for m in messages if m.get("role") == "user" and str(m.get("content", "")).startswith("[Baton handoff")]
    assert len(blocks) == 1, [str(m.get("content"))[:40] for m in messages]
    return blocks[0]


def test_three_compactions_make_three_linked_ready_handoffs(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project, fresh_tail_tokens=2000)
    request = f"Refactor src/app.py; the deploy key is in this note: {SECRET_SAMPLE.text}"
    messages = _conversation(request, 6)
    counter = get_runtime().counter()
    assert counter is not None and counter.source.startswith("hf:")
    previous_id, ids = None, []
    for compaction in range(3):
        before = copy.deepcopy(messages)
        focus = "the app module" if compaction == 0 else None
        out = engine.compress(messages, current_tokens=50_000, focus_topic=focus)
        assert messages == before, "the input list is never mutated"
        engine.last_prompt_tokens = -1  # what the host does after every compaction
        assert engine.should_compress(0) is False
        block = _block(out)
        assert get_runtime().count_chat({"messages": [block]}).tokens <= 1400
        assert out[-1]["role"] in ("tool", "user", "assistant")
        assert any(m.get("role") == "user" and not is_baton_message(m) for m in out), "latest request kept"
        status = engine.get_status()
        handoff = status["latest_handoff"]
        assert handoff["status"] == "ready" and engine.compression_count == compaction + 1
        assert handoff["parents"] == ([] if previous_id is None else [previous_id])
        assert f"[Baton handoff {handoff['short_id']} | status: ready" in block["content"]
        previous_id = handoff["id"]
        ids.append(previous_id)
        engine.on_session_start(f"session-{compaction + 2}", boundary_reason="compression",
                                old_session_id=f"session-{compaction + 1}")
        messages = out + _tool_round(100 + compaction) + [{"role": "user", "content": f"next part {compaction}"}]
        messages += _tool_round(200 + compaction)
    by_id = {r["id"]: r for r in _records(project)}
    assert sorted(by_id) == sorted(ids)
    records = [by_id[i] for i in ids]
    assert [r["automation"]["trigger"] for r in records] == ["pre_compaction"] * 3
    assert records[0]["work"]["constraints"] == ["Focus for the next phase: the app module"]
    assert records[0]["artifacts"][0]["path"] == "src/app.py" and records[0]["artifacts"][0]["content_hash"]
    assert records[0]["origin"]["adapter_version"].startswith("hermes-")
    assert records[0]["origin"]["session_id"].startswith("sha256:")
    stored = "".join(p.read_text() for p in (project / ".baton").rglob("*") if p.is_file())
    for secret in SECRET_SAMPLE.secrets:
        assert secret not in stored
        assert all(secret not in str(m.get("content")) for m in [_block(out)])


def test_compacted_list_renders_through_real_chat_templates(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project, fresh_tail_tokens=1500)
    out = engine.compress(_conversation("Port the parser", 5) + [{"role": "user", "content": "and test it"}])
    for path in (assets.qwen3_dir(), assets.mistral_nemo_dir()):
        backend, _selection = build_backend(TokenizerConfig(backend="hf", path=str(path)))
        counted = backend.count_chat({"messages": out})
        assert counted.exact and counted.tokens > 0
        backend.close()


def test_captured_items_are_folded_into_the_handoff(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project)
    messages = _conversation("Make the CLI faster", 3)
    first = json.loads(engine.handle_tool_call(
        "baton_capture", {"kind": "decision", "item": {"decision": "cache the index", "rationale": "hot path"}},
        messages=messages))
    assert first["ok"] and first["item"]["id"] == "D-001"
    draft_id = first["handoff"]["id"]
    json.loads(engine.handle_tool_call("baton_capture", {"kind": "objective", "objective": "CLI under 100 ms"}))
    engine.compress(messages)
    records = {r["id"]: r for r in _records(project)}
    assert records[draft_id]["status"] == "archived"
    handoff = records[engine.get_status()["latest_handoff"]["id"]]
    assert handoff["work"]["objective"] == "CLI under 100 ms"
    assert [d["decision"] for d in handoff["decisions"]] == ["cache the index"]


def test_every_captured_record_is_in_the_post_compaction_context(project: Path, qwen3_env: Path) -> None:
    engine = _engine(project)
    messages = _conversation("Fix the flaky upload test", 3)
    captures = [
        {"kind": "decision", "item": {"decision": "pin the fixture clock"}},
        {"kind": "evidence", "item": {"type": "test", "claim": "test_upload fails with ETIMEDOUT-4411",
                                      "ref": "tests/test_upload.py"}},
        {"kind": "failed_attempt", "item": {"attempt": "raising the timeout to 60 s", "outcome": "still flaky"}},
        {"kind": "open_item", "item": {"description": "stub the S3 client", "suggested_action": "add a fake"}},
    ]
    for capture in captures:
        assert json.loads(engine.handle_tool_call("baton_capture", capture, messages=messages))["ok"]
    text = str(_block(engine.compress(messages))["content"])
    for needle in ("pin the fixture clock", "ETIMEDOUT-4411", "raising the timeout to 60 s", "stub the S3 client"):
        assert needle in text, needle


def test_not_initialised_degrades_with_a_one_time_notice(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine = _engine(tmp_path)
    caplog.set_level(logging.WARNING, logger="baton_engine.hermes")
    messages = _conversation("Do the thing", 12)
    out = engine.compress(messages)
    again = engine.compress(messages)
    assert out == again and len(out) < len(messages)
    assert out[0]["content"].startswith("[Baton degraded compaction | reason: not_initialised]")
    assert sum("baton init" in r.getMessage() for r in caplog.records) == 1
    status = engine.get_status()
    assert status["degradation"]["reason"] == "not_initialised" and "baton init" in status["degradation"]["detail"]
    assert engine.compression_count == 0
    assert len(out) <= 2 + 1 + 6  # note + notice + carried latest request + degradation_keep_recent (6)


def test_unwritable_store_degrades(project: Path) -> None:
    engine = _engine(project)
    handoffs = project / ".baton" / "handoffs"
    handoffs.rmdir()
    handoffs.write_text("not a directory")  # as root, permissions cannot make a directory read-only
    out = engine.compress(_conversation("Fix the bug", 4))
    assert engine.get_status()["degradation"]["reason"] == "disk_not_writable"
    assert out[0]["content"].startswith("[Baton degraded compaction | reason: disk_not_writable]")


def test_tokenizer_down_still_hands_off_and_says_so(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATON_TOKENIZER_BACKEND", "vllm")
    monkeypatch.setenv("BATON_TOKENIZER_URL", refused_url())
    monkeypatch.setenv("BATON_TOKENIZER_TIMEOUT_SECONDS", "2")
    engine = _engine(project)
    out = engine.compress(_conversation("Keep going", 4))
    status = engine.get_status()
    assert status["degradation"]["reason"] == "tokenizer_down"
    assert status["latest_handoff"]["status"] == "ready"
    assert _block(out)


def test_a_brief_that_cannot_fit_points_at_the_stored_handoff(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: render raised and the compaction ended in internal_error with no usable brief. A counter so
    dense that not even the brief's marker fits (the soak's over-counting ratio) is stood in for here."""
    from baton_engine.handoff import render

    def too_small(*_args: Any, **kwargs: Any) -> Any:
        raise render.BriefTooSmall(f"a resume brief cannot fit in {kwargs['max_tokens']} tokens with this counter")

    monkeypatch.setattr(render, "render_brief", too_small)
    engine = _engine(project)
    out = engine.compress(_conversation("Keep going", 4))
    status = engine.get_status()
    assert status["degradation"]["reason"] is None and status["latest_handoff"]["status"] == "ready"
    short = status["latest_handoff"]["short_id"]
    block = _block(out)
    assert f"Call baton_resume with ref {short} to read it." in block["content"]


@pytest.mark.parametrize("garbage", [None, [], [{"bad": 1}], [{"role": "tool", "content": "orphan"}], "text"])
def test_compress_never_raises_on_garbage(project: Path, garbage: Any) -> None:
    engine = _engine(project)
    out = engine.compress(garbage)
    assert isinstance(out, list)


def test_a_bug_in_the_cycle_is_caught_at_the_host_boundary(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The core raises its bugs; compress() (Hermes' call) turns one into the degraded, pair-safe list."""
    from baton_engine.compaction import builder

    def bug(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a bug in the tail plan")

    monkeypatch.setattr(builder, "_build", bug)
    engine = _engine(project)
    messages = _conversation("Harden the uploader", 8) + [{"role": "user", "content": "and now the retries"}]
    out = engine.compress(messages)
    status = engine.get_status()
    assert status["degradation"]["reason"] == "internal_error"
    assert status["degradation"]["detail"] == "internal error: RuntimeError"
    assert out[-1] == {"role": "user", "content": "and now the retries"}
    assert len(out) < len(messages) and all(isinstance(m, dict) for m in out)


class HostileDict(dict):
    """A message whose every read raises: no host sends one, compress() must still answer Hermes with a list."""

    def get(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("boom")


def test_a_hostile_message_never_raises_into_hermes(project: Path) -> None:
    engine = _engine(project)
    messages = [{"role": "user", "content": "Harden the uploader"}, HostileDict(role="user", content="x")]
    out = engine.compress(messages)
    assert isinstance(out, list) and out


def test_captured_items_survive_later_compactions(project: Path) -> None:
    engine = _engine(project)
    messages = _conversation("Harden the uploader", 2)
    engine.handle_tool_call("baton_capture", {"kind": "decision", "item": {"decision": "retry with backoff"}},
                            messages=messages)
    first = engine.compress(messages)
    engine.compress(first + _tool_round(50) + [{"role": "user", "content": "go on"}])  # nothing captured here
    second = json.loads(engine.handle_tool_call(
        "baton_capture", {"kind": "decision", "item": {"decision": "cap uploads at 1 GB"}}, messages=messages))
    assert second["item"]["id"] == "D-002", "the session draft continues the previous handoff's numbering"
    engine.compress(first + _tool_round(60) + [{"role": "user", "content": "finish"}])
    by_id = {r["id"]: r for r in _records(project)}
    latest = by_id[engine.get_status()["latest_handoff"]["id"]]
    assert [d["decision"] for d in latest["decisions"]] == ["retry with backoff", "cap uploads at 1 GB"]
    chain, node = [], latest
    while node["lineage"]["parents"]:
        chain.append(node["lineage"]["relation"])
        node = by_id[node["lineage"]["parents"][0]]
    assert chain == ["continue", "continue"] and engine.compression_count == 3


def test_one_compaction_reads_git_once(project: Path, qwen3_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Capture, validation and freshness share one read of git: `status --porcelain=v2` + `remote -v`."""
    from baton_engine.handoff import gitinfo

    asked: list[str] = []
    real = gitinfo.run_git

    def counted(root: Path, *args: str, **kwargs: Any) -> str | None:
        asked.append(args[0])
        return real(root, *args, **kwargs)

    monkeypatch.setattr(gitinfo, "run_git", counted)
    engine = _engine(project)
    out = engine.compress(_conversation("Refactor the app.", 6))
    assert _block(out) and engine.compaction.degradation_reason is None
    assert asked == ["status", "remote"]
    record = _records(project)[-1]
    assert record["project"]["repository"]["head"] == git(project, "rev-parse", "HEAD")
    assert record["project"]["repository"]["dirty"] is False and record["status"] == "ready"


def test_one_compaction_redacts_its_record_once(project: Path, qwen3_env: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The new handoff is redacted once (by capture, before its content id is set); validation and the save
    trust it and never scan it again. The session draft it folds is a record of its own: archiving it scans
    it once. (``contains_secret`` and validation both scan through ``redact_record``.)"""
    from baton_engine.handoff import redact

    scans: list[str] = []
    real = redact.redact_record

    def redact_record(data: Any, *args: Any, **kwargs: Any) -> Any:
        scans.append(str(data.get("id")))
        return real(data, *args, **kwargs)

    engine = _engine(project)
    messages = _conversation("Refactor the app.", 6)
    assert json.loads(engine.handle_tool_call(
        "baton_capture", {"kind": "decision", "decision": f"keep {SECRET_SAMPLE.text} out of logs"}, messages=messages))["ok"]
    draft_id = engine.compaction.session_draft_id
    monkeypatch.setattr(redact, "redact_record", redact_record)
    engine.compress(messages)
    handoff_id = engine.compaction.last_handoff["id"]
    assert engine.compaction.degradation_reason is None and handoff_id != draft_id
    assert len(scans) == 2 and scans.count(draft_id) == 1 and handoff_id not in scans, scans
    stored = next(r for r in _records(project) if r["id"] == handoff_id)
    assert not any(secret in json.dumps(_records(project)) for secret in SECRET_SAMPLE.secrets)
    assert "[REDACTED:" in json.dumps(stored["decisions"])


def test_messages_counted_before_a_compaction_are_not_scanned_again(project: Path, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    """The pre-API estimate scans each new message for the next compaction; the compaction then scans none of
    them itself. A failing scan ahead never costs the exact estimate (guarded apart at the host's boundary; the
    compaction scans what is missing)."""
    from baton_engine.compaction import scan

    scan.clear()
    engine = _engine(project, fresh_tail_tokens=200)
    messages = _conversation("Refactor the app.", 6)
    estimators = ExactEstimators()  # Hermes' pre-API estimate, as the plugin's patch answers it
    for end in range(1, len(messages) + 1):  # one more message per request, as the loop sends them
        in_agent(LoopAgent(engine), estimators._count, messages[:end])
    engine.compress(copy.deepcopy(messages))
    figures = engine.get_status()["last_compaction_scan"]
    assert figures["region_messages"] >= 4 and figures["scanned_at_compaction"] == 0, figures

    scan.clear()
    other = _engine(project, fresh_tail_tokens=200)
    monkeypatch.setattr(scan, "observe", lambda *_: (_ for _ in ()).throw(RuntimeError("boom")))
    assert in_agent(LoopAgent(other), estimators._count, messages) == other.count_estimate(messages).tokens
    other.compress(copy.deepcopy(messages))
    figures = other.get_status()["last_compaction_scan"]
    assert other.compaction.degradation_reason is None and figures["scanned_at_compaction"] == figures["messages"] == len(messages)
