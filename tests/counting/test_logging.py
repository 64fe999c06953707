"""BATON_LOG: logs are off by default, go to stderr when asked for, and never carry prompt text."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from click.testing import CliRunner

from baton_engine.cli import cli
from baton_engine.logs import LOGGER_NAME, configure_logging, log_level
from baton_engine.tokens import plugins

SECRET = "sk-live-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
CLEAN_ENV = {"BATON_TOKENIZER_BACKEND": None, "BATON_TOKENIZER_URL": None, "BATON_TOKENIZER_PATH": None,
             "BATON_TOKENIZER_MODEL": None, "INCONTEXT_BACKEND": None, "INCONTEXT_TOKENIZER_URL": None,
             "BATON_FALLBACK_MARGIN_TOKENS": None, "BATON_LOG": None}


@pytest.fixture(autouse=True)
def restore_baton_logger() -> Iterator[None]:
    """configure_logging changes a process-wide logger: put it back for the other tests."""
    logger = logging.getLogger(LOGGER_NAME)
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


@pytest.fixture()
def broken_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed-looking tokenizer plugin whose module fails to import."""
    (tmp_path / "baton_broken_plugin.py").write_text("raise ImportError('missing dependency')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = EntryPoint(name="brokenbackend", value="baton_broken_plugin", group="baton_engine.tokenizers")
    installed = plugins.entry_points(group="baton_engine.tokenizers")
    monkeypatch.setattr(plugins, "entry_points", lambda group: [*installed, broken])
    return broken.name


@pytest.mark.parametrize(("value", "level"), [(None, None), ("", None), ("off", None), ("0", None), ("OFF", None),
                                               ("debug", logging.DEBUG), ("Info", logging.INFO),
                                               (" warning ", logging.WARNING), ("error", logging.ERROR)])
def test_levels(value: str | None, level: int | None) -> None:
    assert log_level(value) == level


def test_an_invalid_value_names_the_variable_and_the_choices() -> None:
    with pytest.raises(ValueError, match=r"BATON_LOG='loud' is not a log level; use one of debug, info, warning"):
        log_level("loud")
    result = CliRunner().invoke(cli, ["tokens", "backends"], env={**CLEAN_ENV, "BATON_LOG": "loud"})
    assert result.exit_code == 2 and "BATON_LOG='loud'" in result.stderr


def test_configure_is_idempotent_and_switches_off_again() -> None:
    logger = logging.getLogger(LOGGER_NAME)
    assert configure_logging({}) is None
    off = list(logger.handlers)
    assert isinstance(off[-1], logging.NullHandler)
    assert configure_logging({"BATON_LOG": "debug"}) == logging.DEBUG
    assert configure_logging({"BATON_LOG": "info"}) == logging.INFO
    assert len(logger.handlers) == len(off) and logger.level == logging.INFO
    assert not isinstance(logger.handlers[-1], logging.NullHandler)
    assert configure_logging({}) is None and configure_logging({}) is None
    assert len(logger.handlers) == len(off) and logger.level == logging.NOTSET
    assert isinstance(logger.handlers[-1], logging.NullHandler)


def test_plugin_discovery_warning_is_silent_by_default_and_shown_with_baton_log(broken_plugin: str) -> None:
    quiet = CliRunner().invoke(cli, ["tokens", "backends", "--json"], env=CLEAN_ENV, catch_exceptions=False)
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert [b["entry_point"] for b in json.loads(quiet.stdout)["broken"]] == [broken_plugin]
    loud = CliRunner().invoke(cli, ["tokens", "backends", "--json"], env={**CLEAN_ENV, "BATON_LOG": "warning"},
                              catch_exceptions=False)
    assert loud.exit_code == 0
    assert f"WARNING baton_engine.tokens: tokenizer plugin skipped entry_point={broken_plugin}" in loud.stderr
    assert "missing dependency" not in loud.stderr  # exception type only, never its message
    assert json.loads(loud.stdout) == json.loads(quiet.stdout)  # stdout stays the same parseable JSON


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_console_script_logs_the_fallback_event_to_stderr_without_prompt_text(tmp_path: Path) -> None:
    pytest.importorskip("baton_vllm")
    request = tmp_path / "chat.json"
    request.write_text(json.dumps([{"role": "user", "content": f"deploy with key {SECRET}"}]))
    baton = Path(sys.executable).with_name("baton")
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    env.update(BATON_TOKENIZER_URL=f"http://127.0.0.1:{_closed_port()}", BATON_TOKENIZER_TIMEOUT_SECONDS="2")

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(baton), "tokens", "count", str(request), "--json"], capture_output=True,
                              text=True, timeout=60, check=False, env={**env, **extra})

    quiet, loud = run(), run(BATON_LOG="debug")
    assert quiet.returncode == loud.returncode == 1, loud.stderr  # an estimate is no answer (--allow-estimate)
    assert quiet.stderr == ""
    assert "count fell back kind=chat" in loud.stderr and "error=CannotCount" in loud.stderr
    assert SECRET not in loud.stderr and "deploy with key" not in loud.stderr
    assert json.loads(loud.stdout)["source"] == json.loads(quiet.stdout)["source"] == "rough+margin"
