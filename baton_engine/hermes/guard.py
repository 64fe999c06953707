"""The host boundary: every call Hermes makes into Baton is ``guarded``, so an internal fault never reaches Hermes.

Why one helper: Hermes calls Baton from inside its agent loop (``update_from_response`` even runs inside its API
try, where an exception reads as a provider error), from its tool loop, its middleware and its status readers.
Each entry point names what Hermes' built-in would do instead (its fallback); a fault is logged once per kind
(entry point and exception TYPE, never its message: it may quote a prompt) and counted for ``get_status``, and the
call answers with that fallback (the next one, then ``default``, when it fails too).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

LOGGER = logging.getLogger("baton_engine.hermes")
F = TypeVar("F", bound=Callable[..., Any])
_LOCK = threading.Lock()
_FAULTS: Counter[str] = Counter()  # "entry point: ExceptionType" -> how many times, process-wide


def internal_errors() -> dict[str, int]:
    """Every kind of fault the boundary caught in this process and how often (status shows it)."""
    with _LOCK:
        return dict(_FAULTS)


def _note(what: str, exc: BaseException, instead: str) -> None:
    kind = f"{what}: {type(exc).__name__}"
    with _LOCK:
        _FAULTS[kind] += 1
        first = _FAULTS[kind] == 1
    LOGGER.log(logging.WARNING if first else logging.DEBUG, "baton %s failed type=%s; %s%s", what,
               type(exc).__name__, instead, " (said once per kind; get_status counts them)" if first else "")


def guarded(what: str, *fallbacks: Callable[..., Any], instead: str, default: Any = None) -> Callable[[F], F]:
    """Decorate an entry point Hermes calls: on any exception the call answers its first fallback that does not
    raise, each called as ``fallback(*args, **kwargs)`` (the same arguments), and ``default`` if every one raises.
    ``instead`` says what the first fallback does (logged)."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def at_the_boundary(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            # the host boundary: nothing Baton does may raise into Hermes
            except Exception as exc:  # noqa: BLE001
                _note(what, exc, instead)
            for fallback in fallbacks:
                try:
                    return fallback(*args, **kwargs)
                # a fallback runs on a state the fault may have left broken: its failure answers the next one
                except Exception as exc:  # noqa: BLE001
                    _note(f"{what} fallback", exc, "answered the next fallback")
            return default

        return at_the_boundary  # type: ignore[return-value]

    return decorate


def nothing(*_args: Any, **_kwargs: Any) -> None:
    """The fallback of an observe-only hook: Hermes' built-in does nothing there."""
    return None
