"""Every main-loop response confirms the route's counts, also a reply cut at max_tokens (issue 33 item 4).

The real ``AIAgent`` talks to a loopback server whose streamed replies (SSE, a final usage-only chunk: Hermes sends
``stream_options.include_usage``) end with ``finish_reason: "length"`` for several requests; Hermes continues each
one with a new request. The server reports ``prompt_tokens`` at 1.25 times the real count, Baton counts with the
same real tokenizer. Hermes 0.19 passes no cut reply's usage to ``update_from_response`` (it continues before its
usage accounting), so before the ``llm_execution`` middleware the route saw only the last, uncut response. Now every
response is observed once: ``requests_seen`` equals the main requests, and a normal reply, which reaches
``update_from_response`` too, is not counted twice (the control).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batontest.assets import qwen3_dir
from batontest.hermes_run import run_scenario
from batontest.model_server import ModelServer, PromptCounter, Reply, ScriptedPolicy, ToolCall, shared_prompt_counter

pytestmark = pytest.mark.hermes

RATIO = 1.25
CUTS = 3  # below Hermes' 4 continuation retries: the turn still ends with the final answer
BATON = {"tokenizer": {"backend": "hf", "path": str(qwen3_dir())}, "auto_checkpoint_on_end": False}


class ScaledCounter:
    """The real tokenizer's prompt count times ``RATIO`` (replies are counted as they are, through ``backend``)."""

    def __init__(self, real: PromptCounter) -> None:
        self.real, self.backend = real, real.backend

    def __call__(self, body: dict[str, Any]) -> int:
        return round(self.real(body) * RATIO)


class ScaledServer(ModelServer):
    """Counts (and reports) every prompt at ``RATIO`` times the real tokenizer's count."""

    @property
    def count_prompt(self) -> Any:  # type: ignore[override]
        return ScaledCounter(shared_prompt_counter(self.tokenizer_dir))


def verification(tmp_path: Path, steps: list[Reply]) -> tuple[dict[str, Any], ScaledServer]:
    with ScaledServer(ScriptedPolicy(steps, final_answer="Done.")) as server:
        scenario = run_scenario(tmp_path, server, turns=["Write the plan."], baton=BATON, max_tokens=4096)
    assert scenario.result["engine_class"].startswith("baton_engine")
    return scenario.result["status"]["verification"], server


def test_cut_streamed_replies_confirm_the_route(tmp_path: Path) -> None:
    cut = [Reply(content=f"Part {n} of the plan, cut at the output cap", cut=True) for n in range(1, CUTS + 1)]
    check, server = verification(tmp_path, cut)
    main = server.main_requests
    assert all(r.stream for r in main) and [r.reply.cut for r in main] == [True] * CUTS + [False], check
    # every response observed once: the cut ones through the middleware, the last one through it and
    # update_from_response (not twice)
    assert check["requests_seen"] == len(main) == CUTS + 1, check
    assert check["verdict"] == "calibrated" and check["calibrated_after_requests"] == 1, check
    assert check["ratio"] == pytest.approx(RATIO, abs=0.01), check


def test_normal_replies_are_observed_once(tmp_path: Path) -> None:
    todo = [Reply(content=f"Step {n}.", tool_calls=(ToolCall("todo", {"todos": [
        {"id": str(n), "content": f"item {n}", "status": "pending"}]}),)) for n in range(1, 3)]
    check, server = verification(tmp_path, todo)
    assert [r.reply.finish_reason for r in server.main_requests] == ["tool_calls", "tool_calls", "stop"], check
    assert check["requests_seen"] == len(server.main_requests) == 3 and check["mismatches"] == 3, check
    assert check["ratio"] == pytest.approx(RATIO, abs=0.01), check
