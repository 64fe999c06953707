"""How every command prints: the operations dict as JSON (``--json``) or rich text, and the exit code.

Why one runner: ``--json`` must print exactly what ``baton_engine.operations`` returned, and errors must map
to the spec's exit codes (2 input, 3 validation, 4 not found / conflict, 5 policy) the same way everywhere.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from baton_engine.errors import UserInputError
from baton_engine.results import call, dumps

Renderer = Callable[[Console, dict[str, Any]], None]


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (stable keys).")(func)


def root_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="A directory inside the project (default: the current directory).",
    )(func)


def run(
    as_json: bool, operation: Callable[[], dict[str, Any]], render: Renderer, *, failed_exit_code: int | None = None
) -> None:
    """Run ``operation`` through ``results.call``, print its result, exit with the spec's code.

    ``failed_exit_code`` replaces the code of a result with ``"ok": false`` that is not an error (a command
    such as ``baton tokens check`` whose failed checks exit 1, like pytest).
    """
    result, code = call(operation)
    if failed_exit_code is not None and not result.get("ok", True) and "error" not in result:
        code = failed_exit_code
    if as_json:
        click.echo(dumps(result))
    elif "error" in result:
        render_error(result)
    else:
        render(Console(highlight=False, soft_wrap=True), result)
    if code:
        sys.exit(code)


def render_error(result: dict[str, Any]) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    err.print(Text.assemble(("error", "bold red"), f" ({result['error']['kind']}): {result['error']['message']}"))
    validation = result.get("validation")
    if validation:
        err.print(checks_table(validation["checks"]))


def load_json_file(path: str) -> Any:
    """``--input`` / ``--event`` payloads: a file path or ``-`` for stdin; errors say what to fix."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserInputError(f"cannot read {path} ({type(exc).__name__}); pass a readable UTF-8 JSON file") from None
    return parse_json(text, what=path)


def parse_json(text: str, *, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{what}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "red", "skipped": "dim", "info": "cyan"}


def checks_table(checks: list[dict[str, Any]]) -> Table:
    table = Table("check", "status", "detail", box=None, pad_edge=False)
    for check in checks:
        style = STATUS_STYLE.get(check["status"], "")
        table.add_row(check["name"], Text(check["status"], style=style), Text(check.get("detail", "")))
    return table


def owner_text(owner: dict[str, Any] | None) -> str:
    """A record's owner as shown: ``telegram sha256:...`` (platform, hashed session key), ``cli``, or ``-``."""
    if not owner:
        return "-"
    return " ".join(part for part in (owner.get("platform"), owner.get("conversation_id")) if part)


def handoffs_table(entries: list[dict[str, Any]]) -> Table:
    table = Table("id", "status", "created", "relation", "owner", "title", box=None, pad_edge=False)
    for entry in entries:
        table.add_row(entry["short_id"], entry["status"], entry["created_at"], entry["relation"],
                      Text(owner_text(entry.get("owner"))), Text(entry["title"]))
    return table


def redactions_table(redactions: list[dict[str, Any]]) -> Table:
    table = Table("redacted field", "reason", box=None, pad_edge=False)
    for item in redactions:
        table.add_row(Text(item["field"]), Text(item["reason"]))
    return table
