"""Reclamation in the REAL loop on Hermes 0.22's interface: the real ``AIAgent`` (``driver.py`` in a subprocess)
reads design files with its own ``read_file`` tool on a 65,536-token window whose compaction trigger the session
never reaches; Hermes' preflight calls ``prune_tool_results_only`` before each request that does not compact, and a
prune commits (answered reads become stubs with their recall ref). Then the scripted model searches for a checksum
only the FIRST file holds (pruned: in none of the messages of the request that asks) and expands the hit: the whole
result comes back. The loopback server refuses every malformed or oversized request: none is refused. Run with
Hermes' session store (recall reads Hermes' own live rows) and without (Baton's in-process index). Hermes 0.19 has
no such hook (``tests/hermes/test_reclaim.py`` says so)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batontest.assets import qwen3_dir
from batontest.hermes_run import WINDOW
from batontest.model_server import recall_steps
from batontest.recall_loop import FINAL_ANSWER, NEEDLE, NEEDLE_LINE, last_tool_answer, recall_call_request, run

from baton_engine.hermes.config import installed_hermes_version
from baton_engine.messages.markers import PRUNED_PREFIX

pytestmark = pytest.mark.hermes


@pytest.mark.parametrize("session_db", [False, True], ids=["memory", "state_db"])
def test_a_prune_commits_in_the_real_loop_and_recall_brings_the_pruned_result_back_whole(tmp_path: Path,
                                                                                        session_db: bool) -> None:
    if (installed_hermes_version() or "0.19").startswith("0.19"):
        pytest.skip("Hermes 0.22's preflight calls the prune hook (0.19 has none)")
    result, server, _project = run(tmp_path, in_place=False, session_db=session_db, files=12, trigger=48_000,
                                   baton={"reclaim_trigger_tokens": 10_000, "reclaim_min_tokens": 2_000,
                                          "tokenizer": {"backend": "hf", "path": str(qwen3_dir())}},
                                   recall=recall_steps(NEEDLE, budget_tokens=6_000))
    main = server.main_requests
    assert not server.rejections, [(r.index, r.rejection) for r in server.rejections]
    assert all((r.prompt_tokens or 0) + (r.max_tokens or r.max_completion_tokens or 0) <= WINDOW for r in main)
    assert result["turns"][0]["final_response"] == FINAL_ANSWER
    assert result["compression_count"] == 0
    reclaim = result["status"]["reclaim"]
    print(f"\n[{session_db=}] main={len(main)} prompts={[r.prompt_tokens for r in main]} reclaim={reclaim}")
    assert reclaim["prunes_committed"] >= 1 and reclaim["reclaimed_tokens"] >= 2_000 and reclaim["reclaimed_exact"]
    pruned_at = next(i for i, r in enumerate(main) if PRUNED_PREFIX in json.dumps(r.messages))
    assert main[pruned_at].prompt_tokens < main[pruned_at - 1].prompt_tokens  # the request shrank, no compaction

    search_at, expand_at = recall_call_request(main, "search"), recall_call_request(main, "expand")
    assert NEEDLE not in json.dumps(main[search_at].messages), "the first file was not pruned"
    found = last_tool_answer({"messages": main[search_at + 1].messages})
    assert found["ok"] is True and found["hits"] and found["hits"][0]["tool_name"] == "read_file", found
    expanded = last_tool_answer({"messages": main[expand_at + 1].messages})
    assert expanded["ok"] is True and expanded["complete"] is True, {k: expanded.get(k) for k in ("ok", "tokens")}
    text = expanded["text"]
    assert NEEDLE_LINE in text and "DESIGN FILE d01 BEGIN" in text and "DESIGN FILE d01 END" in text
