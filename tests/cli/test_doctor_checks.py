"""`baton doctor`'s checks are an explicit list: importing a module registers nothing."""

from __future__ import annotations

import importlib
from pathlib import Path

from baton_engine.operations.doctor import CORE_CHECKS, doctor


def test_importing_the_hermes_checks_changes_nothing_and_the_cli_lists_them(tmp_path: Path) -> None:
    before = [check["name"] for check in doctor(tmp_path)["checks"]]
    hermes_doctor = importlib.import_module("baton_engine.hermes.doctor")
    importlib.import_module("baton_engine.cli")
    assert [check["name"] for check in doctor(tmp_path)["checks"]] == before
    assert not any(name.startswith("hermes.") for name in before)
    both = doctor(tmp_path, checks=(*CORE_CHECKS, *hermes_doctor.checks()))["checks"]
    assert [check["name"] for check in both][len(before):] == [
        "hermes.selection", "hermes.admission", "hermes.plugin_dir", "hermes.settings", "hermes.tokenizer",
        "hermes.window", "hermes.engine"]


def test_doctor_says_where_each_setting_came_from(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BATON_TOKENIZER_TIMEOUT_SECONDS", "3")
    check = next(c for c in doctor(tmp_path)["checks"] if c["name"] == "settings")
    assert "timeout_seconds=3.0 (BATON_TOKENIZER_TIMEOUT_SECONDS)" in check["detail"]
    assert "brief_max_tokens=1200 (default)" in check["detail"]
