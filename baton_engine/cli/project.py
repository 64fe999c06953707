"""Project commands of ``baton``: init, status, detect, doctor, gc, audit, migrate.

Thin like ``cli/handoff.py``: parse flags, call ``baton_engine.operations``, print the dict or a rich view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from baton_engine.cli import cli
from baton_engine.cli.layers import hermes_home_option, with_hermes_layer
from baton_engine.cli.output import (
    checks_table,
    json_option,
    load_json_file,
    parse_json,
    redactions_table,
    root_option,
    run,
)
from baton_engine.errors import UserInputError
from baton_engine.hermes import doctor as hermes_doctor
from baton_engine.operations import detect, doctor, handoffs, maintenance
from baton_engine.settings import SettingsError


def _panel(console: Console, title: str, lines: list[str]) -> None:
    """Lines in a titled box, wrapped inside it (the console's soft wrap would cut them at the box's edge)."""
    console.print(Panel(Text("\n".join(lines), overflow="fold"), title=title, expand=False), soft_wrap=False)


def _fields(result: dict[str, Any]) -> list[str]:
    """``key: value`` lines of an answer, lists joined, empty values (``migrated`` when nothing moved) left out."""
    return [f"{key}: {', '.join(map(str, value)) if isinstance(value, list) else value}"
            for key, value in result.items() if key != "ok" and value not in (None, [], "")]


@cli.command("init")
@click.option("--migrate-legacy", is_flag=True, help="Move an existing .threadline/ to .baton/.")
@root_option
@json_option
def init_command(root: Path | None, as_json: bool, migrate_legacy: bool) -> None:
    """Create .baton/ in the project root (the current directory or --root)."""

    def render(console: Console, result: dict[str, Any]) -> None:
        _panel(console, "baton init", _fields(result))

    run(as_json, lambda: handoffs.init(root, migrate_legacy=migrate_legacy), render)


@cli.command("status")
@root_option
@json_option
def status_command(root: Path | None, as_json: bool) -> None:
    """Project data location, record counts and the latest ready and draft handoffs."""

    def render(console: Console, result: dict[str, Any]) -> None:
        counts = ", ".join(f"{k}: {v}" for k, v in result["counts"].items()) or "no handoffs yet"
        lines = [f"root: {result['root']}", f"data: {result['data_dir']}" + (" (legacy)" if result["legacy"] else ""),
                 f"handoffs: {counts}"]
        for key in ("latest_ready", "latest_draft"):
            entry = result[key]
            if entry:
                lines.append(f"{key.replace('_', ' ')}: {entry['short_id']} {entry['title']}")
        lines += [f"unreadable: {p['path']}: {p['problem']}" for p in result["problems"]]
        _panel(console, "baton status", lines)

    run(as_json, lambda: handoffs.status(root), render)


@cli.command("detect")
@click.option("--event", help='Detector signals as JSON, e.g. \'{"explicit": true}\' or \'{"turns": 30}\'.')
@click.option("--capture", "capture_file", help="Capture payload file ('-' for stdin): create a draft when recommended.")
@root_option
@json_option
def detect_command(root: Path | None, as_json: bool, event: str | None, capture_file: str | None) -> None:
    """Score handoff pressure from the given signals; shows inputs used/unused and reasons.

    Creates nothing unless --capture is given and a handoff is recommended (an explicit request always is).
    """

    def parsed() -> dict[str, Any] | None:
        if event is None:
            return None
        data = parse_json(event, what="--event")
        if not isinstance(data, dict):
            raise UserInputError("--event must be a JSON object of detector signals")
        return data

    def render(console: Console, result: dict[str, Any]) -> None:
        verdict = "recommend a handoff" if result["recommend"] else "no handoff needed"
        lines = [f"pressure: {result['pressure']:.2f} ({verdict})",
                 f"auto prepare: {result['auto_prepare']}", f"readiness: {result['readiness']}",
                 f"inputs used: {_names(result['inputs_used'])}", f"inputs unused: {_names(result['inputs_unused'])}"]
        if result["suppressed_by_cooldown"]:
            lines.append(f"suppressed by cooldown ({result['cooldown_remaining_seconds']:.0f}s left)")
        lines += [f"- {reason}" for reason in result["reasons"]]
        if result["created"]:
            lines.append(f"draft created: {result['created']['short_id']} {result['created']['title']}")
        _panel(console, "baton detect", lines)

    def payload() -> dict[str, Any] | None:
        if capture_file is None:
            return None
        data = load_json_file(capture_file)
        if not isinstance(data, dict):
            raise UserInputError(f"{capture_file}: expected a JSON object with the capture payload")
        return data

    run(as_json, lambda: detect.detect(root, event=parsed(), capture_payload=payload()), render)


def _names(inputs: Any) -> str:
    if isinstance(inputs, dict):
        return ", ".join(f"{k}={v}" for k, v in inputs.items()) or "none"
    return ", ".join(str(item) for item in inputs) or "none"


@cli.command("doctor")
@root_option
@hermes_home_option
@json_option
def doctor_command(root: Path | None, as_json: bool, hermes_home: Path | None) -> None:
    """Environment and project health (exit 3 when a check fails); with a Hermes home (--hermes-home or
    $HERMES_HOME) the settings and tokenizer rows are those Hermes uses."""

    def render(console: Console, result: dict[str, Any]) -> None:
        console.print(checks_table(result["checks"]))

    checks = (*doctor.CORE_CHECKS, *hermes_doctor.checks(hermes_home))  # the explicit list: core, then Hermes

    def diagnose() -> dict[str, Any]:
        try:
            return with_hermes_layer(hermes_home, lambda: doctor.doctor(root, checks=checks))
        except SettingsError:  # an unreadable config.yaml: the hermes.settings row names it
            return doctor.doctor(root, checks=checks)

    run(as_json, diagnose, render)


@cli.command("gc")
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@root_option
@json_option
def gc_command(root: Path | None, as_json: bool, dry_run: bool) -> None:
    """Delete rebuildable files only (.baton/cache/, index.sqlite) and stale temp files of interrupted writes;
    records are never touched."""

    def render(console: Console, result: dict[str, Any]) -> None:
        verb = "would remove" if result["dry_run"] else "removed"
        console.print(Text(f"{verb}: {', '.join(result['removed'])}" if result["removed"] else "nothing to remove"))

    run(as_json, lambda: maintenance.gc(root, dry_run=dry_run), render)


@cli.command("audit")
@root_option
@json_option
def audit_command(root: Path | None, as_json: bool) -> None:
    """What the project stores: records, redactions (field + reason) and external references."""

    def render(console: Console, result: dict[str, Any]) -> None:
        counts = ", ".join(f"{k}: {v}" for k, v in result["by_status"].items()) or "none"
        console.print(Text(f"{result['handoffs']} handoff record(s) ({counts})"))
        if result["redactions"]:
            console.print(redactions_table(result["redactions"]))
        table = Table("handoff", "kind", "ref", box=None, pad_edge=False)
        for ref in result["external_refs"]:
            table.add_row(ref["handoff"][-8:], ref["kind"], Text(str(ref["ref"])))
        if result["external_refs"]:
            console.print(table)
        for item in result["sensitive_artifacts"]:
            console.print(Text(f"sensitive artifact: {item['path']}", style="yellow"))

    run(as_json, lambda: maintenance.audit(root), render)


@cli.command("migrate")
@click.option("--dry-run", is_flag=True, help="Only report what would move.")
@root_option
@json_option
def migrate_command(root: Path | None, as_json: bool, dry_run: bool) -> None:
    """Move a legacy .threadline/ project to .baton/ (rewrites only $schema)."""

    def render(console: Console, result: dict[str, Any]) -> None:
        _panel(console, "baton migrate", _fields(result))

    run(as_json, lambda: maintenance.migrate(root, dry_run=dry_run), render)
