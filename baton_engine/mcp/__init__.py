"""``baton-mcp``: the same handoffs from any agent harness, over stdio MCP.

The MCP SDK is an optional extra (``pip install 'baton-engine[mcp]'``: it brings a web stack the core does not
need), so it is imported only when the server starts; without it the command says how to install it.
"""

from __future__ import annotations

from pathlib import Path

import click

from baton_engine import __version__
from baton_engine.logs import configure_logging

MISSING_SDK_EXIT_CODE = 2


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="A directory inside the project; fixed for the server's lifetime.")
@click.version_option(__version__, prog_name="baton-mcp")
def main(root: Path) -> None:
    """Serve Baton's handoff tools over MCP on stdin/stdout (register this command in your agent harness).

    Logs are off unless BATON_LOG is debug, info, warning or error; they go to stderr, never into the protocol.
    """
    try:
        configure_logging()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        import anyio

        from baton_engine.mcp.server import serve_stdio
    except ImportError as exc:
        raise click.ClickException(
            f"baton-mcp needs the MCP SDK ({type(exc).__name__}: {exc.name}); "
            "install it with: pip install 'baton-engine[mcp]'") from None
    anyio.run(serve_stdio, root.resolve())
