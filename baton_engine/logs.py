"""``BATON_LOG``: the one switch for Baton's own logs (spec: off by default; ids and event names only).

Why one place: library code only calls ``logging.getLogger("baton_engine.<part>")`` and never decides
whether anything is printed; the process entry point (the ``baton`` command) calls ``configure_logging``
once. Off, the ``baton_engine`` logger gets a ``NullHandler``: without any handler Python's last-resort
handler would print library warnings (a skipped tokenizer plugin, a count that fell back) into command
output. On, records go to stderr, so ``--json`` output on stdout stays parseable.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TextIO

ENV_VAR = "BATON_LOG"
LOGGER_NAME = "baton_engine"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
OFF_VALUES = frozenset({"", "0", "off", "false", "no", "none"})
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is emitted (click's test runner swaps it)."""

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        """Ignored: the stream is always the current stderr."""


class _Off(logging.NullHandler):
    """Marks the handler installed while logs are off (so a reconfiguration can find and replace it)."""


def log_level(value: str | None) -> int | None:
    """The level ``BATON_LOG`` asks for; None when logs are off. Raises ValueError naming the accepted values."""
    name = (value or "").strip().lower()
    if name in OFF_VALUES:
        return None
    if name not in LEVELS:
        accepted = ", ".join([*LEVELS, "off"])
        raise ValueError(f"{ENV_VAR}={value!r} is not a log level; use one of {accepted} (unset means off)")
    return LEVELS[name]


def configure_logging(environ: Mapping[str, str] | None = None) -> int | None:
    """Point the ``baton_engine`` logger at stderr at the ``BATON_LOG`` level, or silence it; idempotent.

    Returns the level (None = off). An invalid value raises ValueError before anything is changed.
    """
    level = log_level((os.environ if environ is None else environ).get(ENV_VAR))
    logger = logging.getLogger(LOGGER_NAME)
    for handler in [h for h in logger.handlers if isinstance(h, (_CurrentStderr, _Off))]:
        logger.removeHandler(handler)
    if level is None:
        logger.addHandler(_Off())
        logger.setLevel(logging.NOTSET)
        return None
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level)
    return level
