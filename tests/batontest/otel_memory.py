"""OpenTelemetry's SDK in memory (``InMemoryMetricReader``, ``InMemorySpanExporter``) as Baton's telemetry sink,
and the points and spans it collected, for the telemetry tests (needs the ``otel`` extra)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from baton_engine.metrics import telemetry
from baton_engine.metrics.otel import OtelSink


@dataclass
class Collected:
    reader: InMemoryMetricReader
    spans: InMemorySpanExporter
    sink: OtelSink

    def points(self, name: str) -> list[Any]:
        """Every data point of metric ``name`` (each with its ``attributes``), once every event is measured."""
        self.sink.flush()
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                found += [point for metric in scope.metrics if metric.name == name
                          for point in metric.data.data_points]
        return found

    def value(self, name: str, where: dict[str, Any] | None = None) -> float:
        """The sum of ``name``'s points whose attributes include ``where`` (a histogram's sum, a counter's value,
        a gauge's last value)."""
        total = 0.0
        for point in self.points(name):
            if all(point.attributes.get(key) == value for key, value in (where or {}).items()):
                total += point.sum if isinstance(point, HistogramDataPoint) else point.value
        return total

    def finished_spans(self) -> list[Any]:
        self.sink.flush()
        return list(self.spans.get_finished_spans())

    def count(self, name: str) -> int:
        return sum(getattr(point, "count", 1) for point in self.points(name))


@contextmanager
def in_memory() -> Iterator[Collected]:
    """Baton's telemetry into an in-memory reader and span exporter for the block, off again after it."""
    reader, spans = InMemoryMetricReader(), InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(metric_readers=[reader])
    sink = OtelSink(meter_provider, tracer_provider, exporter="in-memory")
    telemetry.install(sink)
    try:
        yield Collected(reader, spans, sink)
    finally:
        telemetry.stop()
        meter_provider.shutdown()
        tracer_provider.shutdown()
