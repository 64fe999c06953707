"""``baton tokens``: count a chat request file with any installed backend, list backends, check a backend
against the conformance kit, and write a new backend package.

Thin: settings + registry + counter do the work; ``cli.output.run`` prints the same dicts with ``--json``
and maps errors to the shared result shape ``{"ok": false, "error": {"kind", "message"}}`` and exit codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from baton_engine.cli import cli
from baton_engine.cli.layers import hermes_home_option, with_hermes_layer
from baton_engine.cli.output import checks_table, json_option, load_json_file, run
from baton_engine.errors import UserInputError
from baton_engine.operations.context import effective_settings, project_config
from baton_engine.settings import BatonSettings
from baton_engine.testing import run_checks
from baton_engine.testing.template import new_backend
from baton_engine.tokenizer_check import configured_by, start_failure
from baton_engine.tokens.contract import BackendConfigError, TokenizerBackend
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import Selection, backends_report, build_backend, discover, select_backend
from baton_engine.tokens.rough import ROUGH_SOURCE

CHECK_FAILED_EXIT_CODE = 1


def _chat_request(payload: Any, path: str) -> Mapping[str, Any]:
    """A request object with a ``messages`` list, or a bare list of messages."""
    if isinstance(payload, list):
        payload = {"messages": payload}
    if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
        raise UserInputError(
            f"{path}: expected a chat request object with a 'messages' list (or a JSON list of messages)"
        )
    if not all(isinstance(message, dict) for message in payload["messages"]):
        raise UserInputError(f"{path}: every item of 'messages' must be an object with a 'role'")
    tools = payload.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise UserInputError(f"{path}: 'tools' must be a list of tool schemas")
    return payload


def _settings(backend: str | None) -> BatonSettings:
    """The settings of the agent loop: env > the Hermes ``baton:`` block (when a Hermes home is named) > the
    working directory's ``.baton/config.json`` > default; ``backend`` (``--backend``) overrides the name."""
    settings = effective_settings(project_config(Path.cwd()))
    if backend is None:
        return settings
    return replace(settings, tokenizer=replace(settings.tokenizer, backend=backend))


def count_file(path: str, backend: str | None = None, *, allow_estimate: bool = False) -> dict[str, Any]:
    """Count one chat request file exactly as Baton would count it inside the agent loop.

    A configured tokenizer that cannot start, or that started and cannot count (its server down), gives the
    estimate the agent loop would then use, with the reason, and ``ok: false`` (exit 1) unless ``allow_estimate``
    (``--allow-estimate``) says an estimate is an answer; a ``--backend`` that cannot start is a usage error
    (exit 2)."""
    request = _chat_request(load_json_file(path), path)
    settings = _settings(backend)
    failure = None
    try:
        tokenizer, selection = build_backend(settings.tokenizer)
    except BackendConfigError as exc:
        if backend is not None:
            raise UserInputError(str(exc)) from None
        failure = start_failure(exc, configured_by(settings))
        tokenizer, selection = build_backend(replace(settings.tokenizer, backend=ROUGH_SOURCE))
    counter = TokenCounter(tokenizer, fallback_margin_tokens=settings.fallback_margin_tokens)
    try:
        count = counter.count_chat(request)
    finally:
        counter.close()
    if failure is not None:
        count = replace(count, fallback_reason=failure)
        selection = replace(selection, name=settings.tokenizer.backend,
                            reason="cannot start (see fallback_reason); counted with rough + margin")
    return {
        "ok": allow_estimate or (failure is None and count.fallback_reason is None),
        "file": path,
        **asdict(count),
        "backend": {"name": selection.name, "reason": selection.reason},
    }


def _build(backend: str) -> tuple[TokenizerBackend, Selection]:
    """A backend by name, configured by the settings (BATON_TOKENIZER_PATH, _URL, ...) as in the agent loop."""
    try:
        return build_backend(_settings(backend).tokenizer)
    except BackendConfigError as exc:
        raise UserInputError(str(exc)) from None


REFERENCE_EXAMPLE = "BATON_TOKENIZER_PATH=/models/yours baton tokens check NAME --reference hf"


def _build_reference(name: str) -> tuple[TokenizerBackend, Selection]:
    """The ``--reference`` backend, from the same settings; its errors say it is the reference and how its
    settings reach it (the hf reference needs BATON_TOKENIZER_PATH: the advice must work as written)."""
    installed = discover().backends
    if name.strip().lower() not in installed:
        extra = " (pip install 'baton-engine[hf]')" if name.strip().lower() == "hf" else ""
        raise UserInputError(f"reference backend {name!r} is not installed{extra}; installed: "
                             f"{', '.join(installed)}")
    try:
        return build_backend(_settings(name).tokenizer)
    except BackendConfigError as exc:
        raise UserInputError(f"the reference backend {name} cannot start: {exc}. It is built from the same "
                             f"settings as the checked backend, e.g. `{REFERENCE_EXAMPLE}`") from None


def check_backend(name: str, reference: str | None = None) -> dict[str, Any]:
    """The conformance kit against backend ``name`` (compared with backend ``reference`` when given)."""
    other = _build_reference(reference) if reference else None
    try:
        tokenizer, selection = _build(name)
        report = run_checks(tokenizer, None if other is None else other[0])  # closes ``tokenizer`` last
    finally:
        if other is not None:
            other[0].close()
    result = report.to_dict()
    result["backend"]["name"] = selection.name
    if other is not None:
        result["reference"]["name"] = other[1].name
    return result


def list_backends() -> dict[str, Any]:
    """``backends_report`` for the configured tokenizer; a configured name that is not installed makes the
    answer ``ok: false`` (exit 1) with ``configured_error`` saying why and how to fix it."""
    settings = _settings(None)
    try:
        registry = discover()
        report = backends_report(settings.tokenizer, registry)
    except BackendConfigError as exc:
        raise UserInputError(str(exc)) from None
    try:
        select_backend(settings.tokenizer, registry)
    except BackendConfigError as exc:
        return {**report, "ok": False, "configured_error": start_failure(exc, configured_by(settings))}
    return {**report, "configured_error": None}


@cli.group("tokens")
def tokens_group() -> None:
    """Exact token counts through the installed tokenizer backends."""


@tokens_group.command("count")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--backend", default=None, help="Backend name (overrides BATON_TOKENIZER_BACKEND); 'auto' selects.")
@click.option("--allow-estimate", is_flag=True,
              help="Exit 0 with the rough estimate when the configured tokenizer cannot count (default: exit 1).")
@hermes_home_option
@json_option
def count_command(file: Path, backend: str | None, allow_estimate: bool, as_json: bool,
                  hermes_home: Path | None) -> None:
    """Count a chat request JSON file, or - for stdin (messages + tools + template kwargs); exit 1 when the
    configured tokenizer cannot count it exactly as configured (an estimate), unless --allow-estimate."""

    def render(console: Console, result: dict[str, Any]) -> None:
        table = Table(box=None, show_header=False, pad_edge=False)
        tokens = "unknown" if result["tokens"] is None else str(result["tokens"])
        rows = [("tokens", tokens), ("exact", "yes" if result["exact"] else "no"), ("source", result["source"]),
                ("backend", f"{result['backend']['name']} ({result['backend']['reason']})")]
        if result["fallback_reason"]:
            rows.append(("fallback reason", result["fallback_reason"]))
        if result["max_model_len"] is not None:
            rows.append(("max model len", str(result["max_model_len"])))
        for key, value in rows:
            table.add_row(key, Text(value))
        console.print(table)

    run(as_json, lambda: with_hermes_layer(hermes_home, lambda: count_file(str(file), backend,
                                                                       allow_estimate=allow_estimate)), render,
        failed_exit_code=CHECK_FAILED_EXIT_CODE)


@tokens_group.command("backends")
@hermes_home_option
@json_option
def backends_command(as_json: bool, hermes_home: Path | None) -> None:
    """Installed backends, their distributions, and what 'auto' picks and why."""

    def render(console: Console, result: dict[str, Any]) -> None:
        table = Table("backend", "distribution", "description", box=None, pad_edge=False)
        for item in result["backends"]:
            table.add_row(item["name"], item["distribution"], Text(item["description"]))
        console.print(table)
        for item in result["broken"]:
            problem = f"{item['entry_point']} ({item['distribution']}: {item['error_type']})"
            console.print(Text(f"failed to import: {problem}", style="yellow"))
        console.print(Text(f"configured: {result['configured']}; auto picks {result['auto']['name']}: "
                           f"{result['auto']['reason']}"))
        if result["configured_error"]:
            console.print(Text(result["configured_error"], style="red"))

    run(as_json, lambda: with_hermes_layer(hermes_home, list_backends), render,
        failed_exit_code=CHECK_FAILED_EXIT_CODE)


@tokens_group.command("check")
@click.argument("name")
@click.option("--reference", default=None, metavar="NAME",
              help="A second backend (same settings) whose exact counts this one must equal, e.g. hf.")
@json_option
def check_command(name: str, reference: str | None, as_json: bool) -> None:
    """Run the conformance kit against backend NAME: exit 0 all checks pass, 1 a check failed, 2 usage error."""

    def render(console: Console, result: dict[str, Any]) -> None:
        backend = result["backend"]
        title = f"backend {backend['name']} ({backend['source']})"
        if result["reference"]:
            title += f", reference {result['reference']['name']} ({result['reference']['source']})"
        console.print(Text(title))
        console.print(checks_table(result["checks"]))
        for check in result["checks"]:
            if check["fix"]:
                console.print(Text.assemble((f"how to fix {check['name']}: ", "bold"), check["fix"]))
        failed = sum(check["status"] == "fail" for check in result["checks"])
        console.print(Text("all checks passed" if result["ok"] else f"{failed} check(s) failed",
                           style="green" if result["ok"] else "red"))

    run(as_json, lambda: check_backend(name, reference), render, failed_exit_code=CHECK_FAILED_EXIT_CODE)


@tokens_group.command("new-backend")
@click.argument("name")
@click.option("--dir", "directory", default=None, help="Where to write the package (default ./baton-backend-NAME).")
@json_option
def new_backend_command(name: str, directory: str | None, as_json: bool) -> None:
    """Write a minimal installable backend package NAME (entry point, backend class, README, kit test)."""

    def render(console: Console, result: dict[str, Any]) -> None:
        console.print(Text(f"wrote {result['distribution']} into {result['directory']}:"))
        for path in result["files"]:
            console.print(Text(f"  {path}"))
        console.print(Text("next: " + "; ".join(result["next"])))

    run(as_json, lambda: new_backend(name, directory), render)
