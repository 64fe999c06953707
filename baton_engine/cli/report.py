"""``baton report``: a session's metrics as a self-contained HTML page (and ``--json``, the same data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from baton_engine.cli import cli
from baton_engine.cli.output import json_option, root_option, run
from baton_engine.handoff.owner import Scope
from baton_engine.operations import maintenance


@cli.command("report")
@click.argument("session", required=False)
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the page (default: beside the session's log, .baton/metrics/<session>.html).")
@click.option("--platform", help="Only sessions run on this Hermes platform (cli, telegram, ...).")
@click.option("--session-key", "conversation_id", metavar="KEY",
              help="Only one conversation's sessions: its gateway session key (or its stored sha256: hash).")
@root_option
@json_option
def report_command(session: str | None, html_path: Path | None, platform: str | None, conversation_id: str | None,
                   root: Path | None, as_json: bool) -> None:
    """Write the HTML report of SESSION (a log name, session key or prefix, or a Hermes session id; default: the
    latest session of this project) and print its summary; --json prints the report's data."""

    def render(console: Console, result: dict[str, Any]) -> None:
        summary = result["summary"]
        peak = (f"peak {summary['peak_prompt']:,} of {summary['peak_window']:,} tokens"
                if summary["peak_prompt"] is not None else "no counted prompt")
        console.print(Text(f"session {result['session']}: {summary['requests']} requests, "
                           f"{summary['compactions']} compactions, {peak}, counting {summary['counting_mode']}, "
                           f"route {summary['route_verdict'] or 'unconfirmed'}, {summary['refusals']} refusals"
                           + (f", Baton's tool schemas {summary['tool_schema_tokens']:,} tokens per request"
                              if summary.get("tool_schema_tokens") is not None else "")))
        console.print(Text(prompt_cache_line(summary)))
        console.print(Text(f"report: {result['html']}"))

    scope = Scope.filter(platform, conversation_id)
    run(as_json, lambda: maintenance.report(root, session, html=html_path, scope=scope), render)


def prompt_cache_line(summary: dict[str, Any]) -> str:
    """The prompt cache's account in one line: tokens sent, read from the cache and uncached (or that the route does
    not say), what the committed prunes reclaimed (exact or not) and the declined ones by reason."""
    if summary.get("prompt_tokens") is None:
        sent = "prompt tokens sent: no usage reported"
    elif summary.get("cache_read_tokens") is None:
        sent = f"prompt tokens sent {summary['prompt_tokens']:,}, cache not reported by the route"
    else:
        sent = (f"prompt tokens sent {summary['prompt_tokens']:,}, {summary['cache_read_tokens']:,} read from the "
                f"cache, {summary['uncached_prompt_tokens']:,} uncached")
    declined = summary.get("prunes_declined") or {}
    reasons = ", ".join(f"{reason} {n:,}" for reason, n in declined.items())
    exact = {None: "", True: ", every figure exact", False: ", not every figure exact"}[summary.get("reclaimed_exact")]
    if summary.get("reclaimed_tokens") is None:
        pruned = "no prune logged"
    else:
        pruned = (f"{summary['reclaimed_tokens']:,} tokens reclaimed by {summary['prunes_committed']} prunes{exact}, "
                  f"{sum(declined.values()):,} declined" + (f" ({reasons})" if reasons else ""))
    return f"{sent}; {pruned}"
