"""OpenTelemetry from the metrics events (the ``otel`` extra): the GenAI conventions' names where they exist,
Baton's own for the rest, read by the SDK's in-memory reader and span exporter; the Prometheus endpoint through
the official exporter on a free port; and without the extra, telemetry off with the reason, the logs unchanged."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (tox env py311 installs it)")

from batontest.hermes_home import initialised_project  # noqa: E402
from batontest.metrics_logs import RETENTION  # noqa: E402
from batontest.otel_memory import Collected, in_memory  # noqa: E402

from baton_engine.metrics import log as metrics_log  # noqa: E402
from baton_engine.metrics import instruments, otel, telemetry  # noqa: E402
from baton_engine.metrics.log import MetricsLog  # noqa: E402
from baton_engine.settings import SettingsError, load_settings  # noqa: E402

HEADER = {"owner": {"platform": "cli", "conversation_id": None}, "model": "qwen3-local", "window": 32768}
ROUTE = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "qwen3-local", "gen_ai.provider.name": "custom"}


def request(log: MetricsLog, prompt: int, **extra: Any) -> int:
    """A main request as the engine emits it (``agent/metrics.request``)."""
    fields = {"prompt": prompt, "mode": "exact", "source": "hf:qwen3", "fallback": None, "window": 32768,
              "window_source": "hermes context_length", "cap_asked": 30000, "cap_sent": 32768 - prompt,
              "action": "lower_cap_to", "short": False, "shortened": False, "breaker": "closed", "ms": 2.5,
              "model": "qwen3-local", "provider": "custom", **extra}
    return log.emit("request", **fields)


def session(log: MetricsLog) -> None:
    """Two requests answered (the second after a calibration), an auxiliary one, a shortened one, a refusal and
    a compaction: every instrument gets a measurement."""
    request(log, 1000)
    log.emit("usage", request=1, reported=1100, output=40, flipped=True,
             route_check={"verdict": "calibrated", "ratio": 1.1, "requests_seen": 1})
    request(log, 1210, mode="calibrated")
    log.emit("usage", request=2, reported=1200, output=60, flipped=False,
             route_check={"verdict": "calibrated", "ratio": 1.1, "requests_seen": 2})
    log.emit("aux_request", prompt=300, mode="exact", source="hf:qwen3", action="leave", short=False,
             shortened=False, ms=1.0, model="title-model", provider=None)
    request(log, 31000, action="needs_compaction", shortened=True, mode="calibrated")
    log.emit("refusal", request=3, kind="window", window=32000, prompt=31500)
    log.emit("compaction", request=3, before=31000, after=6000, mode="calibrated", kept=8, stubbed=2,
             recallable=14, compacted=40, handoff="h-0001", short_id="0001", status="ready",
             validation="ready", degraded=None, brief_tokens=900, ms=120.0)


@pytest.fixture
def collected() -> Iterator[Collected]:
    with in_memory() as found:
        yield found


def test_events_become_the_genai_and_baton_metrics(collected: Collected, tmp_path: Path) -> None:
    log = MetricsLog.start(tmp_path, session_id="s", header=HEADER, retention=RETENTION)
    assert log.path is None  # no project: written nowhere, measured all the same
    session(log)
    usage = instruments.TOKEN_USAGE
    assert collected.value(usage, {**ROUTE, "gen_ai.token.type": "input"}) == 1100 + 1200
    assert collected.value(usage, {**ROUTE, "gen_ai.token.type": "output"}) == 40 + 60
    assert collected.count(instruments.OPERATION_DURATION) == 2  # each answered request once, the third unanswered
    assert 0 <= collected.value(instruments.OPERATION_DURATION, ROUTE) < 5
    # counted vs reported over the same (answered) requests: Baton's 1000 + 1210 against the provider's 2300
    assert collected.value("baton.tokens.counted", ROUTE) == 2210
    assert collected.value("baton.tokens.reported", ROUTE) == 2300
    assert collected.value("baton.calibration.ratio", {"baton.route.verdict": "calibrated"}) == 1.1
    assert collected.value("baton.requests", {"baton.request.kind": "main"}) == 3
    assert collected.value("baton.requests", {"baton.request.kind": "auxiliary",
                                              "gen_ai.request.model": "title-model"}) == 1
    assert collected.value("baton.requests", {"baton.budget.action": "needs_compaction"}) == 1
    assert collected.value("baton.requests.shortened") == 1
    assert collected.value("baton.request.tokens", {"baton.count.mode": "calibrated"}) == 1210 + 31000
    assert collected.value("baton.request.duration") == pytest.approx((2.5 * 3 + 1.0) / 1000)
    assert collected.value("baton.refusals.learned", {"baton.refusal.kind": "window"}) == 1
    assert collected.value("baton.compactions", {"baton.handoff.status": "ready"}) == 1
    assert collected.value("baton.compaction.duration") == pytest.approx(0.12)
    assert collected.value("baton.compaction.tokens", {"baton.compaction.stage": "after"}) == 6000
    # few-valued attributes only: no session, handoff or count in a metric's attributes
    keys = {key for name in ("baton.requests", "baton.compactions", instruments.TOKEN_USAGE)
            for point in collected.points(name) for key in point.attributes}
    assert keys <= {*ROUTE, "gen_ai.token.type", "baton.request.kind", "baton.budget.action", "baton.count.mode",
                    "baton.handoff.status", "baton.degraded"}


def test_the_prompt_cache_and_the_prunes_become_metrics(collected: Collected, tmp_path: Path) -> None:
    """Issue 44: prompt tokens by how the provider read them (sent, from its cache, uncached; a route that does not
    report its cache gives the sent figure only) and the prunes, committed with what they reclaimed, declined by
    reason."""
    log = MetricsLog.start(tmp_path, session_id="s", header=HEADER, retention=RETENTION)
    request(log, 1000)
    log.emit("usage", request=1, reported=1000, output=10, flipped=False, route_check={"verdict": "confirmed"},
             cache_read=768, cache_write=None, uncached=232)
    request(log, 1500)
    log.emit("usage", request=2, reported=1500, output=10, flipped=False, route_check={"verdict": "confirmed"},
             cache_read=None, cache_write=None, uncached=None)
    log.emit("prune", request=2, committed=True, reason="pays", before=20000, after=12000, reclaimed=8000,
             exact=True, messages=3, first_changed=4, net=900)
    log.emit("prune", request=2, committed=False, reason="cache_cost", net=-50)
    assert collected.value("baton.prompt.tokens", {"baton.prompt.part": "sent"}) == 2500
    assert collected.value("baton.prompt.tokens", {"baton.prompt.part": "cache_read"}) == 768
    assert collected.value("baton.prompt.tokens", {"baton.prompt.part": "uncached"}) == 232
    assert collected.value("baton.reclaimed.tokens") == 8000
    assert collected.value("baton.prunes", {"baton.prune.committed": True, "baton.prune.reason": "pays"}) == 1
    assert collected.value("baton.prunes", {"baton.prune.committed": False, "baton.prune.reason": "cache_cost"}) == 1


def test_a_budget_decision_and_a_compaction_are_spans_over_the_time_they_took(collected: Collected,
                                                                               tmp_path: Path) -> None:
    project = initialised_project(tmp_path / "project")
    log = MetricsLog.start(project, session_id="s", header=HEADER, retention=RETENTION)
    session(log)
    log.emit("compaction", request=3, before=31000, after=31000, mode="rough", degraded="not_initialised", ms=3.0)
    spans = collected.finished_spans()
    assert [span.name for span in spans] == ["baton.request.budget"] * 4 + ["baton.compaction"] * 2
    first = spans[0]
    assert (first.end_time - first.start_time) == pytest.approx(2.5e6, abs=1e3)  # the event's ms, in ns
    assert first.attributes["baton.request.prompt"] == 1000 and first.attributes["baton.request.n"] == 1
    assert first.attributes["baton.request.action"] == "lower_cap_to"
    assert first.attributes["baton.request.cap_sent"] == 31768
    assert first.attributes["gen_ai.request.model"] == "qwen3-local"
    assert first.attributes["gen_ai.provider.name"] == "custom"
    assert first.attributes["baton.session"] == log.header["session"]  # the hashed key, never the session id
    assert spans[2].attributes["baton.request.kind"] == "auxiliary"
    ready, degraded = spans[4], spans[5]
    assert ready.attributes["baton.compaction.handoff"] == "h-0001" and ready.status.is_ok
    assert degraded.status.description == "not_initialised" and not degraded.status.is_ok
    # the log on disk is the same story: every event written, in order
    lines = [json.loads(line) for line in Path(log.path).read_text().splitlines()]
    assert [line["ev"] for line in lines][1:] == ["request", "usage", "request", "usage", "aux_request", "request",
                                                  "refusal", "compaction", "compaction"]


def test_a_wrong_typed_field_is_left_out_and_a_failing_sdk_never_reaches_the_agent(
        collected: Collected, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = MetricsLog(header=HEADER)
    log.emit("request", prompt="a lot", mode="exact")  # a wrong type: read as absent, as the report reads it
    assert collected.value("baton.requests") == 1 and collected.points("baton.request.tokens") == []

    class Failing:  # an exporter gone wrong: every measurement and span raises
        def _fail(self, *_: Any, **__: Any) -> Any:
            raise RuntimeError("exporter down")

        add = record = set = start_span = _fail

    class Broken:
        def get_meter(self, *_: Any) -> Any:
            return self

        def get_tracer(self, *_: Any) -> Any:
            return Failing()

        def create_counter(self, *_: Any, **__: Any) -> Any:
            return Failing()

        create_histogram = create_gauge = create_counter

    telemetry.install(otel.OtelSink(Broken(), Broken(), exporter="broken"))
    assert request(log, 10) == 2 and request(log, 10) == 3  # the events go on being numbered (and written)
    telemetry.flush()
    assert [r.message for r in caplog.records].count("baton telemetry dropped an event type=RuntimeError") == 1


def test_a_slow_exporter_never_holds_a_request_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK works on its own thread: with it stuck, ``emit`` returns at once and a full queue drops events
    (counted) rather than wait."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    release = threading.Event()

    class Stuck:
        def get_meter(self, *_: Any) -> Any:
            return MeterProvider().get_meter("stuck")

    monkeypatch.setattr(otel, "QUEUE_EVENTS", 3)
    sink = otel.OtelSink(Stuck(), NoOpTracerProvider(), exporter="stuck")
    entered = threading.Event()
    monkeypatch.setattr(sink, "_measure", lambda *_: (entered.set(), release.wait(30)))
    telemetry.install(sink)
    log = MetricsLog(header=HEADER)
    request(log, 100)
    assert entered.wait(30)  # the worker holds the first event
    started = time.perf_counter()
    for _ in range(9):
        request(log, 100)
    assert time.perf_counter() - started < 1.0
    assert sink.dropped == 9 - 3  # the queue holds 3
    release.set()
    telemetry.flush()
    telemetry.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_prometheus_endpoint_serves_the_metrics_when_a_port_is_set(tmp_path: Path) -> None:
    port = _free_port()
    settings = load_settings(env={"BATON_PROMETHEUS_PORT": str(port)})
    wanted = telemetry.Wanted(settings.telemetry, settings.prometheus_port, settings.prometheus_host)
    try:
        state = telemetry.configure(wanted)
        assert state.state == "on" and state.exporter == f"http://127.0.0.1:{port}/metrics"
        assert telemetry.configure(wanted) is state  # the same settings again: the same endpoint kept
        session(MetricsLog(header=HEADER))
        telemetry.flush()
        with urllib.request.urlopen(state.exporter, timeout=10) as answer:
            page = answer.read().decode()
        assert 'gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="custom",' \
               'gen_ai_request_model="qwen3-local",gen_ai_token_type="input"' in page
        assert "baton_compactions_total" in page and "baton_tokens_reported_total" in page
        assert "baton_calibration_ratio" in page
        # a second process's endpoint on the same port: telemetry off, and status says why
        telemetry.stop()
        with socket.socket() as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the scrape's TIME_WAIT
            taken.bind(("127.0.0.1", port))
            taken.listen()
            busy = telemetry.configure(wanted)
            assert busy.state == "off" and f"cannot listen on 127.0.0.1:{port}" in (busy.why or "")
            assert telemetry.status() == {"state": "off", "why": busy.why}
    finally:
        telemetry.stop()
    with pytest.raises(OSError):  # stopped: nothing listens there any more
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)


def test_the_telemetry_settings_and_their_errors() -> None:
    assert not load_settings(env={}).telemetry
    assert load_settings(env={"BATON_TELEMETRY": "on"}).telemetry is True
    assert load_settings(hermes_block={"telemetry": True, "prometheus_port": 9464}).prometheus_port == 9464
    with pytest.raises(SettingsError, match="BATON_TELEMETRY must be true or false"):
        load_settings(env={"BATON_TELEMETRY": "sometimes"})
    with pytest.raises(SettingsError, match="BATON_PROMETHEUS_PORT must be a TCP port"):
        load_settings(env={"BATON_PROMETHEUS_PORT": "70000"})
    assert telemetry.status() == {"state": "off", "why": "not configured (baton.telemetry, baton.prometheus_port)"}


NO_EXTRA = """
import json, sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
from baton_engine.metrics import log, telemetry
state = telemetry.configure(telemetry.Wanted(telemetry=True, prometheus_port=9464))
metrics = log.MetricsLog(header={"model": "m"})
number = metrics.emit("request", prompt=10)
print(json.dumps({"status": telemetry.status(), "number": number, "otel": "baton_engine.metrics.otel" in sys.modules}))
"""


def test_without_the_extra_nothing_breaks_and_status_says_telemetry_is_off() -> None:
    done = subprocess.run([sys.executable, "-c", NO_EXTRA], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer == {"status": {"state": "off", "why": telemetry.EXTRA_MISSING}, "number": 1, "otel": False}
    assert metrics_log._SINK is None  # nothing left installed in this process either
