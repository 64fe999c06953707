"""The metrics events as OpenTelemetry metrics and spans (the ``otel`` extra; imported only when configured).

Why from the events: the JSONL log and OpenTelemetry tell one story, so each figure has one definition: the
instruments and what each reads are ``instruments.py``'s, every event passes ``fields.checked`` first, and a
span's attributes are its event's scalar fields. Metric attributes stay few-valued (model, provider, kind, action,
mode); a span carries the event's numbers, codes and ids, never prompt text (the events hold none).

Off the request path: ``emit`` hands the event to a queue; one worker thread measures it (a request and its
usage, measured on a 2-core machine at load average 20: the SDK 0.7-1.2 ms, the hand-off about 45 us). Spans keep
their times (the event's own) and their parent (the context current at ``emit``). A full queue drops the event
(counted), never waits. Third-party code (the SDK, its exporters): a failure drops that event's measurements,
logged once, never the agent's request.
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from baton_engine import __version__
from baton_engine.metrics.fields import Skipped, checked
from baton_engine.metrics.instruments import (
    ATTRIBUTES,
    CALIBRATION,
    CALIBRATION_KEY,
    COUNTED,
    DURATION,
    OPERATION_NAME,
    PAIRED,
    PROVIDER_NAME,
    READINGS,
    REQUEST_MODEL,
    SPANS,
    Instrument,
)

LOGGER = logging.getLogger("baton_engine.metrics")
SCOPE = "baton_engine"
QUEUE_EVENTS = 10_000  # events waiting for the worker (a few MB at most); beyond it they are dropped, counted


@dataclass
class _Answered:
    """The last main request of a log: the usage that answers it (once), and the route of what follows it."""

    number: int
    seconds: float
    prompt: int | None
    route: dict[str, Any]  # the GenAI attributes: operation, model, provider
    open: bool = True  # no usage answered it yet


class OtelSink:
    """The metrics log's sink (``log.set_sink``): each event's measurements and span."""

    def __init__(self, meter_provider: Any, tracer_provider: Any, *, exporter: str,
                 close: Callable[[], None] | None = None) -> None:
        self.exporter = exporter  # where the measurements go (status)
        self._close = close
        meter = meter_provider.get_meter(SCOPE, __version__)
        self.tracer = tracer_provider.get_tracer(SCOPE, __version__)
        self.instruments = {item.name: _create(meter, item) for item in (*{r.instrument for r in READINGS},
                                                                          *PAIRED, CALIBRATION)}
        self._answered: weakref.WeakKeyDictionary[Any, _Answered] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._warned = False
        self.dropped = 0  # events the full queue turned away
        self._queue: queue.Queue[tuple[Any, dict[str, Any], Any] | None] = queue.Queue(QUEUE_EVENTS)
        self._worker = threading.Thread(target=self._work, name="baton-telemetry", daemon=True)
        self._worker.start()

    @classmethod
    def start(cls, prometheus_port: int | None, prometheus_host: str) -> OtelSink:
        """The global providers (the process configures the SDK and exporters), or, with a port, a provider of
        Baton's own whose metrics the official Prometheus exporter serves there (spans still go to the global
        tracer provider). Raises OSError when the port cannot be bound."""
        if prometheus_port is None:
            return cls(otel_metrics.get_meter_provider(), otel_trace.get_tracer_provider(),
                       exporter="the OpenTelemetry API's global providers")
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from prometheus_client import CollectorRegistry, start_http_server

        registry = CollectorRegistry()  # Baton's own: nothing else of the process is served, nothing clashes
        reader = PrometheusMetricReader(registry=registry)
        resource = Resource.create()
        if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: "baton"}))
        provider = MeterProvider(metric_readers=[reader], resource=resource)
        try:
            server, thread = start_http_server(prometheus_port, addr=prometheus_host, registry=registry)
        except OSError:
            provider.shutdown()
            raise

        def close() -> None:
            server.shutdown()
            server.server_close()
            thread.join(5)
            provider.shutdown()

        return cls(provider, otel_trace.get_tracer_provider(), close=close,
                   exporter=f"http://{prometheus_host}:{server.server_port}/metrics")

    def close(self) -> None:
        """The queued events measured, the worker stopped, the exporter closed."""
        self._queue.put(None)
        self._worker.join(10)
        if self._close is not None:
            self._close()

    def flush(self) -> None:
        """Wait until every event handed over so far is measured (a test, a scrape right after)."""
        self._queue.join()

    def __call__(self, log: Any, record: dict[str, Any]) -> None:
        """Hand the event to the worker with the current context (a span's parent); never waits."""
        try:
            self._queue.put_nowait((log, record, otel_context.get_current()))
        except queue.Full:
            self.dropped += 1

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._guarded(*item)
            finally:
                self._queue.task_done()

    def _guarded(self, log: Any, record: dict[str, Any], parent: Any) -> None:
        try:
            self._measure(log, record, parent)
        # OpenTelemetry's SDK, its exporters and readers are third-party code, called from inside Hermes' agent
        # loop: a failure drops this event's measurements, never the request
        except Exception as exc:  # noqa: BLE001
            if not self._warned:
                self._warned = True
                LOGGER.warning("baton telemetry dropped an event type=%s", type(exc).__name__)

    def _measure(self, log: Any, record: dict[str, Any], parent: Any) -> None:
        event = checked(record, Skipped())
        if event is None or event["ev"] == "session":
            return
        kind = event["ev"]
        with self._lock:
            answered = self._answered.get(log)
        attributes = self._attributes(log, kind, event, answered)
        for reading in READINGS:
            if reading.event != kind or (reading.only_if is not None and not event.get(reading.only_if)):
                continue
            value = 1 if reading.field is None else event.get(reading.field)
            if value is not None:
                self._record(reading.instrument, value * reading.scale, {**attributes, **dict(reading.fixed)})
        if kind == "request":
            route = {key: attributes[key] for key in (OPERATION_NAME, REQUEST_MODEL, PROVIDER_NAME)
                     if key in attributes}
            with self._lock:
                self._answered[log] = _Answered(event["n"], event["t"], event.get("prompt"), route)
        elif kind == "usage":
            self._usage(event, attributes, answered)
        if kind in SPANS:
            self._span(log, kind, event, attributes, parent)

    def _attributes(self, log: Any, kind: str, event: dict[str, Any], answered: _Answered | None) -> dict[str, Any]:
        """The metric attributes: a request's own (its model, else the session's), any other event's the last main
        request's route (else the session's model), and the event's own few-valued fields."""
        if kind in ("request", "aux_request"):
            model = event.get("model") or (None if kind == "aux_request" else _header_model(log))
            base = {OPERATION_NAME: "chat", REQUEST_MODEL: model,
                    "baton.request.kind": "auxiliary" if kind == "aux_request" else "main"}
        else:
            base = dict(answered.route) if answered is not None else {REQUEST_MODEL: _header_model(log)}
        own = {name: event.get(field) for field, name in ATTRIBUTES.get(kind, {}).items()}
        return {key: value for key, value in {**base, **own}.items() if value is not None}

    def _usage(self, event: dict[str, Any], attributes: dict[str, Any], answered: _Answered | None) -> None:
        """The usage answers the log's last main request when its number says so (once): the operation's
        duration and Baton's count of that request beside the provider's; the route's calibration as it stands."""
        with self._lock:
            answers = answered is not None and answered.open and answered.number == event.get("request")
            if answers:
                answered.open = False  # a second report of the same request is not counted twice
        if answers and answered is not None and event.get("reported") is not None:
            self._record(DURATION, max(0.0, event["t"] - answered.seconds), attributes)
            if answered.prompt is not None:
                self._record(COUNTED, answered.prompt, attributes)
        check = event.get("route_check") or {}
        ratio = check.get(CALIBRATION_KEY)
        if ratio is not None:
            verdict = check.get("verdict")
            self._record(CALIBRATION, ratio, {**attributes, **({"baton.route.verdict": verdict} if verdict else {})})

    def _record(self, instrument: Instrument, value: float, attributes: dict[str, Any]) -> None:
        target = self.instruments[instrument.name]
        if instrument.kind == "counter":
            target.add(value, attributes)
        elif instrument.kind == "gauge":
            target.set(value, attributes)
        else:
            target.record(value, attributes)

    def _span(self, log: Any, kind: str, event: dict[str, Any], measured: dict[str, Any], parent: Any) -> None:
        """The event as a span over the time it measured (its ``ms`` before its ``t``): its scalar fields as
        ``<prefix>.<field>``, the metric attributes (model, provider, kind, ...), the session's hashed key."""
        end = int(event["t"] * 1e9)
        start = end - int((event.get("ms") or 0) * 1e6)
        name, prefix = SPANS[kind]
        attributes = {f"{prefix}.{field}": value for field, value in event.items()
                      if field not in ("ev", "t", "model", "provider") and isinstance(value, (bool, int, float, str))}
        attributes.update(measured)
        attributes["baton.session"] = log.header.get("session")
        span = self.tracer.start_span(name, context=parent, start_time=start, kind=SpanKind.INTERNAL,
                                      attributes={k: v for k, v in attributes.items() if v is not None})
        if event.get("degraded"):
            span.set_status(Status(StatusCode.ERROR, str(event["degraded"])))
        span.end(end_time=end)


def _header_model(log: Any) -> str | None:
    model = getattr(log, "header", {}).get("model")
    return model if isinstance(model, str) else None


def _create(meter: Any, instrument: Instrument) -> Any:
    if instrument.kind == "counter":
        return meter.create_counter(instrument.name, unit=instrument.unit, description=instrument.description)
    if instrument.kind == "gauge":
        return meter.create_gauge(instrument.name, unit=instrument.unit, description=instrument.description)
    return meter.create_histogram(instrument.name, unit=instrument.unit, description=instrument.description,
                                  explicit_bucket_boundaries_advisory=list(instrument.buckets or ()))

