"""Whether the metrics events also go to OpenTelemetry, and why not: the one switch the host turns at start-up.

Why apart from the sink (``otel.py``): OpenTelemetry is an extra (``pip install 'baton-engine[otel]'``). This
module imports none of it; ``otel.py`` is imported only when the settings ask for telemetry, and a process without
the extra goes on with its JSONL logs, telemetry off and the reason in status.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass
from typing import Any

from baton_engine.metrics import log

LOGGER = logging.getLogger("baton_engine.metrics")
EXTRA_MISSING = "the otel extra is not installed: pip install 'baton-engine[otel]'"


@dataclass(frozen=True)
class Wanted:
    """What the settings ask for (``telemetry``, ``prometheus_port``, ``prometheus_host``)."""

    telemetry: bool = False
    prometheus_port: int | None = None
    prometheus_host: str = "127.0.0.1"

    @property
    def on(self) -> bool:
        return self.telemetry or self.prometheus_port is not None


@dataclass(frozen=True)
class State:
    """What status shows: ``on`` or ``off``, why off, where the metrics go."""

    state: str
    why: str | None = None
    exporter: str | None = None  # "global providers" or the Prometheus endpoint's URL


_LOCK = threading.Lock()
_WANTED = Wanted()
_STATE = State("off", "not configured (baton.telemetry, baton.prometheus_port)")
_SINK: Any = None  # the running otel.OtelSink


def configure(wanted: Wanted) -> State:
    """Start, keep or stop telemetry as ``wanted`` says; the same wish again keeps what runs (a gateway's plugin
    may register twice; the Prometheus port stays bound once). Never raises: a failure leaves telemetry off."""
    global _WANTED, _STATE, _SINK
    with _LOCK:
        if wanted == _WANTED and (_SINK is not None or not wanted.on):
            return _STATE
        _stop()
        _WANTED = wanted
        if not wanted.on:
            _STATE = State("off", "not configured (baton.telemetry, baton.prometheus_port)")
            return _STATE
        try:
            from baton_engine.metrics import otel
        except ImportError:
            _STATE = State("off", EXTRA_MISSING)
            LOGGER.warning("baton telemetry off: %s", EXTRA_MISSING)
            return _STATE
        try:
            _SINK = otel.OtelSink.start(wanted.prometheus_port, wanted.prometheus_host)
        except OSError as exc:  # the port is taken or not ours to bind
            _STATE = State("off", f"the Prometheus endpoint cannot listen on {wanted.prometheus_host}:"
                                  f"{wanted.prometheus_port} ({type(exc).__name__}: {exc.strerror or exc})")
            LOGGER.warning("baton telemetry off: %s", _STATE.why)
            return _STATE
        log.set_sink(_SINK)
        _STATE = State("on", exporter=_SINK.exporter)
        return _STATE


def install(sink: Any) -> None:
    """Use ``sink`` (an ``otel.OtelSink`` over providers of the caller's: a test's in-memory reader, an
    application's own) instead of the configured one."""
    global _WANTED, _STATE, _SINK
    with _LOCK:
        _stop()
        _WANTED, _SINK = Wanted(telemetry=True), sink
        log.set_sink(sink)
        _STATE = State("on", exporter=sink.exporter)


def _stop() -> None:
    global _SINK
    if _SINK is not None:
        log.set_sink(None)
        _SINK.close()
        _SINK = None


def stop() -> None:
    """Telemetry off (the plugin's unregister): the sink removed, the Prometheus endpoint closed."""
    global _WANTED, _STATE
    with _LOCK:
        _stop()
        _WANTED = Wanted()
        _STATE = State("off", "not configured (baton.telemetry, baton.prometheus_port)")


def flush() -> None:
    """Wait until the running sink measured every event so far (a test's read, a scrape right after)."""
    with _LOCK:
        sink = _SINK
    if sink is not None:
        sink.flush()


def status() -> dict[str, Any]:
    with _LOCK:
        return {key: value for key, value in asdict(_STATE).items() if value is not None}
