"""A backend call bounded in time: run on a worker thread and waited for at most a deadline.

Why: a count runs inside Hermes' agent loop, and a backend can take unboundedly long (a Hugging Face chat template
that loops, a tokenizer stuck in native code, a server that never answers). The caller gives up at the deadline with
``CountTimedOut`` (a ``CannotCount``: the breaker opens and counting falls back). For an in-process backend the
worker is then stopped at its next Python instruction (``PyThreadState_SetAsyncExc``, the documented C API), so a
template that loops does not keep a core busy and take the GIL from every other agent; a server backend's worker is
left to its own HTTP timeout (stopping it inside a connection pool could break the pool).
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from baton_engine.tokens.contract import CannotCount

LOGGER = logging.getLogger("baton_engine.tokens")
_T = TypeVar("_T")


class CountTimedOut(CannotCount):
    """The backend did not answer within the deadline (message: seconds only)."""


class _Stopped(BaseException):
    """Raised inside a worker whose caller gave up; a BaseException so a backend's ``except Exception`` lets it
    through."""


def run_within(action: Callable[[], _T], seconds: float, *, stop: bool,
               on_stopped: Callable[[], None] | None = None) -> _T:
    """``action()``'s result or exception, or ``CountTimedOut`` after ``seconds``; with ``stop`` the worker is then
    stopped and ``on_stopped`` runs on it (e.g. the backend drops memos the interrupted count may have half-written)."""
    done = threading.Event()
    guard = threading.Lock()  # the worker leaves ``action`` and the caller decides to stop it one at a time
    running = [True]
    outcome: list[tuple[bool, object]] = []

    def work() -> None:
        try:
            try:
                outcome.append((True, action()))
            except _Stopped:
                raise
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
                outcome.append((False, exc))
            with guard:
                running[0] = False
            done.set()
        except _Stopped:
            _after_stop(on_stopped)

    worker = threading.Thread(target=work, name="baton-count", daemon=True)
    worker.start()
    if not done.wait(seconds):
        with guard:
            if running[0] and stop and worker.ident is not None:
                running[0] = False
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(_Stopped))
        if not outcome:  # appended before the worker leaves: a count that just made it is kept
            LOGGER.warning("tokenizer count overran its %g s deadline%s", seconds, "; stopped" if stop else "")
            raise CountTimedOut(f"tokenizer did not answer within {seconds:g} s")
    succeeded, value = outcome[0]
    if not succeeded:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]


def _after_stop(on_stopped: Callable[[], None] | None) -> None:
    if on_stopped is None:
        return
    try:
        on_stopped()
    except Exception as exc:  # noqa: BLE001 - backend code on a worker thread: nobody to raise to
        LOGGER.warning("backend clean-up after a stopped count failed type=%s", type(exc).__name__)
