"""The real engine's metrics events as OpenTelemetry (the ``otel`` extra), read by the SDK's in-memory reader and
span exporter: the figures are the engine's own (its count, the provider's usage, the compaction it made), and
status says whether telemetry is on and where it goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (tox env hermes installs it)")

from batontest.engines import started_engine  # noqa: E402
from batontest.otel_memory import in_memory  # noqa: E402

from baton_engine.metrics import telemetry  # noqa: E402

pytestmark = pytest.mark.hermes
MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Plan the release"},
            {"role": "assistant", "content": "Step one: tag the build. " * 30}, {"role": "user", "content": "Go on"}]
ROUTE = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "qwen3"}


def _conversation(rounds: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Port the parser"}]
    for index in range(rounds):
        messages += [{"role": "assistant", "content": f"Step {index}: reading src/app.py. " + "word " * 300},
                     {"role": "user", "content": f"continue {index}"}]
    return messages


def test_the_engines_requests_usage_and_compaction_as_metrics_and_spans(project: Path, qwen3_env: Path) -> None:
    with in_memory() as collected:
        engine = started_engine(project)
        engine.on_request({"model": "qwen3", "messages": MESSAGES, "max_tokens": 250000})
        counted = engine.requests.ledger.memo.tokens
        engine.update_from_response({"prompt_tokens": counted + 7, "completion_tokens": 42})
        engine.on_request({"model": "qwen3", "messages": MESSAGES, "max_tokens": 250000})
        compacted = engine.compress(_conversation(12), current_tokens=50_000)
        status = engine.get_status()
    assert collected.value("gen_ai.client.token.usage", {**ROUTE, "gen_ai.token.type": "input"}) == counted + 7
    assert collected.value("gen_ai.client.token.usage", {**ROUTE, "gen_ai.token.type": "output"}) == 42
    assert collected.count("gen_ai.client.operation.duration") == 1  # the second request is not answered yet
    assert collected.value("baton.tokens.counted", ROUTE) == counted  # the engine's exact count of that request
    assert collected.value("baton.tokens.reported", ROUTE) == counted + 7
    assert collected.value("baton.requests", {"baton.budget.action": "lower_cap_to",
                                              "baton.count.mode": "exact"}) >= 1
    assert collected.value("baton.requests") == 2
    assert collected.value("baton.compactions", {"baton.handoff.status": "ready"}) == 1
    assert engine.compaction.last_handoff is not None and compacted[0]["content"].startswith("[Baton handoff")
    spans = collected.finished_spans()
    assert [span.name for span in spans] == ["baton.request.budget"] * 2 + ["baton.compaction"]
    compaction = spans[-1]
    assert compaction.attributes["baton.compaction.handoff"] == engine.compaction.last_handoff["id"]
    logged = [json.loads(line) for line in Path(engine.requests.metrics.path).read_text().splitlines()]
    event = next(line for line in logged if line["ev"] == "compaction")  # the log and the span: one story
    assert (compaction.attributes["baton.compaction.before"], compaction.attributes["baton.compaction.after"]) == (
        event["before"], event["after"])
    assert collected.value("baton.compaction.tokens", {"baton.compaction.stage": "after"}) == event["after"]
    # no prompt text in any span: every string attribute is a code, an id or a name
    texts = [value for span in spans for value in span.attributes.values() if isinstance(value, str)]
    assert texts and not [text for text in texts if "release" in text or "word" in text or len(text) > 80]
    assert status["telemetry"] == {"state": "on", "exporter": "in-memory"}


def test_status_says_telemetry_is_off_and_why(project: Path, qwen3_env: Path) -> None:
    assert started_engine(project).get_status()["telemetry"] == {
        "state": "off", "why": "not configured (baton.telemetry, baton.prometheus_port)"}


NO_EXTRA = """
import json, sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
from pathlib import Path
import baton_engine.hermes  # sets the runtime's default factory (host_runtime), as importing the engine does
from baton_engine.agent.runtime import get_runtime
from batontest.engines import started_engine
get_runtime()  # as an engine outside the plugin starts: telemetry as the settings ask (BATON_TELEMETRY=on)
engine = started_engine(Path(sys.argv[1]))
rewritten = engine.on_request({"model": "qwen3", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 250000})
engine.update_from_response({"prompt_tokens": 12, "completion_tokens": 3})
lines = (Path(engine.requests.metrics.path).read_text().splitlines())
print(json.dumps({"telemetry": engine.get_status()["telemetry"], "cap": rewritten["max_tokens"],
                  "events": [json.loads(line)["ev"] for line in lines]}))
"""


def test_without_the_extra_the_engine_runs_and_status_says_telemetry_is_off(project: Path, qwen3_env: Path) -> None:
    tests = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", NO_EXTRA, str(project)], capture_output=True, text=True,
                          timeout=300, cwd=project,
                          env={**os.environ, "BATON_TELEMETRY": "on", "PYTHONPATH": str(tests)})
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["telemetry"] == {"state": "off", "why": telemetry.EXTRA_MISSING}
    assert answer["cap"] < 250000 and answer["events"] == ["session", "request", "usage"]
