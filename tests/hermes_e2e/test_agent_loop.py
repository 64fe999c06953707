"""The REAL Hermes agent loop (hermes-agent 0.19.0 ``AIAgent``) with Baton as its context engine.

A scripted model on a loopback server drives a long tool-heavy conversation whose real prompt
sizes (Qwen3 counts) force several compactions. Every request Hermes sent is checked the way a
strict provider checks it, every handoff file against the published schema, and every byte
under ``.baton/`` for the planted credentials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from batontest.assets import qwen3_dir
from batontest.hermes_run import WINDOW, Scenario, run_scenario
from batontest.model_server import ModelServer, ScriptedPolicy, tool_heavy_script
from batontest.secrets_corpus import SAMPLES_BY_NAME
from batontest.vllm_standin import VllmStandin

from .conftest import TRANSCRIPT_LINE, transcript_keys

pytestmark = pytest.mark.hermes

PLANTED = (SAMPLES_BY_NAME["openai_project"], SAMPLES_BY_NAME["anthropic"], SAMPLES_BY_NAME["github_classic_pat"])
TURNS = ("Analyse the inventory service findings round by round and keep the task list current.",
         "Thanks. Summarise what is left to do.")
# Real prompts here grow by ~2,100 tokens per round from ~2,000; 18,000 compacts every few rounds and is above
# this frame's floor (~16.6k: docs/compaction.md), so it is used as set. The first turn's rounds need more
# compactions than Hermes 0.22 allows per turn before a response re-arms its budget (``max_attempts``, 3).
ROUNDS = 32
THRESHOLD = 18_000
HOST_COMPACTIONS_PER_TURN = 3
FINAL_ANSWER = "Done: every round is recorded in the task list."


def baton_block(tokenizer: dict[str, Any]) -> dict[str, Any]:
    return {"tokenizer": tokenizer, "fallback_token_threshold": THRESHOLD, "auto_checkpoint_on_end": False}


def script() -> ScriptedPolicy:
    steps = tool_heavy_script(ROUNDS, planted=[sample.text for sample in PLANTED], capture_every=4)
    return ScriptedPolicy(steps, final_answer=FINAL_ANSWER)


def assert_baton_compacted(run: Scenario, server: ModelServer, validator: jsonschema.Draft7Validator) -> None:
    result = run.result
    # Baton was the engine and Hermes' built-in compressor never ran (nor was even built).
    assert result["engine_class"] == "baton_engine.hermes.engine.BatonContextEngine"
    assert result["builtin_compressor_calls"] == {"compress": 0, "_generate_summary": 0, "__init__": 0}
    assert not [r for r in server.auxiliary_requests if "summar" in json.dumps(r.messages).lower()]

    # More compactions than Hermes 0.22 allows per turn (its budget is re-armed after each one: without that the
    # 4th waits for the next turn and the requests pass the bound below), one valid handoff file per compaction.
    compactions = result["compression_count"]
    assert compactions > HOST_COMPACTIONS_PER_TURN, result["status"].get("last_decision")
    records = run.handoffs()
    pre_compaction = [r for r in records if (r.get("automation") or {}).get("trigger") == "pre_compaction"]
    assert len(pre_compaction) == compactions
    for path, record in zip(run.handoff_files, records, strict=True):
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(record)]
        assert not errors, (path.name, errors)
        assert not transcript_keys(record), path.name
    # Each compaction continues the previous one: one lineage chain from a single root through all of them.
    chain = lineage_chain(records)
    assert len(chain) == compactions
    assert all(r["lineage"]["relation"] == "continue" for r in chain[1:])

    # Every request was one a strict server accepts: within the window, no orphan tool messages.
    assert not server.rejections, [r.rejection for r in server.rejections]
    for request in server.main_requests:
        assert request.prompt_tokens is not None
        assert request.max_tokens is not None and request.max_tokens < WINDOW  # the 65,536 default was clamped
        assert request.prompt_tokens + request.output_budget <= WINDOW
    # Compaction really shrank what the model saw (prompt sizes drop after each cycle).
    sizes = [r.prompt_tokens or 0 for r in server.main_requests]
    assert sum(1 for before, after in zip(sizes, sizes[1:], strict=False) if after < before) >= 3
    assert max(sizes) < THRESHOLD + 4_000  # every compaction came when due, in a turn of more than three too

    # The conversation completed: both turns got the model's final answer.
    assert [t["final_response"] for t in result["turns"]] == [FINAL_ANSWER] * 2
    assert all(t["completed"] for t in result["turns"])

    # The planted credentials reached the model in tool results, and never any byte under .baton/.
    sent = "\n".join(server.iter_payload_text())
    assert all(secret in sent for sample in PLANTED for secret in sample.secrets)
    tool_results = "\n".join(str(m.get("content")) for r in server.main_requests for m in r.messages
                             if m.get("role") == "tool")
    assert any(secret in tool_results for sample in PLANTED for secret in sample.secrets)
    files = run.baton_bytes()
    assert files
    for path, data in files:
        for sample in PLANTED:
            for secret in sample.secrets:
                assert secret.encode() not in data, (path.name, sample.name)
        if path.suffix == ".json":
            assert not TRANSCRIPT_LINE.search(data.decode("utf-8", "replace")), path.name  # no tool payload copied


def lineage_chain(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pre-compaction handoffs in lineage order: the root, then each one's continuation."""
    handoffs = [r for r in records if (r.get("automation") or {}).get("trigger") == "pre_compaction"]
    chain = [next(r for r in handoffs if not r["lineage"]["parents"])]
    while child := next((r for r in handoffs if chain[-1]["id"] in r["lineage"]["parents"]), None):
        chain.append(child)
    return chain


@dataclass
class Finished:
    """A scenario run once per module and the server that recorded it (several tests read it)."""

    run: Scenario
    server: ModelServer


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    with ModelServer(script(), context_window=WINDOW) as server:
        run = run_scenario(tmp_path_factory.mktemp("hf"), server, turns=TURNS,
                           baton=baton_block({"backend": "hf", "path": str(qwen3_dir())}))
    return Finished(run, server)


def test_three_plus_compactions_with_exact_hf_counts(hf_run: Finished,
                                                      reference_validator: jsonschema.Draft7Validator) -> None:
    run = hf_run.run
    assert_baton_compacted(run, hf_run.server, reference_validator)
    tokenizer = run.result["status"]["tokenizer"]
    assert tokenizer["source"].startswith("hf:") and tokenizer["exact"] and tokenizer["fallbacks"] == 0
    # The latest handoff is what the status reports, and its file exists.
    assert (run.project / run.result["status"]["latest_handoff_path"]).is_file()


def test_hermes_shows_batons_compaction_line_not_its_own(hf_run: Finished) -> None:
    """Hermes 0.22 asks the engine for the line it shows per automatic compaction: the user sees Baton's (the
    exact size, recall, the previous handoff's id and tokens before -> after), never "summarizing"."""
    result = hf_run.run.result
    if not result["host_asks_compaction_line"]:
        pytest.skip("this Hermes (0.19) has no get_automatic_compaction_status_message hook")
    statuses = result["statuses"]
    assert not [s for s in statuses if "Compacting context" in s or "summariz" in s.lower()], statuses
    assert not [s for s in statuses if "compression is currently blocked" in s], statuses  # below the trigger
    lines = [s for s in statuses if s.startswith("Baton handoff at ")]
    assert len(lines) == result["compression_count"] >= 3, statuses
    chain = lineage_chain(hf_run.run.handoffs())
    for line, previous in zip(lines[1:], chain, strict=False):
        short_id = previous["id"].replace("-", "")[-8:]
        assert f"last handoff {short_id}: " in line and " -> " in line and "baton_recall" in line, line


def test_captured_decisions_survive_later_compactions(hf_run: Finished) -> None:
    """Items recorded with baton_capture stay in every later handoff (the lost-task-state complaint)."""
    records = lineage_chain(hf_run.run.handoffs())
    first_with_decision = next(i for i, r in enumerate(records) if r["decisions"])
    assert first_with_decision < len(records) - 1  # at least one later compaction to carry it through
    first = {d["decision"] for d in records[first_with_decision]["decisions"]}
    assert all(first <= {d["decision"] for d in r["decisions"]} for r in records[first_with_decision:])


def test_three_plus_compactions_counting_through_vllm_tokenize(
        tmp_path: Path, reference_validator: jsonschema.Draft7Validator) -> None:
    with VllmStandin(max_model_len=WINDOW) as standin, ModelServer(script(), context_window=WINDOW) as server:
        tokenizer = {"backend": "vllm", "url": standin.url, "model": standin.model_name}
        run = run_scenario(tmp_path, server, turns=TURNS, baton=baton_block(tokenizer))
        tokenize_calls = standin.requests_received["/tokenize"]
    assert_baton_compacted(run, server, reference_validator)
    status = run.result["status"]["tokenizer"]
    assert status["source"].startswith("vllm") and status["exact"] and status["fallbacks"] == 0
    assert tokenize_calls >= len(server.main_requests)  # budgets really came from the server's /tokenize


def test_uninitialised_project_degrades_and_still_completes(tmp_path: Path) -> None:
    with ModelServer(script(), context_window=WINDOW) as server:
        run = run_scenario(tmp_path, server, turns=TURNS, init=False,
                         baton=baton_block({"backend": "hf", "path": str(qwen3_dir())}))
    result = run.result
    assert result["engine_class"] == "baton_engine.hermes.engine.BatonContextEngine"
    assert result["builtin_compressor_calls"] == {"compress": 0, "_generate_summary": 0, "__init__": 0}
    assert not (run.project / ".baton").exists()  # nothing written without `baton init`
    degradation = result["status"]["degradation"]
    assert degradation["reason"] == "not_initialised" and "baton init" in degradation["detail"]
    assert degradation["count"] >= 3 and result["compression_count"] == 0  # no handoff, no handoff count
    # Degraded compactions still kept every request valid and within the window, and shrank it.
    assert not server.rejections, [r.rejection for r in server.rejections]
    assert all(r.prompt_tokens is not None and r.prompt_tokens + r.output_budget <= WINDOW
               for r in server.main_requests)
    sizes = [r.prompt_tokens or 0 for r in server.main_requests]
    assert sum(1 for before, after in zip(sizes, sizes[1:], strict=False) if after < before) >= 3
    assert [t["final_response"] for t in result["turns"]] == [FINAL_ANSWER] * 2
    # The model is told why earlier turns are gone, once per request (notes replace, never stack).
    last_request = "\n".join(str(m.get("content")) for m in server.main_requests[-1].messages)
    assert last_request.count("Earlier turns were dropped because Baton is not initialised") == 1
    # The operator gets the one-time `baton init` advice, once for the whole session.
    log = (run.home / "logs" / "agent.log").read_text(encoding="utf-8")
    assert log.count("Baton is not initialised for this project: run `baton init`") == 1


def test_control_builtin_compressor_is_detected(tmp_path: Path) -> None:
    """The harness can see the built-in compressor: with ``context.engine: compressor`` and inflated
    usage, the same driver reports its compress() calls (so the zero counts above are meaningful)."""
    with ModelServer(ScriptedPolicy(tool_heavy_script(3)), context_window=WINDOW, prompt_inflation=55_000) as server:
        run = run_scenario(tmp_path, server, turns=TURNS[:1], engine="compressor", max_tokens=4096)
    assert run.result["engine_class"] == "agent.context_compressor.ContextCompressor"
    assert run.result["builtin_compressor_calls"]["compress"] >= 1
