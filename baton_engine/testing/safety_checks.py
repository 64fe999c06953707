"""Checks of what Baton's agent loop relies on: copies count the same, threads count the same, failures are
``CannotCount`` and quote nothing, and ``clear_cache()`` / ``close()`` can be called again and again.
"""

from __future__ import annotations

import copy
import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from baton_engine.testing.outcomes import Outcome, count, count_all, items, tokens_of, try_clear_cache
from baton_engine.testing.report import FAIL, PASS, Check
from baton_engine.tokens.contract import CannotCount, TokenizerBackend

THREADS = 8
THREAD_TIMEOUT_SECONDS = 300


def _differences(baseline: dict[str, Outcome], other: dict[str, Outcome]) -> list[str]:
    return [key for key, outcome in baseline.items() if tokens_of(other[key]) != tokens_of(outcome)]


def check_deepcopy(backend: TokenizerBackend, baseline: dict[str, Outcome]) -> Check:
    fix = ("make copy.deepcopy work: leave locks, clients, sockets and threads out of __getstate__/__deepcopy__ "
           "and recreate them lazily (Hermes copies its context engine, and the backend with it)")
    try:
        duplicate = copy.deepcopy(backend)
    except Exception as exc:  # noqa: BLE001 - the kit judges a backend author's code: any failure is a finding
        return Check("deepcopy", FAIL, f"copy.deepcopy raised {type(exc).__name__}", fix)
    try:
        differ = _differences(baseline, count_all(duplicate, items()))
    finally:
        try:
            duplicate.close()
        except Exception:  # noqa: BLE001 - close() is judged by the lifecycle check
            pass
    if differ:
        return Check("deepcopy", FAIL, f"the copy counts differently on {len(differ)} corpus items "
                     f"(first: {differ[0]})", fix)
    return Check("deepcopy", PASS, f"the copy counts the same on {len(baseline)} corpus items")


def check_threads(backend: TokenizerBackend, baseline: dict[str, Outcome]) -> Check:
    """``THREADS`` threads start together on an emptied cache, each counting the corpus in its own order."""
    fix = ("make counting thread-safe: keep per-call state in local variables and guard shared caches or "
           "clients with a lock (Baton counts from several threads at once)")
    chosen = [items() for _ in range(THREADS)]  # one copy each: a request mutated by one thread is not the others'
    start = threading.Barrier(THREADS)
    found: list[dict[str, Outcome]] = [{} for _ in range(THREADS)]

    def work(index: int) -> None:
        mine, shift = chosen[index], index % len(chosen[index])
        order = mine[shift:] + mine[:shift]
        start.wait()
        found[index] = count_all(backend, order)

    try_clear_cache(backend)
    workers = [threading.Thread(target=work, args=(i,), name=f"baton-kit-{i}", daemon=True) for i in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(THREAD_TIMEOUT_SECONDS)
    if any(worker.is_alive() for worker in workers):
        return Check("threads", FAIL, f"{THREADS} threads did not finish within {THREAD_TIMEOUT_SECONDS} s "
                     "(a deadlock?)", fix)
    differ = [key for run in found for key in _differences(baseline, run)]
    if differ:
        return Check("threads", FAIL, f"counts from {THREADS} threads differ from serial counts in {len(differ)} "
                     f"of {THREADS * len(baseline)} counts (first: {differ[0]})", fix)
    return Check("threads", PASS, f"{THREADS} threads x {len(baseline)} corpus items equal the serial counts")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.texts.append(record.getMessage() + (self.format(record) if record.exc_info else ""))
        except Exception:  # noqa: BLE001 - an unformattable record is not the backend's leak to judge
            pass


@contextmanager
def _captured_logs() -> Iterator[_Records]:
    root = logging.getLogger()
    handler, level = _Records(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def malformed_requests(canary: str) -> list[tuple[str, dict]]:
    """Requests no backend can count, each carrying ``canary`` where prompt text would be."""
    return [
        ("messages is a string", {"messages": canary}),
        ("a message is a string", {"messages": [canary]}),
        ("a role is not a string", {"messages": [{"role": 7, "content": canary}]}),
    ]


def check_errors(backend: TokenizerBackend) -> Check:
    """A malformed request raises CannotCount, and neither the error, ``source`` nor any log quotes it."""
    canary = f"baton-kit-canary-{uuid.uuid4().hex}"
    fix_type = "raise CannotCount (a subclass is fine) for every request the backend cannot count"
    fix_leak = ("say what is wrong without quoting the request: name the field and the type "
                "(\"messages[0] must be an object\"), never its content")
    raised = estimated = 0
    with _captured_logs() as logs:
        for what, request in malformed_requests(canary):
            try:
                result = backend.count_chat(request)
            except Exception as exc:  # noqa: BLE001 - the backend author's code: judged below
                if not isinstance(exc, CannotCount):
                    return Check("errors", FAIL, f"count_chat raised {type(exc).__name__} for a malformed "
                                 f"request ({what})", fix_type)
                if canary in _safe_text(exc):
                    return Check("errors", FAIL, f"the CannotCount for a malformed request ({what}) quotes the "
                                 "request text", fix_leak)
                raised += 1
                continue
            if getattr(result, "exact", False) is not False:
                return Check("errors", FAIL, f"count_chat returned an exact count for a malformed request "
                             f"({what})", fix_type)
            if canary in _safe_text(result):
                return Check("errors", FAIL, f"the estimate for a malformed request ({what}) quotes the "
                             "request text", fix_leak)
            estimated += 1
        leaked_source = canary in _safe_text(backend.source)
    if leaked_source:
        return Check("errors", FAIL, "source quotes request text after a failed count", fix_leak)
    if any(canary in text for text in logs.texts):
        return Check("errors", FAIL, "a log record quotes the request text of a failed count", fix_leak)
    detail = f"{raised} malformed requests raised CannotCount"
    if estimated:
        detail += f", {estimated} got inexact estimates"
    return Check("errors", PASS, detail + "; nothing quoted the request (errors, source, logs)")


def _safe_text(value: object) -> str:
    try:
        return f"{value} {value!r}"
    except Exception:  # noqa: BLE001 - an unprintable exception quotes nothing
        return ""


def check_lifecycle(backend: TokenizerBackend, baseline: dict[str, Outcome]) -> Check:
    """clear_cache() twice, count, close() twice, then count again or raise CannotCount. Closes the backend."""
    probe = items()[0]
    expected = tokens_of(baseline[f"{probe.kind}:{probe.name}"])
    for method in ("clear_cache", "close"):
        for _ in range(2):
            try:
                getattr(backend, method)()
            except Exception as exc:  # noqa: BLE001 - the backend author's code: any failure is a finding
                return Check("lifecycle", FAIL, f"{method}() raised {type(exc).__name__} when called repeatedly",
                             f"make {method}() safe to call any number of times (a no-op when there is nothing "
                             "to do)")
        after = count(backend, probe)
        if after.error is not None and (method == "clear_cache" or not after.cannot_count):
            return Check("lifecycle", FAIL, f"after {method}() twice, count_chat raised {after.error}",
                         "after clear_cache() keep counting; after close() rebuild lazily or raise CannotCount")
        if after.error is None and tokens_of(after) != expected:
            return Check("lifecycle", FAIL, f"after {method}() twice, count_chat counts differently",
                         "clearing a cache or closing a connection must not change counts")
    ending = "counts again" if after.error is None else "raises CannotCount"
    return Check("lifecycle", PASS, f"clear_cache() and close() are idempotent; after close() it {ending}")
