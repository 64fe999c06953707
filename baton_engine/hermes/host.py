"""The process runtime as Hermes' plugin builds it: settings and the host view read from Hermes' config.

Why here and not in ``agent/runtime.py``: the runtime is one agent's Baton with no host in it; what it needs of
Hermes (the view of the main route and window, how a project's settings are read) comes from this edge.
``baton_engine.hermes`` registers ``host_runtime`` as the runtime's default factory when it is imported, so
``get_runtime()`` builds this one for an engine used outside the plugin.
"""

from __future__ import annotations

from pathlib import Path

from baton_engine.agent.runtime import BatonRuntime
from baton_engine.handoff.store import find_project_root
from baton_engine.hermes.config import agent_cwd, load_hermes_settings
from baton_engine.settings import BatonSettings


def host_runtime(home: Path | None = None) -> BatonRuntime:
    """A runtime with the settings the plugin starts with (``load_hermes_settings``: env > the ``baton:`` block >
    the working directory's project config > default) and the host view; bad values raise a UserInputError."""
    project = agent_cwd()
    settings, view = load_hermes_settings(home, project_dir=project)
    paths = find_project_root(project)

    def project_settings(root: Path) -> BatonSettings:
        """Another project's settings, in the same layers over the same Hermes home."""
        return load_hermes_settings(home, project_dir=root)[0]

    return BatonRuntime(settings, view, project_root=paths.root if paths is not None else project.resolve(),
                        project_settings=project_settings)
