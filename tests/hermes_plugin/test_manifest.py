"""The plugin directory users install passes Hermes 0.22's own admission checks, and its manifest is generated.

Why the real ``hermes plugins validate`` / ``doctor``: they are the catalog's admission gate (0.22), and validate runs
``register()`` in a scratch process and compares what it registers with ``provides_middleware``; a check of our own
would only agree with itself.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from baton_engine.hermes import manifest
from baton_engine.hermes.install import write_plugin_dir
from baton_engine.settings import CONFIG_KEYS, load_settings

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "baton_engine" / "hermes" / "plugin_dir"


def test_the_committed_manifest_is_the_generated_one() -> None:
    committed = (PLUGIN_DIR / "plugin.yaml").read_text(encoding="utf-8")
    assert committed == manifest.manifest_text(), "run: python -m baton_engine.hermes.manifest"
    done = subprocess.run([sys.executable, "-m", "baton_engine.hermes.manifest", "--check"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_schema_is_every_baton_key_and_its_defaults_load() -> None:
    """Each ``baton:`` key is declared once, and every declared default is a value the settings parser accepts
    (so the schema cannot describe a type the one definition refuses)."""
    schema = yaml.safe_load((PLUGIN_DIR / "plugin.yaml").read_text(encoding="utf-8"))["config_schema"]
    assert list(schema) == list(CONFIG_KEYS)
    assert schema["fresh_tail_tokens"]["type"] == "int" and schema["share_handoffs"] == {
        "type": "bool", "default": False, "description": schema["share_handoffs"]["description"]}
    assert schema["tokenizer"]["type"] == "dict" and schema["tools"]["type"] == "list"
    defaults = {key: spec["default"] for key, spec in schema.items() if "default" in spec}
    assert len(defaults) >= 12, defaults
    settings = load_settings(env={}, hermes_block=defaults)
    assert not settings.ignored
    assert {key for key, _origin in settings.origins} == set(defaults)
    assert all(getattr(settings, key) == (tuple(value) if isinstance(value, list) else value)
               for key, value in defaults.items())


def _tested_pins() -> list[str]:
    """The Hermes versions tox's Hermes environments pin (hermes, hermes022)."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    pins = set()
    for env in ("testenv:hermes", "testenv:hermes022"):
        pins |= set(re.findall(r"^\s*hermes-agent(?:-iot)?(?:\[[\w,]+\])?==(\S+)", tox[env]["deps"], re.M))
    return sorted(pins)


def test_requires_hermes_names_the_versions_the_tests_cover() -> None:
    pins = _tested_pins()
    assert pins == ["0.19.0", "0.22.2.post1"], pins
    spec = SpecifierSet(manifest.requires_hermes().replace(" ", ""))
    assert all(pin in spec for pin in pins)
    assert min(pins) == manifest.OLDEST_TESTED and "0.18.9" not in spec and "0.23.0" not in spec


def _hermes_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    hermes = Path(sys.executable).with_name("hermes")
    return subprocess.run([str(hermes), *args], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "HERMES_HOME": str(home)}, stdin=subprocess.DEVNULL)


def _require_plugin_manager() -> None:
    from batontest.hermes_run import require_hermes

    require_hermes()
    from baton_engine.hermes.config import installed_hermes_version

    version = installed_hermes_version() or ""
    if version.startswith("0.19."):
        pytest.skip("Hermes 0.19 has no `hermes plugins validate` / `doctor` (its plugins command: install, update, "
                    "remove, list, enable, disable); the hermes022 environment runs this")


@pytest.mark.hermes
def test_hermes_validate_and_doctor_pass_on_the_repository_and_installed_directories(tmp_path: Path) -> None:
    _require_plugin_manager()
    home = tmp_path / "home"
    home.mkdir()
    installed = Path(write_plugin_dir(home)["path"])  # what `baton hermes install` writes
    for directory in (PLUGIN_DIR, installed):
        done = _hermes_cli("plugins", "validate", "--json", str(directory), home=tmp_path / "scratch")
        report = json.loads(done.stdout[done.stdout.index("{"):])
        checks = {check["name"]: check for check in report["checks"]}
        assert done.returncode == 0 and report["ok"], [c for c in report["checks"] if not c["ok"]]
        assert checks["declared middleware"]["detail"] == "matches registrations"
        assert checks["requires_hermes"]["detail"] == f"spec {manifest.requires_hermes()!r} parses"
        assert checks["config schema"]["detail"] == "shape valid"
        assert checks["capability probe"]["detail"] == "register() ran in isolation"
        doctor = _hermes_cli("plugins", "doctor", "--ci", str(directory), home=tmp_path / "scratch")
        assert doctor.returncode == 0, doctor.stdout[-2000:] + doctor.stderr[-2000:]
        assert "OK: runtime discovery, manifest parsing, import, and registration passed" in doctor.stdout


@pytest.mark.hermes
def test_validate_fails_a_directory_whose_manifest_hides_the_middleware(tmp_path: Path) -> None:
    """The check above can fail: the same directory without ``provides_middleware`` is refused, naming both."""
    _require_plugin_manager()
    copy = tmp_path / "baton"
    shutil.copytree(PLUGIN_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    data = yaml.safe_load((copy / "plugin.yaml").read_text(encoding="utf-8"))
    del data["provides_middleware"]
    (copy / "plugin.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    done = _hermes_cli("plugins", "validate", str(copy), home=tmp_path / "scratch")
    assert done.returncode == 1 and "Validation failed." in done.stdout
    assert "undeclared middleware registered (not in provides_middleware): llm_execution, llm_request" in \
        " ".join(done.stdout.split())
