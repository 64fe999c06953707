"""Inside Hermes the engine counts and budgets with the one precedence of ``settings.load_settings``:
BATON_* env > config.yaml ``baton:`` > the ``.baton/config.json`` of the project Hermes runs in > default.

Loaded through Hermes' real PluginManager in the project's working directory (as `hermes` is started there),
then compared with what `baton` itself answers in that project: the same counter, the same brief budget.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from batontest import assets
from batontest.baton_cli import run_baton
from batontest.hermes_home import hermes_config, initialised_project, write_hermes_home
from hermes_cli.plugins import PluginManager

from baton_engine.agent.runtime import get_runtime
from baton_engine.hermes.doctor import check_settings
from baton_engine.hermes.engine import BatonContextEngine

pytestmark = pytest.mark.hermes
MESSAGES = [{"role": "user", "content": "Speed up the importer"},
            {"role": "assistant", "content": "Profiling shows the parser dominates."},
            {"role": "user", "content": "Go ahead"},
            {"role": "assistant", "content": "Done with step one."},
            {"role": "user", "content": "Next"}]
PROJECT_LAYER = {"tokenizer": {"backend": "tiktoken", "model": "gpt-4"}, "brief": {"max_tokens": 300}}


def _project_config(project: Path, layer: dict[str, Any]) -> None:
    path = project / ".baton" / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **layer}), encoding="utf-8")


def _engine(hermes_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch,
            baton: dict[str, Any] | None = None) -> BatonContextEngine:
    write_hermes_home(hermes_home, hermes_config(base_url="http://127.0.0.1:9/v1", model="qwen3-test",
                                                 context_length=65536, baton=baton))
    monkeypatch.chdir(project)
    manager = PluginManager()
    manager.discover_and_load()
    loaded = manager._plugins["baton"]
    assert loaded.enabled and loaded.error is None, loaded.error
    engine = manager._context_engine
    assert isinstance(engine, BatonContextEngine)
    engine.on_session_start("settings-session")
    return engine


def _origins(engine: BatonContextEngine) -> dict[str, tuple[str, str]]:
    return {row["setting"]: (row["value"], row["origin"]) for row in engine.get_status()["settings"]}


def _resume_after_a_compaction(engine: BatonContextEngine) -> dict[str, Any]:
    engine.compress(list(MESSAGES))
    assert engine.get_status()["latest_handoff"]["status"] == "ready"
    return json.loads(engine.handle_tool_call("baton_resume", {}))


def test_the_projects_tokenizer_and_brief_budget_are_the_engines(hermes_home: Path, project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _project_config(project, PROJECT_LAYER)
    engine = _engine(hermes_home, project, monkeypatch)
    assert engine.get_status()["tokenizer"]["source"] == "tiktoken:cl100k_base"
    origins = _origins(engine)
    assert origins["backend"] == ("tiktoken", "tokenizer.backend in .baton/config.json")
    assert origins["brief_max_tokens"] == ("300", "brief.max_tokens in .baton/config.json")
    resumed = _resume_after_a_compaction(engine)
    assert resumed["brief"]["counter_source"] == "tiktoken:cl100k_base" and resumed["brief"]["tokens"] <= 300
    cli = run_baton("resume", "--json", cwd=project)
    assert cli.data == resumed  # `baton resume` in the project: the same counter and budget as the engine
    doctor = run_baton("doctor", "--json", cwd=project).data
    tokenizer = next(check for check in doctor["checks"] if check["name"] == "tokenizer")
    assert tokenizer["detail"].startswith("estimate: tiktoken:cl100k_base runs")  # the engine's tokenizer
    settings = next(check for check in doctor["checks"] if check["name"] == "settings")
    assert "backend=tiktoken (tokenizer.backend in .baton/config.json)" in settings["detail"]
    hermes = check_settings(hermes_home, project)  # the same values: said once, in the settings row
    assert hermes["status"] == "pass" and hermes["detail"].endswith("in Hermes: the values of the settings row")


def test_config_yaml_beats_the_project_and_the_environment_beats_both(hermes_home: Path, project: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _project_config(project, PROJECT_LAYER)
    block = {"tokenizer": {"model": "gpt-4o"}, "brief_max_tokens": 400}
    engine = _engine(hermes_home, project, monkeypatch, baton=block)
    assert engine.get_status()["tokenizer"]["source"] == "tiktoken:o200k_base"
    origins = _origins(engine)
    assert origins["model"] == ("gpt-4o", "baton.tokenizer.model in config.yaml")
    assert origins["backend"] == ("tiktoken", "tokenizer.backend in .baton/config.json")  # per key, not per layer
    assert origins["brief_max_tokens"] == ("400", "baton.brief_max_tokens in config.yaml")
    assert "model=gpt-4o (baton.tokenizer.model in config.yaml)" in check_settings(hermes_home, project)["detail"]

    monkeypatch.setenv("BATON_TOKENIZER_BACKEND", "hf")
    monkeypatch.setenv("BATON_TOKENIZER_PATH", str(assets.qwen3_dir()))
    engine = _engine(hermes_home, project, monkeypatch, baton=block)
    assert engine.get_status()["tokenizer"]["source"].startswith("hf:")
    origins = _origins(engine)
    assert origins["backend"] == ("hf", "BATON_TOKENIZER_BACKEND")
    assert origins["path"] == (str(assets.qwen3_dir()), "BATON_TOKENIZER_PATH")
    resumed = _resume_after_a_compaction(engine)
    assert resumed["brief"]["counter_source"].startswith("hf:") and resumed["brief"]["tokens"] <= 400


def test_a_broken_project_setting_stops_the_plugin_naming_the_key(hermes_home: Path, project: Path) -> None:
    _project_config(project, {"brief": {"max_tokens": 50}})
    write_hermes_home(hermes_home, hermes_config(base_url="http://127.0.0.1:9/v1", model="qwen3-test"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        manager = PluginManager()
        manager.discover_and_load()
    loaded = manager._plugins["baton"]
    assert not loaded.enabled and "brief.max_tokens in .baton/config.json" in loaded.error
    check = check_settings(hermes_home, project)
    assert check["status"] == "fail" and "brief.max_tokens in .baton/config.json" in check["detail"]


def test_a_session_in_another_project_counts_with_that_projects_tokenizer(hermes_home: Path, project: Path,
                                                                         tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A gateway process starts in one directory and runs sessions in others (terminal.cwd): each session's
    counter is its own project's `.baton/config.json` tokenizer, as `baton` run in that project counts."""
    engine = _engine(hermes_home, project, monkeypatch)  # the plugin starts in `project` (no tokenizer set)
    assert engine.counting().source() == "rough"
    other = initialised_project(tmp_path / "other")
    _project_config(other, PROJECT_LAYER)
    elsewhere = BatonContextEngine(project_dir=other)
    elsewhere.on_session_start("other-session")
    assert elsewhere.counting().source() == "tiktoken:cl100k_base"
    status = elsewhere.get_status()
    assert status["tokenizer"]["source"] == "tiktoken:cl100k_base"
    assert {row["setting"]: row["origin"] for row in status["settings"]}["backend"] == \
        "tokenizer.backend in .baton/config.json"
    assert engine.counting().source() == "rough"  # the first project's sessions are unchanged


def test_a_projects_settings_are_read_once_per_request_and_an_edit_takes_effect_at_the_next(
        hermes_home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hooks of one request share one reading of the project's settings (each a directory walk); a request
    begins by reading them again, so an edited `.baton/config.json` counts from the next request on."""
    _engine(hermes_home, project, monkeypatch)
    other = initialised_project(tmp_path / "other")
    _project_config(other, PROJECT_LAYER)
    engine = BatonContextEngine(project_dir=other)
    engine.on_session_start("edited-session")
    assert engine.counting().source() == "tiktoken:cl100k_base"
    _project_config(other, {"tokenizer": {"backend": "tiktoken", "model": "gpt-4o"}})
    assert engine.counting().source() == "tiktoken:cl100k_base"  # the same request: read once
    request = {"model": "qwen3-test", "messages": list(MESSAGES), "max_tokens": 512}
    engine.requests.on_request(request, model="qwen3-test", base_url="http://127.0.0.1:9/v1", provider="custom")
    assert engine.counting().source() == "tiktoken:o200k_base"  # the next request reads the edit


def test_a_runtime_whose_settings_are_replaced_is_read_again_at_once(hermes_home: Path, project: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Held settings follow the runtime's own: a runtime given new settings (a benchmark arm's fallback threshold) is
    read again without waiting for a request."""
    engine = _engine(hermes_home, project, monkeypatch)
    runtime = get_runtime()
    assert engine.project.settings() is runtime.settings
    runtime.settings = replace(runtime.settings, fallback_token_threshold=12_345)
    assert engine.project.settings().fallback_token_threshold == 12_345
