"""Hermes' usage hook reaches the session's metrics: ``update_from_response`` counts the turn (the detector reads it)
and the response's usage lands in the log beside the request it answers.

What the log holds and when (requests, usage, the route's verdict, the tools' figure, an unwritable log) is tested
through a fake host: ``tests/agent_core/test_metrics.py``.
"""

from __future__ import annotations

from pathlib import Path

from batontest.engines import started_engine

from baton_engine.metrics import read

MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Plan the release"},
            {"role": "assistant", "content": "Step one: tag the build. " * 30}, {"role": "user", "content": "Go on"}]


def test_update_from_response_counts_the_turn_and_logs_the_usage(project: Path, qwen3_env: Path) -> None:
    engine = started_engine(project)
    engine.on_request({"model": "qwen3", "messages": MESSAGES, "max_tokens": 250000})
    counted = engine.requests.ledger.memo.tokens
    engine.update_from_response({"prompt_tokens": counted * 2, "completion_tokens": 5})
    data = read.report_data(read.sessions(project / ".baton")[0])
    assert data["requests"][0]["reported"] == counted * 2 and engine.compaction.turns == 1
