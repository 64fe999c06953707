"""Which settings layers a command reads: with a Hermes home named (``--hermes-home``, else ``$HERMES_HOME``)
the ``baton:`` block of its config.yaml is the config.yaml layer, so `baton doctor` and `baton tokens` answer
with the settings Hermes uses (``settings.load_settings``' one precedence; ``config_yaml_layer``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from baton_engine.hermes.config import checked_block, hermes_home, hermes_view, read_config_file
from baton_engine.operations.context import config_yaml_layer

Result = TypeVar("Result")


def hermes_home_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--hermes-home", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="Read the baton: block of this Hermes home's config.yaml as Hermes does (default: $HERMES_HOME "
             "when it is set).",
    )(func)


def named_home(explicit: Path | None) -> Path | None:
    """``--hermes-home``, else ``$HERMES_HOME`` when set; None when no Hermes home is named."""
    if explicit is not None or os.environ.get("HERMES_HOME", "").strip():
        return hermes_home(explicit)
    return None


def with_hermes_layer(explicit: Path | None, operation: Callable[[], Result]) -> Result:
    """``operation()`` with the named Hermes home's ``baton:`` block as the config.yaml layer (a malformed
    config.yaml is a SettingsError naming the file)."""
    home = named_home(explicit)
    if home is None:
        return operation()
    with config_yaml_layer(checked_block(hermes_view(read_config_file(home)))):
        return operation()
