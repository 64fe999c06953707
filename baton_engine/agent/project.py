"""The project an agent works in, and that project's settings: what every part of an engine reads first.

Why its own object: the engine's collaborators (request budgeter, compaction runner, recall, tools) each need
"which project, which settings" and nothing else of the engine; an explicit project wins, else the agent's
working directory as its host resolves it for the session (``Host.working_directory``; Hermes: a gateway's
``terminal.cwd``), not the process's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar

from baton_engine.agent.host import Host
from baton_engine.agent.runtime import get_runtime
from baton_engine.settings import BatonSettings

T = TypeVar("T")


class Resolved(Generic[T]):
    """A value resolved once for what it depends on (``key``), held until that changes or the next provider request
    begins (``forget``): the hooks of one request share one resolution instead of a directory walk each.

    Never copied: a copy of the engine (Hermes' per-agent ``copy.deepcopy``) resolves afresh, and never copies the
    runtime a key holds."""

    def __init__(self) -> None:
        self._held: tuple[Hashable, T] | None = None

    def get(self, key: Hashable, resolve: Callable[[], T]) -> T:
        held = self._held
        if held is None or held[0] != key:  # tuple keys compare their items by identity first
            held = self._held = (key, resolve())
        return held[1]

    def forget(self) -> None:
        self._held = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Resolved[T]:
        return Resolved()


class Project:
    """The explicit project (``project_dir``), else the agent's working directory as ``host`` says it."""

    def __init__(self, host: Host, project_dir: str | os.PathLike[str] | None = None) -> None:
        self.host = host
        self.explicit = Path(project_dir) if project_dir is not None else None
        self._settings: Resolved[BatonSettings] = Resolved()

    def path(self) -> Path:
        return self.explicit if self.explicit is not None else self.host.working_directory()

    def settings(self) -> BatonSettings:
        """This session's settings (``BatonRuntime.settings_for`` its project), resolved once per request
        (``next_request``) for this runtime, its own settings and this directory (a runtime whose settings were
        replaced, as a benchmark arm's are, resolves them again at once)."""
        runtime, path = get_runtime(), self.path()
        return self._settings.get((runtime, runtime.settings, path), lambda: runtime.settings_for(path))

    def next_request(self) -> None:
        """A provider request begins: its settings are read again (an edited project config takes effect)."""
        self._settings.forget()
