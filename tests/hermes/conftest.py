"""Fixtures for the Hermes adapter tests: a temp HERMES_HOME set BEFORE Hermes is imported, real projects.

Every test here needs hermes-agent (tox env ``hermes``); without it the whole directory is skipped.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_HOME = tempfile.mkdtemp(prefix="baton-hermes-home-")
os.environ.setdefault("HERMES_HOME", _HOME)  # Hermes reads it at import time
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

try:
    import agent.context_engine  # noqa: F401
except ImportError:  # hermes-agent is optional: these tests run in the tox env `hermes`
    collect_ignore_glob = ["test_*.py"]

from batontest import assets  # noqa: E402
from batontest.hermes_home import git_project, initialised_project  # noqa: E402

from baton_engine.agent import runtime  # noqa: E402
from baton_engine.hermes import plugin  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.hermes)


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No BATON_* leaks between tests; every test starts and ends without an installed runtime or patches."""
    for name in list(os.environ):
        if name.startswith(("BATON_", "INCONTEXT_")):
            monkeypatch.delenv(name)
    plugin.unregister()
    yield
    plugin.unregister()


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


@pytest.fixture
def qwen3_env(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Select the real Qwen3 tokenizer (hf backend, offline) for the runtime."""
    path = assets.qwen3_dir()
    monkeypatch.setenv("BATON_TOKENIZER_BACKEND", "hf")
    monkeypatch.setenv("BATON_TOKENIZER_PATH", str(path))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with ``baton init`` done through the operations layer (as the CLI does)."""
    return initialised_project(tmp_path / "project")


@pytest.fixture
def bare_project(tmp_path: Path) -> Path:
    """A git repository where ``baton init`` was never run."""
    return git_project(tmp_path / "bare", {"README.md": "# demo\n"})


@pytest.fixture
def fresh_runtime() -> runtime.BatonRuntime:
    """A runtime from the current environment, installed process-wide for the test."""
    from baton_engine.settings import load_settings

    installed = runtime.BatonRuntime(load_settings())
    runtime.set_runtime(installed)
    return installed
