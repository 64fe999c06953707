"""The REAL Hermes loop judged by a REAL llama-server: llama.cpp renders, counts and refuses, never Baton's renderer.

The real ``AIAgent`` (Hermes 0.19, ``driver.py`` in a subprocess) reads design files of ~12k Qwen3 tokens each with
its own ``read_file`` tool, through a slot of 65,536 tokens (``-c 131072 --parallel 2``: Hermes 0.19 needs at least
64,000), compacting on the way. Every request Hermes sends is also sent to the real llama-server
(``LlamaOracle``), whose ``usage.prompt_tokens`` is what Hermes is told and whose refusals are the answer; Baton
counts with the llamacpp backend against the same server. Baton's count of each main request comes from its
``baton output budget`` line in Hermes' ``agent.log``: it must equal the server's, request by request.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from batontest.hermes_run import MODEL, require_hermes
from batontest.llama_oracle import LlamaOracle
from batontest.reading import FINAL_ANSWER, TURNS, files_never_seen, reading_script, request_map, run_reading
from batontest.real_llama import real_llama_server
from batontest.vllm_oracle import baton_budget_lines

# a real Hermes loop against a real llama-server generating on the CPU: 314 s at load 18 (over the 300 s default)
pytestmark = [pytest.mark.llama_real, pytest.mark.timeout(900)]

CTX, PARALLEL = 131_072, 2
WINDOW = CTX // PARALLEL  # the per-slot window Hermes and Baton budget against
FILES = 8  # ~100k tokens of file content through a 65,536-token slot: at least one compaction
SESSION_TIMEOUT_SECONDS = 900


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    require_hermes()
    with real_llama_server(tmp_path_factory.mktemp("oracle-llama"), ctx=CTX, parallel=PARALLEL, alias=MODEL) as url:
        workdir = tmp_path_factory.mktemp("llama-loop")
        with LlamaOracle(reading_script(workdir / "project", FILES), llama_url=url) as server:
            assert server.context_window == WINDOW
            result, home, wall = run_reading(
                workdir, server, files=FILES, context_length=WINDOW, max_tokens=None,
                timeout=SESSION_TIMEOUT_SECONDS,
                baton={"tokenizer": {"backend": "llamacpp", "url": url, "model": MODEL},
                       "auto_checkpoint_on_end": False})
    counted = [prompt for _action, prompt, _source, aux in baton_budget_lines(home) if not aux]
    served = [r.prompt_tokens for r in server.main_requests]
    print(f"\n[llama-loop] main={len(server.main_requests)} aux={len(server.auxiliary_requests)} "
          f"compactions={result['compression_count']} refusals={len(server.rejections)} wall={wall:.1f}s\n"
          f"  (Baton, llama-server) per main request: {list(zip(counted, served, strict=False))}", file=sys.stderr)
    return result, server, counted, served


def test_every_main_request_count_equals_the_servers(session: Any) -> None:
    """0 difference, request by request; no refusal; every file read; Baton counted exactly with llamacpp."""
    result, server, counted, served = session
    assert not server.rejections, [(r.index, r.status, (r.rejection or "")[:160]) for r in server.rejections]
    assert len(counted) == len(served) > FILES
    differing = [(i, baton, llama) for i, (baton, llama) in enumerate(zip(counted, served, strict=True))
                 if baton != llama]
    assert not differing, f"(request, Baton, llama-server) where the counts differ: {differing}"
    missing = files_never_seen(server.main_requests, FILES)
    assert not missing, request_map(server.main_requests, FILES)
    assert [t["final_response"] for t in result["turns"]] == [FINAL_ANSWER] * len(TURNS)
    assert result["compression_count"] >= 1
    tokenizer = result["status"]["tokenizer"]
    assert tokenizer["exact"] is True and tokenizer["fallbacks"] == 0, tokenizer
    assert tokenizer["source"].startswith("llamacpp:"), tokenizer
    window = result["status"]["window"]
    assert window["effective"] == WINDOW, window
