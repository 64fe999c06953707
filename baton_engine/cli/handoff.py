"""Handoff commands of ``baton``: capture, record, validate, ready, list, show, resume, fork, merge.

Each command only parses flags, calls one ``baton_engine.operations.handoffs`` function (the checkpoint:
``handoff/checkpoint.py``) and prints its dict (``--json``) or a rich view of it; the behaviour lives there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import click
from rich.console import Console
from rich.text import Text

from baton_engine.cli import cli
from baton_engine.cli.output import (
    checks_table,
    dumps,
    handoffs_table,
    json_option,
    load_json_file,
    owner_text,
    redactions_table,
    root_option,
    run,
)
from baton_engine.errors import UserInputError
from baton_engine.handoff.checkpoint import checkpoint_create as create_checkpoint  # the command below has its name
from baton_engine.handoff.model import EvidenceType, Priority, Status
from baton_engine.handoff.owner import Scope
from baton_engine.operations import handoffs

STATUSES = list(get_args(Status))


def _handoff_line(console: Console, verb: str, handoff: dict[str, Any]) -> None:
    console.print(Text.assemble((verb, "bold green"), f" {handoff['short_id']} ({handoff['status']}) ",
                                Text(handoff["title"])))


def _show_redactions(console: Console, redactions: list[dict[str, Any]]) -> None:
    if redactions:
        console.print(Text(f"{len(redactions)} value(s) redacted before writing:", style="yellow"))
        console.print(redactions_table(redactions))


# --- checkpoint -------------------------------------------------------------------------------------------------


@cli.group()
def checkpoint() -> None:
    """Capture the current state as a draft handoff."""


def _flag_payload(options: dict[str, Any]) -> dict[str, Any]:
    """Flags as a capture payload; only flags the user gave are included (so they override --input)."""
    payload: dict[str, Any] = {}
    for flag, key in (("title", "title"), ("objective", "objective"), ("state", "current_state"),
                      ("why", "why_it_matters")):
        if options[flag] is not None:
            payload[key] = options[flag]
    for flag, key in (("completed", "completed"), ("scope", "scope"), ("constraint", "constraints"),
                      ("dod", "definition_of_done")):
        if options[flag]:
            payload[key] = list(options[flag])
    if options["next"]:
        payload["open_items"] = [{"description": text, "suggested_action": text} for text in options["next"]]
    if options["decision"]:
        payload["decisions"] = [{"decision": text} for text in options["decision"]]
    if options["artifact"]:
        payload["artifacts"] = [{"path": path} for path in options["artifact"]]
    if options["risk"]:
        payload["risks"] = [{"description": text} for text in options["risk"]]
    return payload


def _merged_payload(input_file: str | None, options: dict[str, Any]) -> dict[str, Any]:
    base: Any = {}
    if input_file is not None:
        base = load_json_file(input_file)
        if not isinstance(base, dict):
            raise UserInputError(f"{input_file}: expected a JSON object with the capture payload")
    flags = _flag_payload(options)
    summary = base.get("summary")
    if isinstance(summary, dict) and any(k in flags for k in ("current_state", "completed", "why_it_matters")):
        base = {**base, "summary": {k: v for k, v in summary.items() if k not in flags}}
    work = base.get("work")
    if isinstance(work, dict):
        base = {**base, "work": {k: v for k, v in work.items() if k not in flags}}
    return {**base, **flags}


@checkpoint.command("create")
@click.option("--title", help="Short title of the work.")
@click.option("--objective", help="What the work must achieve.")
@click.option("--state", help="Where the work stands now (current state).")
@click.option("--why", help="Why the current state matters.")
@click.option("--next", "next", multiple=True, help="A next action (repeatable); becomes an open item.")
@click.option("--completed", multiple=True, help="A completed step (repeatable).")
@click.option("--scope", multiple=True, help="A scope entry (repeatable).")
@click.option("--constraint", multiple=True, help="A non-negotiable constraint (repeatable).")
@click.option("--dod", multiple=True, help="A definition-of-done entry (repeatable).")
@click.option("--decision", multiple=True, help="A decision taken (repeatable).")
@click.option("--artifact", multiple=True, help="A changed file, relative to the root (repeatable).")
@click.option("--risk", multiple=True, help="A known risk (repeatable).")
@click.option("--input", "input_file", help="JSON capture payload file ('-' for stdin); flags override it.")
@root_option
@json_option
def checkpoint_create(root: Path | None, as_json: bool, input_file: str | None, **options: Any) -> None:
    """Create a redacted draft handoff from flags and/or a JSON payload."""

    def render(console: Console, result: dict[str, Any]) -> None:
        _handoff_line(console, "draft created", result["handoff"])
        console.print(Text(f"written to {result['path']}"))
        _show_redactions(console, result["redactions"])
        console.print(Text(f"next: baton handoff validate {result['handoff']['short_id']}", style="dim"))

    run(as_json, lambda: create_checkpoint(root, _merged_payload(input_file, options)), render)


# --- record -----------------------------------------------------------------------------------------------------


@cli.group()
def record() -> None:
    """Add a decision, evidence, failed attempt or open item to a draft."""


def _record(root: Path | None, as_json: bool, ref: str, kind: str, input_file: str | None,
            fields: dict[str, Any]) -> None:
    def item() -> dict[str, Any]:
        data: Any = load_json_file(input_file) if input_file else {}
        if not isinstance(data, dict):
            raise UserInputError(f"{input_file}: expected a JSON object describing one {kind}")
        given = {key: list(value) if isinstance(value, tuple) else value for key, value in fields.items()
                 if value not in (None, ())}
        return {**data, **given}

    def render(console: Console, result: dict[str, Any]) -> None:
        done = "already recorded as" if result["already_recorded"] else "recorded"
        _handoff_line(console, f"{done} {result['item']['id']} in", result["handoff"])
        _show_redactions(console, result["redactions"])

    run(as_json, lambda: handoffs.record_item(root, ref, kind, item()), render)


_INPUT = click.option("--input", "input_file", help="JSON object with the item's fields ('-' for stdin).")


@record.command("decision")
@click.argument("ref")
@click.option("--text", "decision", help="The decision.")
@click.option("--rationale")
@click.option("--alternative", "alternatives_considered", multiple=True, help="An alternative considered.")
@click.option("--evidence-id", "evidence_ids", multiple=True, help="Supporting evidence id (E-###).")
@_INPUT
@root_option
@json_option
def record_decision(root: Path | None, as_json: bool, ref: str, input_file: str | None, **fields: Any) -> None:
    """Record a decision (id D-### assigned)."""
    _record(root, as_json, ref, "decision", input_file, fields)


@record.command("evidence")
@click.argument("ref")
@click.option("--type", "type", type=click.Choice(get_args(EvidenceType)))
@click.option("--claim", help="What the evidence shows.")
@click.option("--ref", "ref_", help="Command, file, commit sha or URL the claim rests on.")
@click.option("--result", help="Short result, e.g. '42 passed'.")
@click.option("--output-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Full output: stored as a digest plus a bounded redacted summary.")
@_INPUT
@root_option
@json_option
def record_evidence(root: Path | None, as_json: bool, ref: str, input_file: str | None, ref_: str | None,
                    output_file: Path | None, **fields: Any) -> None:
    """Record evidence (id E-### assigned)."""
    fields["ref"] = ref_
    if output_file is not None:
        try:
            fields["output"] = output_file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise click.BadParameter(f"cannot read {output_file} ({type(exc).__name__})") from None
    _record(root, as_json, ref, "evidence", input_file, fields)


@record.command("failed-attempt")
@click.argument("ref")
@click.option("--attempt", help="What was tried.")
@click.option("--outcome", help="Why it failed.")
@click.option("--evidence-id", "evidence_ids", multiple=True)
@_INPUT
@root_option
@json_option
def record_failed_attempt(root: Path | None, as_json: bool, ref: str, input_file: str | None,
                          **fields: Any) -> None:
    """Record a failed attempt that must not be retried blindly (id F-### assigned)."""
    _record(root, as_json, ref, "failed_attempt", input_file, fields)


@record.command("open-item")
@click.argument("ref")
@click.option("--description")
@click.option("--priority", type=click.Choice(get_args(Priority)))
@click.option("--action", "suggested_action", help="The suggested next action.")
@click.option("--blocked-by", "blocked_by", multiple=True)
@click.option("--acceptance", "acceptance_check", help="How to tell it is done.")
@_INPUT
@root_option
@json_option
def record_open_item(root: Path | None, as_json: bool, ref: str, input_file: str | None, **fields: Any) -> None:
    """Record an open item (id O-### assigned)."""
    _record(root, as_json, ref, "open_item", input_file, fields)


# --- handoff ----------------------------------------------------------------------------------------------------


@cli.group()
def handoff() -> None:
    """Validate, promote, list and show handoff records."""


def _render_validation(verb: str) -> Any:
    def render(console: Console, result: dict[str, Any]) -> None:
        _handoff_line(console, verb, result["handoff"])
        validation = result["validation"]
        console.print(Text(f"validation: {validation['status']}", style="bold"))
        console.print(checks_table(validation["checks"]))
        if validation["freshness"] and validation["freshness"]["stale"]:
            console.print(Text("STALE: the repository moved since capture", style="bold yellow"))

    return render


@handoff.command("validate")
@click.argument("ref")
@click.option("--recheck", multiple=True, help="Re-run an allowlisted command as evidence (repeatable).")
@root_option
@json_option
def handoff_validate(root: Path | None, as_json: bool, ref: str, recheck: tuple[str, ...]) -> None:
    """Run the ten validation checks (exit 3 on failure, 5 on a policy block)."""
    run(as_json, lambda: handoffs.validate_handoff(root, ref, recheck=list(recheck) or None),
        _render_validation("validated"))


@handoff.command("ready")
@click.argument("ref")
@click.option("--accept-warnings", metavar="REASON", help="Promote despite warnings, recording why.")
@root_option
@json_option
def handoff_ready(root: Path | None, as_json: bool, ref: str, accept_warnings: str | None) -> None:
    """Validate and mark ready (immutable from then on)."""
    run(as_json, lambda: handoffs.ready_handoff(root, ref, accept_warnings=accept_warnings),
        _render_validation("ready"))


_PLATFORM = click.option("--platform", help="Only handoffs written on this Hermes platform (cli, telegram, ...).")
_SESSION_KEY = click.option("--session-key", "conversation_id", metavar="KEY",
                            help="Only one conversation's handoffs: its gateway session key (or the stored "
                                 "sha256: hash shown in the owner column).")


@handoff.command("list")
@click.option("--status", type=click.Choice(STATUSES))
@_PLATFORM
@_SESSION_KEY
@root_option
@json_option
def handoff_list(root: Path | None, as_json: bool, status: str | None, platform: str | None,
                 conversation_id: str | None) -> None:
    """List handoff records, oldest first, with their owners."""

    def render(console: Console, result: dict[str, Any]) -> None:
        if result["handoffs"]:
            console.print(handoffs_table(result["handoffs"]))
        else:
            console.print("no handoffs" + (f" with status {status}" if status else ""))
        for problem in result["problems"]:
            console.print(Text(f"unreadable: {problem['path']}: {problem['problem']}", style="yellow"))

    scope = Scope.filter(platform, conversation_id)
    run(as_json, lambda: handoffs.list_handoffs(root, status=status, scope=scope), render)


@handoff.command("show")
@click.argument("ref")
@click.option("--format", "fmt", type=click.Choice(list(handoffs.SHOW_FORMATS)), default="json",
              show_default=True)
@root_option
@json_option
def handoff_show(root: Path | None, as_json: bool, ref: str, fmt: str) -> None:
    """Show one record as JSON, YAML, Markdown or the resume prompt."""

    def render(console: Console, result: dict[str, Any]) -> None:
        content = result["content"]
        click.echo(dumps(content) if fmt == "json" else content.rstrip("\n"))

    run(as_json, lambda: handoffs.show_handoff(root, ref, format=fmt), render)


# --- resume and lineage -----------------------------------------------------------------------------------------


@cli.command("resume")
@click.argument("ref", required=False)
@click.option("--format", "fmt", type=click.Choice(list(handoffs.RESUME_FORMATS)), default="prompt",
              show_default=True)
@click.option("--mark-resumed", is_flag=True, help="Mark the handoff resumed after rendering.")
@click.option("--max-tokens", type=int, help="Token budget of the brief (default: the brief_max_tokens setting).")
@_PLATFORM
@_SESSION_KEY
@root_option
@json_option
def resume_command(root: Path | None, as_json: bool, ref: str | None, fmt: str, mark_resumed: bool,
                   max_tokens: int | None, platform: str | None, conversation_id: str | None) -> None:
    """Print the resume brief (latest ready handoff by default; one owner's with --platform / --session-key),
    STALE first when the tree moved. The owner goes to stderr: stdout stays the brief alone."""

    def render(console: Console, result: dict[str, Any]) -> None:
        if fmt == "json":
            click.echo(dumps(result))
            return
        click.echo(f"owner: {owner_text(result['handoff'].get('owner'))}", err=True)
        click.echo(result["brief"]["text"].rstrip("\n"))

    scope = Scope.filter(platform, conversation_id)
    run(as_json, lambda: handoffs.resume(root, ref, format=fmt, mark_resumed=mark_resumed,
                                           max_tokens=max_tokens, scope=scope), render)


@cli.command("fork")
@click.argument("ref")
@click.option("--label", required=True, help="Name of the new branch of work.")
@root_option
@json_option
def fork_command(root: Path | None, as_json: bool, ref: str, label: str) -> None:
    """Start a new draft branching from REF (REF itself is unchanged)."""

    def render(console: Console, result: dict[str, Any]) -> None:
        _handoff_line(console, "forked", result["handoff"])

    run(as_json, lambda: handoffs.fork(root, ref, label=label), render)


@cli.command("merge")
@click.argument("refs", nargs=-1, required=True)
@click.option("--resolution", help="Written resolution of conflicting decisions.")
@root_option
@json_option
def merge_command(root: Path | None, as_json: bool, refs: tuple[str, ...], resolution: str | None) -> None:
    """Join two or more handoffs into a new draft (needs --resolution when decisions conflict)."""

    def render(console: Console, result: dict[str, Any]) -> None:
        _handoff_line(console, "merged", result["handoff"])

    run(as_json, lambda: handoffs.merge(root, list(refs), resolution=resolution), render)
