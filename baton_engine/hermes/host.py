"""Hermes as one agent's host: the process runtime as Hermes' plugin builds it (settings and the host view read from
Hermes' config), and ``HermesHost``, what an engine's budgeter and project ask of Hermes (``agent/host.Host``).

Why here and not in ``agent/``: the runtime, the request budgeter and the project are one agent's Baton with no
host in it; what they need of Hermes (the view of the main route and window, how a project's settings are read,
the agent's working directory, the request shapes of its api modes and the projection of its messages) comes from
this edge. ``baton_engine.hermes`` registers ``host_runtime`` as the runtime's default factory when it is imported,
so ``get_runtime()`` builds this one for an engine used outside the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton_engine.agent.runtime import BatonRuntime
from baton_engine.handoff.store import find_project_root
from baton_engine.hermes import request_view
from baton_engine.hermes.config import agent_cwd, load_hermes_settings
from baton_engine.settings import BatonSettings
from baton_engine.shapes import Shape


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


class HermesHost:
    """``agent/host.Host`` for Hermes: its name, its agent's working directory (``config.agent_cwd``), its api modes'
    shapes and the projection of its stored messages (``request_view``), its window's name (``model.context_length``).

    Stateless: every engine (and each of Hermes' per-agent deep copies) holds one; a copy is the object itself."""

    name = "Hermes"
    window_label = "hermes context_length"
    window_setting = "model.context_length in config.yaml"

    def working_directory(self) -> Path:
        return agent_cwd()

    def shape_for(self, api_mode: Any) -> Shape:
        return request_view.shape_for(api_mode)

    def wire_is_not_chat(self, api_mode: Any) -> bool:
        return api_mode in request_view.WIRE_MODES

    def project(self, message: Mapping[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        return request_view.project(message)

    def __copy__(self) -> HermesHost:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> HermesHost:
        return self
