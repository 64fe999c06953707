"""Loading through Hermes' real PluginManager with a temp HERMES_HOME: entry point and plugin directory."""

from __future__ import annotations

import copy
import importlib
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from batontest import assets
from batontest.hermes_home import hermes_config, write_hermes_home
from hermes_cli.plugins import PluginManager

from baton_engine.agent import runtime, startup
from baton_engine.hermes import plugin
from baton_engine.hermes.doctor import check_engine_copy, check_selection, check_settings
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.install import write_plugin_dir

pytestmark = pytest.mark.hermes


def _config(**changes: object) -> dict:
    config = hermes_config(base_url="http://127.0.0.1:9/v1", model="qwen3-test", context_length=65536)
    config.update(changes)
    return config


def _patched() -> bool:
    return hasattr(importlib.import_module("agent.turn_context").estimate_request_tokens_rough, "__baton_original__")


def test_entry_point_registers_engine_skill_middleware_and_patches(hermes_home: Path) -> None:
    write_hermes_home(hermes_home, _config())
    manager = PluginManager()
    manager.discover_and_load()
    loaded = manager._plugins["baton"]
    assert loaded.enabled and loaded.error is None and loaded.manifest.source == "entrypoint"
    engine = manager._context_engine
    assert isinstance(engine, BatonContextEngine) and engine.context_length == 65536
    assert copy.deepcopy(engine).name == "baton"  # what agent init does for every agent
    assert "baton:baton" in manager._plugin_skills
    assert manager._plugin_skills["baton:baton"]["path"].read_text().startswith("---\nname: baton")
    assert "llm_request" in loaded.middleware_registered
    assert _patched()
    installed = engine.get_status()["exact_estimators"]["installed"]
    # what each tested Hermes has (docs/hermes-versions.md): 0.19's estimators in conversation_loop; 0.22's
    # pre-API estimate in model_metadata and its usage anchor in three places; both check a summariser's window and
    # validate every auxiliary reply
    expected = {"hermes-0.19.0": 8, "hermes-0.22.2.post1": 10}[engine.compaction.adapter_version]
    assert "agent.conversation_compression.check_compression_model_feasibility" in installed, installed
    assert "agent.auxiliary_client._validate_llm_response" in installed, installed
    assert "agent.turn_context.estimate_request_tokens_rough" in installed and len(installed) == expected, installed
    observers = [name for name in installed if name.endswith(".classify_api_error")]  # the refusal observer
    assert observers in (["agent.conversation_loop.classify_api_error"], ["agent.turn_api_error.classify_api_error"])
    assert check_selection(hermes_home)["status"] == "pass"


def test_plugin_directory_works_without_the_entry_point(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_hermes_home(hermes_home, _config())
    write_plugin_dir(hermes_home)
    source = (hermes_home / "plugins" / "baton" / "__init__.py").read_text()
    assert "MemoryProvider" not in source and "register_memory_provider" not in source
    monkeypatch.setattr(PluginManager, "_scan_entry_points", lambda self: [])  # a copy-only install
    manager = PluginManager()
    manager.discover_and_load()
    loaded = manager._plugins["baton"]
    assert loaded.enabled and loaded.error is None and loaded.manifest.source == "user"
    assert isinstance(manager._context_engine, BatonContextEngine)


def test_not_enabled_means_no_engine_and_doctor_says_why(hermes_home: Path) -> None:
    write_hermes_home(hermes_home, _config(plugins={"enabled": []}))
    manager = PluginManager()
    manager.discover_and_load()
    assert manager._context_engine is None and not _patched()
    check = check_selection(hermes_home)
    assert check["status"] == "fail" and "not in plugins.enabled" in check["detail"]
    assert "falls back to its built-in compressor" in check["detail"]


def test_name_mismatch_and_unselected_engine(hermes_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_hermes_home(hermes_home, _config(context={"engine": "Baton"}))
    assert "names must match exactly" in check_selection(hermes_home)["detail"]
    write_hermes_home(hermes_home, _config(context={"engine": "compressor"}))
    caplog.set_level(logging.WARNING, logger="baton_engine.hermes")
    manager = PluginManager()
    manager.discover_and_load()
    assert isinstance(manager._context_engine, BatonContextEngine)  # registered, never auto-activated
    assert not _patched()
    assert any("NOT active" in record.getMessage() for record in caplog.records)
    assert check_selection(hermes_home)["status"] == "warn"


def test_invalid_setting_fails_at_start_up_naming_the_key(hermes_home: Path) -> None:
    write_hermes_home(hermes_home, _config(baton={"brief_max_tokens": 0}))
    manager = PluginManager()
    manager.discover_and_load()
    loaded = manager._plugins["baton"]
    assert not loaded.enabled and "baton.brief_max_tokens" in loaded.error
    assert manager._context_engine is None and not _patched()
    assert "baton.brief_max_tokens" in check_settings(hermes_home)["detail"]
    write_hermes_home(hermes_home, _config(baton={"typo_key": 1}))
    assert "baton.typo_key" in check_settings(hermes_home)["detail"]


def test_a_bad_value_that_stops_baton_is_said_on_the_terminal(hermes_home: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    write_hermes_home(hermes_home, _config(baton={"brief_max_tokens": 0}))
    PluginManager().discover_and_load()
    err = capsys.readouterr().err
    assert "baton: NOT started: baton.brief_max_tokens in config.yaml must be an integer" in err
    assert "Hermes uses its built-in compressor" in err


def test_a_typo_key_is_ignored_loudly_and_baton_still_runs(hermes_home: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Before: Hermes dropped the plugin (errors.log only) and fell back to its compressor."""
    write_hermes_home(hermes_home, _config(baton={"fresh_tail_token": 6000, "min_output_tokens": 2000}))
    manager = PluginManager()
    manager.discover_and_load()
    loaded = manager._plugins["baton"]
    assert loaded.enabled and loaded.error is None and _patched()
    engine = manager._context_engine
    assert isinstance(engine, BatonContextEngine)
    err = capsys.readouterr().err
    assert "baton: baton.fresh_tail_token in config.yaml is not a setting (ignored); " \
           "did you mean baton.fresh_tail_tokens?" in err
    status = engine.get_status()
    said = [line.removeprefix("baton: ") for line in err.splitlines() if line.startswith("baton: ")]
    assert status["settings_ignored"] == said and len(said) == 1  # the terminal line is the status entry
    assert {row["setting"]: row["value"] for row in status["settings"]}["min_output_tokens"] == "2000"
    check = check_settings(hermes_home)
    assert check["status"] == "fail" and "did you mean baton.fresh_tail_tokens?" in check["detail"]


@pytest.mark.parametrize("how", ["config.yaml path", "env backend"])
def test_a_tokenizer_that_cannot_start_is_said_at_start_in_status_and_doctor(
        hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        how: str) -> None:
    """The decision (docs/troubleshooting.md): Baton runs on estimates and says so, the same in the CLI."""
    missing = tmp_path / "models" / "qwen3"
    if how == "config.yaml path":
        write_hermes_home(hermes_home, _config(baton={"tokenizer": {"backend": "hf", "path": str(missing)}}))
        expected = [f"{str(missing)!r} (no such directory)", "set by baton.tokenizer.backend in config.yaml"]
    else:
        write_hermes_home(hermes_home, _config())
        monkeypatch.setenv("BATON_TOKENIZER_BACKEND", "nosuch")
        expected = ["set by BATON_TOKENIZER_BACKEND", "'nosuch' is not installed"]
    manager = PluginManager()
    manager.discover_and_load()
    assert manager._plugins["baton"].enabled and _patched()
    assert startup.started(timeout=120)  # the start-up build says it on its own thread
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("baton: ")]
    assert len(lines) == 1 and all(part in lines[0] for part in expected), lines
    assert "Baton counts with estimates" in lines[0]
    engine = manager._context_engine
    assert engine.get_status()["tokenizer"]["error"] == lines[0].removeprefix("baton: ")
    counted = engine.counting().count_chat({"messages": [{"role": "user", "content": "hello"}]})
    assert counted.exact is False and counted.fallback_reason == lines[0].removeprefix("baton: ")
    from baton_engine.hermes.doctor import check_tokenizer

    check = check_tokenizer(hermes_home)
    assert check["status"] == "fail" and all(part in check["detail"] for part in expected)


def test_the_plugin_load_does_not_wait_for_the_tokenizer(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Hermes 0.22 abandons a plugin whose import + register() overrun ``plugins.load_timeout_seconds`` (10 s by
    default) and uses its own compressor; the hf backend's start took 14.7 s on a loaded 2-core machine, so the
    load timed out there and the agent ran without Baton. The tokenizer's build is held here until Hermes' loader
    has returned: the load must not wait for it (0.19 has no deadline: it would wait for the hold's end)."""
    write_hermes_home(hermes_home, _config(baton={"tokenizer": {"backend": "hf", "path": str(assets.qwen3_dir())}}))
    release, held = threading.Event(), threading.Event()
    build = runtime.build_backend

    def held_build(config: Any) -> Any:
        release.wait(timeout=30)
        held.set()  # the hold is over (released, or 30 s passed)
        return build(config)

    monkeypatch.setattr(runtime, "build_backend", held_build)
    caplog.set_level(logging.INFO, logger="baton_engine")
    manager = PluginManager()
    manager.discover_and_load()
    loaded_before_the_build = not held.is_set()
    release.set()
    assert loaded_before_the_build and manager._plugins["baton"].error is None
    assert isinstance(manager._context_engine, BatonContextEngine)
    assert startup.started(timeout=120)
    assert "Baton context engine ACTIVE (context.engine: baton): counting with hf:qwen3" in caplog.text
    counted = manager._context_engine.counting().count_chat({"messages": [{"role": "user", "content": "hello"}]})
    assert counted.exact and counted.tokens


def test_engine_copy_check_passes() -> None:
    assert check_engine_copy()["status"] == "pass"


def test_a_plugin_directory_for_other_hermes_versions_is_skipped_and_doctor_says_so(hermes_home: Path) -> None:
    """0.22's loader gates a plugin directory on its requires_hermes (0.19 has no gate and loads it)."""
    from baton_engine.hermes.config import installed_hermes_version
    from baton_engine.hermes.doctor import check_plugin_dir

    write_hermes_home(hermes_home, _config())
    target = Path(write_plugin_dir(hermes_home)["path"])
    manifest = target / "plugin.yaml"
    manifest.write_text(manifest.read_text().replace("requires_hermes: '>=0.19.0, <0.23'", "requires_hermes: '>=9.0'"))
    manager = PluginManager()
    manager.discover_and_load()
    loaded = manager._plugins["baton"]
    check = check_plugin_dir(hermes_home)
    if (installed_hermes_version() or "").startswith("0.19."):
        assert loaded.enabled and isinstance(manager._context_engine, BatonContextEngine)
        assert check["status"] == "fail" and "another Baton version" in check["detail"]
        return
    assert loaded.error is not None and "requires hermes >=9.0" in loaded.error, loaded.error
    assert manager._context_engine is None
    assert check["status"] == "fail" and "Hermes skips" in check["detail"] and "requires hermes >=9.0, running 0.22" \
        in check["detail"] and "falls back to its built-in compressor" in check["detail"]
