"""A host process's Baton started and stopped: its runtime installed, its telemetry, its main tokenizer built.

Why in the core: what a host's plugin does at load and unload is the same for any host (Hermes: ``hermes/plugin``);
only what the host says about it is its own. The main route's tokenizer is built on a thread of its own, beside the
host's plugin load rather than inside it, so a tokenizer that cannot start is said at start-up without holding the
load up: Hermes 0.22 abandons a plugin whose import + ``register()`` overrun ``plugins.load_timeout_seconds`` (10 s
by default) and building the hf backend took 14.7 s on a loaded 2-core machine (docs/hermes-versions.md). The first
request meanwhile waits for the build (at most ``runtime.START_WAIT_SECONDS``), any other counts with estimates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from baton_engine.agent.notices import tell
from baton_engine.agent.runtime import BatonRuntime, set_runtime, start_telemetry
from baton_engine.metrics import telemetry
from baton_engine.tokens.counter import TokenCounter

_STARTING: threading.Thread | None = None  # the start-up build of the tokenizer, while it runs


def install(runtime: BatonRuntime) -> None:
    """``runtime`` becomes the process's (the one it replaces is closed); the user is told of each ignored
    setting and of telemetry asked for that cannot run."""
    for problem in runtime.settings.ignored:
        tell(problem)
    observed = start_telemetry(runtime.settings)
    if observed.state == "off" and (runtime.settings.telemetry or runtime.settings.prometheus_port is not None):
        tell(f"telemetry off: {observed.why}")
    previous = set_runtime(runtime)
    if previous is not None:
        previous.close()


def start_counting(runtime: BatonRuntime, then: Callable[[TokenCounter | None], None]) -> None:
    """Build the main route's tokenizer on its own thread, waiting however long it takes; a tokenizer that cannot
    start is told, and ``then`` hears how the build ended (the counter, or None)."""

    def build() -> None:
        counter = runtime.main.counter(patient=True)
        if counter is None:
            tell(runtime.main.counter_error or "tokenizer cannot start")
        then(counter)

    global _STARTING
    _STARTING = threading.Thread(target=build, name="baton-tokenizer-start", daemon=True)
    _STARTING.start()


def started(timeout: float | None = None) -> bool:
    """Waits (at most ``timeout`` seconds) for the start-up build of the tokenizer: True once it is done and its
    lines are said."""
    starting = _STARTING
    if starting is not None:
        starting.join(timeout)
    return starting is None or not starting.is_alive()


def uninstall() -> None:
    """The process's runtime released (its tokenizer closed) and telemetry stopped; call ``started`` first."""
    previous = set_runtime(None)
    if previous is not None:
        previous.close()
    telemetry.stop()
