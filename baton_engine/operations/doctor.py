"""``doctor``: the core's environment and project health checks, run from an explicit list.

Why an explicit list (``CORE_CHECKS``): an edge adds its own (``baton doctor`` adds ``hermes.doctor.CHECKS``)
without anything being registered by importing a module.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from baton_engine.errors import BatonError
from baton_engine.handoff import store
from baton_engine.handoff.config import load_config
from baton_engine.metrics import read as read_metrics
from baton_engine.operations.context import effective_settings, project_config
from baton_engine.settings import describe_line
from baton_engine.tokenizer_check import check_tokenizer
from baton_engine.tokens.plugins import discover

DoctorCheck = Callable[[Path], dict[str, str]]


def _check(name: str, status: str, detail: str) -> dict[str, str]:
    return {"name": name, "status": status, "detail": detail}


def _check_python(_start: Path) -> dict[str, str]:
    import sys

    version = ".".join(str(part) for part in sys.version_info[:3])
    ok = sys.version_info >= (3, 11)
    return _check("python", "pass" if ok else "fail", f"Python {version}" + ("" if ok else "; Baton needs >= 3.11"))


def _check_git(start: Path) -> dict[str, str]:
    from baton_engine.handoff import gitinfo

    if shutil.which("git") is None:
        return _check("git", "warn", "git not found on PATH; repository state and freshness are unavailable")
    if not gitinfo.is_git_repo(start):
        return _check("git", "warn", "not inside a git work tree; freshness can only compare artifact hashes")
    return _check("git", "pass", "git work tree found")


def _check_project(start: Path) -> dict[str, str]:
    paths = store.find_project_root(start)
    if paths is None:
        return _check("project", "fail", "no .baton/ found; run `baton init` in the project root")
    legacy = " (legacy .threadline/; run `baton migrate`)" if paths.legacy else ""
    return _check("project", "warn" if paths.legacy else "pass", f"project data in {paths.data_dir.name}/{legacy}")


def _check_config(start: Path) -> dict[str, str]:
    paths = store.find_project_root(start)
    if paths is None:
        return _check("config", "skipped", "no project")
    try:
        load_config(paths.data_dir)
    except BatonError as exc:
        return _check("config", "fail", str(exc))
    return _check("config", "pass", "config.json valid (or defaults)")


def _check_records(start: Path) -> dict[str, str]:
    paths = store.find_project_root(start)
    if paths is None:
        return _check("records", "skipped", "no project")
    listing = store.HandoffStore(paths).list()
    if listing.problems:
        return _check("records", "warn", f"{len(listing.entries)} readable, {len(listing.problems)} unreadable "
                      "(see `baton handoff list`)")
    return _check("records", "pass", f"{len(listing.entries)} readable handoff record(s)")


VERDICT_STATUS = {"exact": "pass", "estimate": "warn", "failing": "fail"}


def _check_tokenizer(start: Path) -> dict[str, str]:
    """The configured tokenizer built and asked to count one request: exact / estimate / failing, and why."""
    try:
        verdict = check_tokenizer(effective_settings(project_config(start)))
    except BatonError as exc:
        return _check("tokenizer", "fail", str(exc))
    detail = f"{verdict.verdict}: {verdict.reason}"
    broken = discover().broken
    if broken:
        names = ", ".join(item.describe() for item in broken)
        status = "fail" if verdict.verdict == "failing" else "warn"
        return _check("tokenizer", status, f"{detail}; plugin(s) failed to import: {names}")
    return _check("tokenizer", VERDICT_STATUS[verdict.verdict], detail)


def _check_settings(start: Path) -> dict[str, str]:
    """Every effective setting and where it came from (env variable, config file key or default)."""
    try:
        settings = effective_settings(project_config(start))
    except BatonError as exc:
        return _check("settings", "fail", str(exc))
    if settings.ignored:
        return _check("settings", "fail", "; ".join(settings.ignored))
    return _check("settings", "pass", describe_line(settings))


def _check_route(start: Path) -> dict[str, str]:
    """What the provider said of Baton's counts in the latest session that saw a response (its metrics log):
    confirmed, or calibrated with how far off the tokenizer is and what to set."""
    paths = store.find_project_root(start)
    if paths is None:
        return _check("route", "skipped", "no project")
    check = read_metrics.latest_route_check(paths.data_dir)
    if check is None:
        return _check("route", "skipped", "no session has reported a prompt size yet (run one, then doctor again)")
    seen = (f"session {check.get('session')}: {check.get('requests_seen')} response(s), last counted "
            f"{check.get('last_counted')} vs reported {check.get('last_reported')} (ratio {check.get('ratio')})")
    cut = check.get("last_truncation")
    if check.get("truncations") and isinstance(cut, dict):
        return _check("route", "warn", f"the server cut {check['truncations']} prompt(s) to its window without an "
                      f"error (last: counted {cut.get('counted')}, reported {cut.get('reported')}, window "
                      f"{cut.get('window')}): raise the server's window (Ollama: PARAMETER num_ctx in a Modelfile or "
                      f"OLLAMA_CONTEXT_LENGTH) and set model.context_length to it; {seen}")
    if check.get("verdict") == "calibrated":
        return _check("route", "warn", f"calibrated: {check.get('advice') or 'counts differ from the provider'}; "
                      f"{seen}")
    if check.get("verdict") == "confirmed":
        return _check("route", "pass", f"confirmed: the provider's sizes agree with Baton's; {seen}")
    return _check("route", "skipped", f"{check.get('verdict')}: not confirmed yet; {seen}")


CORE_CHECKS: tuple[DoctorCheck, ...] = (
    _check_python, _check_git, _check_project, _check_config, _check_records, _check_tokenizer, _check_settings,
    _check_route)


def doctor(start: Path | str | None = None, checks: Sequence[DoctorCheck] = CORE_CHECKS) -> dict[str, Any]:
    """Environment and project health; ``ok`` is false when any check fails.

    ``checks`` is the explicit list to run: the core's, plus what an edge adds (``baton doctor`` adds
    ``hermes.doctor.CHECKS``); nothing is registered by importing a module.
    """
    where = Path(start or ".").resolve()
    checks = [check(where) for check in checks]
    return {"ok": all(c["status"] != "fail" for c in checks), "checks": checks}
