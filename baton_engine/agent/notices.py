"""What the user must know, said on the terminal once: a line on stderr (``baton: ...``) and in Hermes' logs.

Why Baton prints its own: Hermes 0.19 sends plugin warnings only to its log files (``errors.log``), where nobody
looks while a session runs. ``Notices`` keeps what one agent was told, so a condition that lasts (a window larger
than the server's, a calibrated route, a server that truncates) is said once, and ``get_status()`` lists it.
Lines carry numbers, setting names and sources, never prompt text or secrets.
"""

from __future__ import annotations

import logging
import sys

LOGGER = logging.getLogger("baton_engine.agent")


def tell(line: str) -> None:
    """One line on the terminal (stderr) and in Hermes' logs: what the user must fix. Never prompt text."""
    LOGGER.warning("%s", line)
    print(f"baton: {line}", file=sys.stderr, flush=True)


class Notices:
    """The lines one agent's user was told, by condition (``key``): each said once."""

    def __init__(self) -> None:
        self.said: dict[str, str] = {}

    def say(self, key: str, line: str) -> None:
        if key not in self.said:
            self.said[key] = line
            tell(line)

    def lines(self) -> list[str]:
        return list(self.said.values())
