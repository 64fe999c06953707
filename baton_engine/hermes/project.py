"""The project an agent works in, and that project's settings: what every part of an engine reads first.

Why its own object: the engine's collaborators (request budgeter, compaction runner, recall, tools) each need
"which project, which settings" and nothing else of the engine; an explicit project wins, else the agent's
working directory as Hermes resolves it for the session (a gateway's ``terminal.cwd``), not the process's.
"""

from __future__ import annotations

import os
from pathlib import Path

from baton_engine.hermes.config import agent_cwd
from baton_engine.hermes.runtime import get_runtime
from baton_engine.settings import BatonSettings


class Project:
    def __init__(self, project_dir: str | os.PathLike[str] | None = None) -> None:
        self.explicit = Path(project_dir) if project_dir is not None else None

    def path(self) -> Path:
        return self.explicit if self.explicit is not None else agent_cwd()

    def settings(self) -> BatonSettings:
        """This session's settings (``BatonRuntime.settings_for`` its project)."""
        return get_runtime().settings_for(self.path())
