"""Doctor's rows for how Baton is installed: settings written where Hermes 0.22's plugin hub puts them, and a plugin
directory left from another Baton. Both read files only (no Hermes needed)."""

from __future__ import annotations

from pathlib import Path

import yaml

from baton_engine.hermes.doctor import check_plugin_dir, check_settings
from baton_engine.hermes.install import plugin_target, write_plugin_dir


def test_a_setting_under_plugins_entries_fails_naming_where_it_belongs(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({
        "plugins": {"enabled": ["baton"], "entries": {"baton": {"settings": {"fresh_tail_tokens": 6000}}}},
        "baton": {"brief_max_tokens": 1200}}))
    check = check_settings(tmp_path, tmp_path)
    assert check["status"] == "fail"
    assert "plugins.entries.baton.settings.fresh_tail_tokens is not read by Baton: move it to " \
           "baton.fresh_tail_tokens" in check["detail"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"baton": {"fresh_tail_tokens": 6000}}))
    assert check_settings(tmp_path, tmp_path)["status"] == "pass"


def test_the_plugin_directory_row_follows_the_installed_baton(tmp_path: Path) -> None:
    assert check_plugin_dir(tmp_path)["status"] == "skipped"
    write_plugin_dir(tmp_path)
    assert check_plugin_dir(tmp_path)["status"] == "pass" and "(current)" in check_plugin_dir(tmp_path)["detail"]
    (plugin_target(tmp_path) / "plugin.yaml").write_text("name: baton\nversion: 0.0.9\n")
    stale = check_plugin_dir(tmp_path)
    assert stale["status"] == "fail" and "run `baton hermes install` to refresh it" in stale["detail"]
    write_plugin_dir(tmp_path, link=True)
    assert "(linked)" in check_plugin_dir(tmp_path)["detail"]
