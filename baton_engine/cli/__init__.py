"""The ``baton`` command line. Each submodule attaches its commands to ``cli``."""

from __future__ import annotations

import click

from baton_engine import __version__
from baton_engine.logs import configure_logging


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="baton")
def cli() -> None:
    """Baton: validated handoffs and exact token budgets for agent sessions.

    Logs are off unless BATON_LOG is debug, info, warning or error (they go to stderr).
    """
    try:
        configure_logging()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def main() -> None:
    cli(prog_name="baton")


from baton_engine.cli import tokens as _tokens  # noqa: E402,F401  (attaches `baton tokens`)
from baton_engine.cli import handoff as _handoff  # noqa: E402,F401  (attaches the handoff commands)
from baton_engine.cli import project as _project  # noqa: E402,F401  (attaches init/status/detect/doctor/...)
from baton_engine.cli import hermes as _hermes  # noqa: E402,F401  (attaches `baton hermes`)
from baton_engine.cli import report as _report  # noqa: E402,F401  (attaches `baton report`)
