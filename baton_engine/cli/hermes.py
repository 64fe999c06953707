"""``baton hermes install``: the Hermes plugin directory, and (only with ``--select``) the config switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from baton_engine.cli import cli
from baton_engine.cli.output import json_option, run
from baton_engine.hermes.config import hermes_home
from baton_engine.hermes.install import install, uninstall


@cli.group("hermes")
def hermes_group() -> None:
    """Use Baton as Hermes Agent's context engine."""


@hermes_group.command("install")
@click.option("--hermes-home", "home", type=click.Path(file_okay=False, path_type=Path),
              help="Hermes home directory (default: $HERMES_HOME or ~/.hermes).")
@click.option("--select", is_flag=True, help="Also enable the plugin and set context.engine: baton.")
@click.option("--link", is_flag=True, help="Symlink the plugin directory instead of copying it.")
@json_option
def install_command(home: Path | None, select: bool, link: bool, as_json: bool) -> None:
    """Write $HERMES_HOME/plugins/baton/; never activates Baton unless --select is given."""

    def render(console: Console, result: dict[str, Any]) -> None:
        console.print(f"plugin directory: {result['plugin_dir']}" + (" (symlink)" if result["linked"] else ""))
        if result["selected"]:
            changed = ", ".join(result["selected"]["changed"]) or "nothing (already selected)"
            console.print(f"selected in {result['selected']['config']}: {changed}")
        for step in result["next_steps"]:
            console.print(f"next: {step}")

    run(as_json, lambda: install(hermes_home(home), select=select, link=link), render)


@hermes_group.command("uninstall")
@click.option("--hermes-home", "home", type=click.Path(file_okay=False, path_type=Path),
              help="Hermes home directory (default: $HERMES_HOME or ~/.hermes).")
@json_option
def uninstall_command(home: Path | None, as_json: bool) -> None:
    """Turn Baton off (plugins.enabled, context.engine: compressor) and remove $HERMES_HOME/plugins/baton/; keeps the
    baton: block and every .baton/. Works offline (Hermes 0.22's `hermes plugins disable` needs a download)."""

    def render(console: Console, result: dict[str, Any]) -> None:
        console.print(f"changed in {result['config']}: {', '.join(result['changed']) or 'nothing (Baton was off)'}")
        console.print(f"removed: {result['removed'] or 'no plugin directory'}; kept: {result['kept']}")

    run(as_json, lambda: uninstall(hermes_home(home)), render)
