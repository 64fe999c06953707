from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from baton_engine.cli import cli
from baton_engine.tokens.rough import estimate_chat_request, request_margin
from conversations import conversation

CLEAN_ENV = {"HERMES_HOME": None, "BATON_TOKENIZER_BACKEND": None, "BATON_TOKENIZER_URL": None, "BATON_TOKENIZER_PATH": None,
             "BATON_TOKENIZER_MODEL": None, "INCONTEXT_BACKEND": None, "INCONTEXT_TOKENIZER_URL": None,
             "BATON_FALLBACK_MARGIN_TOKENS": None}


def invoke(*args: str, **env: str | None):
    return CliRunner().invoke(cli, list(args), env={**CLEAN_ENV, **env}, catch_exceptions=False)


@pytest.fixture()
def request_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(conversation(4)), encoding="utf-8")
    return path


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_count_with_rough_json(request_file: Path) -> None:
    result = invoke("tokens", "count", str(request_file), "--backend", "rough", "--json",
                    BATON_FALLBACK_MARGIN_TOKENS="100")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    request = json.loads(request_file.read_text())
    estimate = estimate_chat_request(request)
    expected = estimate + request_margin(request, estimate, 100)  # 100 is the floor of the measured margin
    assert data["tokens"] == expected and data["exact"] is False and data["source"] == "rough+margin"
    assert data["backend"] == {"name": "rough", "reason": "chosen explicitly (backend setting)"}


def test_count_accepts_a_bare_message_list_and_prints_a_table(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "hello there"}]))
    result = invoke("tokens", "count", str(path))
    assert result.exit_code == 0
    assert "tokens" in result.output and "rough+margin" in result.output and "auto:" in result.output


def test_unreachable_server_fails_with_the_estimate_unless_an_estimate_is_allowed(request_file: Path) -> None:
    """The configured tokenizer cannot count (its server is down): not an answer (exit 1, ok false, as doctor
    fails), the estimate and its reason shown; ``--allow-estimate`` takes the estimate as the answer."""
    pytest.importorskip("baton_vllm")
    down = {"BATON_TOKENIZER_URL": f"http://127.0.0.1:{closed_port()}", "BATON_TOKENIZER_TIMEOUT_SECONDS": "2"}
    result = invoke("tokens", "count", str(request_file), "--json", **down)
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["ok"] is False
    assert data["backend"]["name"] == "vllm" and data["source"] == "rough+margin" and data["exact"] is False
    assert data["fallback_reason"].startswith("vllm") and "CannotCount" in data["fallback_reason"]
    allowed = invoke("tokens", "count", str(request_file), "--json", "--allow-estimate", **down)
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.output) == {**data, "ok": True}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "malformed JSON at line 1"),
        ('{"prompt": "x"}', "expected a chat request object with a 'messages' list"),
        ('{"messages": ["hi"]}', "every item of 'messages' must be an object"),
        ('{"messages": [], "tools": {}}', "'tools' must be a list"),
        ('"just a string"', "expected a chat request object"),
    ],
)
def test_bad_files_exit_2_with_a_clear_message(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = invoke("tokens", "count", str(path), "--json")
    assert result.exit_code == 2
    data = json.loads(result.output)
    assert data["ok"] is False and data["error"]["kind"] == "input_error" and message in data["error"]["message"]


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = invoke("tokens", "count", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and "cannot read" in result.output


def test_unknown_backend_exits_2_listing_installed(request_file: Path) -> None:
    result = invoke("tokens", "count", str(request_file), "--backend", "nosuch", "--json")
    assert result.exit_code == 2
    message = json.loads(result.output)["error"]["message"]
    assert "'nosuch' is not installed" in message and "rough" in message


def test_bad_setting_exits_2_naming_the_variable(request_file: Path) -> None:
    result = invoke("tokens", "count", str(request_file), "--json", BATON_FALLBACK_MARGIN_TOKENS="lots")
    assert result.exit_code == 2
    assert "BATON_FALLBACK_MARGIN_TOKENS must be an integer" in json.loads(result.output)["error"]["message"]


def test_backends_lists_distributions_and_auto_choice() -> None:
    result = invoke("tokens", "backends", "--json", BATON_TOKENIZER_MODEL="qwen3")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert any(b["name"] == "rough" and b["distribution"] == "baton-engine" for b in data["backends"])
    assert data["auto"]["name"] == "rough" and data["configured"] == "auto"
    text = invoke("tokens", "backends")
    assert "baton-engine" in text.output and "auto picks" in text.output


def test_console_script_end_to_end(request_file: Path) -> None:
    baton = Path(sys.executable).with_name("baton")
    done = subprocess.run([str(baton), "tokens", "count", str(request_file), "--backend", "rough", "--json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["source"] == "rough+margin"


def test_count_reads_stdin_and_rejects_non_utf8_files(tmp_path: Path) -> None:
    messages = json.dumps([{"role": "user", "content": "hello from stdin"}])
    result = CliRunner().invoke(cli, ["tokens", "count", "-", "--backend", "rough", "--json"], input=messages,
                                env={**CLEAN_ENV, "BATON_FALLBACK_MARGIN_TOKENS": "100"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    estimate = estimate_chat_request({"messages": json.loads(messages)})
    assert json.loads(result.output)["tokens"] == estimate + 100  # a short request: the configured floor
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"messages": [{"role": "user", "content": "café"}]}'.encode("latin-1"))
    bad = invoke("tokens", "count", str(latin1), "--json")
    assert bad.exit_code == 2
    assert "UnicodeDecodeError" in json.loads(bad.output)["error"]["message"]


def test_a_configured_tokenizer_that_cannot_start_gives_the_loops_estimate_and_exits_1(request_file: Path,
                                                                                        tmp_path: Path) -> None:
    """Read from the Hermes home's baton: block (--hermes-home), as Hermes reads it; the count is the one the
    agent loop then uses (rough + margin), the reason names the setting, and the exit code says it failed."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    (home / "config.yaml").write_text("baton:\n  tokenizer:\n    backend: nosuch\n", encoding="utf-8")
    result = invoke("tokens", "count", str(request_file), "--json", "--hermes-home", str(home))
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["ok"] is False and data["source"] == "rough+margin" and data["exact"] is False
    assert "set by baton.tokenizer.backend in config.yaml" in data["fallback_reason"]
    assert data["tokens"] == estimate_chat_request(json.loads(request_file.read_text())) + 1024
    assert invoke("tokens", "count", str(request_file), "--json").exit_code == 0  # no Hermes home named


def test_count_reads_the_hermes_block_when_hermes_home_is_set(request_file: Path, tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    home.mkdir()
    (home / "config.yaml").write_text("baton:\n  fallback_margin_tokens: 70000\n", encoding="utf-8")
    data = json.loads(invoke("tokens", "count", str(request_file), "--json", HERMES_HOME=str(home)).output)
    assert data["tokens"] == estimate_chat_request(json.loads(request_file.read_text())) + 70000  # the floor


def test_backends_with_an_unknown_configured_name_warns_and_exits_1() -> None:
    result = invoke("tokens", "backends", "--json", BATON_TOKENIZER_BACKEND="nosuch")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["ok"] is False and "'nosuch' is not installed" in data["configured_error"]
    assert any(b["name"] == "rough" for b in data["backends"])  # still lists what is installed
    text = invoke("tokens", "backends", BATON_TOKENIZER_BACKEND="nosuch")
    assert text.exit_code == 1 and "tokenizer cannot start" in text.output


def test_an_empty_message_list_counts_zero(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]")
    data = json.loads(invoke("tokens", "count", str(path), "--json").output)
    assert data["tokens"] == 0 and data["margin_tokens"] == 0
