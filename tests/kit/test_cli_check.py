"""``baton tokens check`` and ``baton tokens new-backend`` from the command line: output, JSON, exit codes."""

from __future__ import annotations

import json
import textwrap
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest
from batontest.assets import qwen3_dir
from batontest.vllm_standin import VllmStandin
from click.testing import CliRunner

from baton_engine.cli import cli
from baton_engine.tokens import plugins

CLEAN_ENV = {"BATON_TOKENIZER_BACKEND": None, "BATON_TOKENIZER_URL": None, "BATON_TOKENIZER_PATH": None,
             "BATON_TOKENIZER_MODEL": None, "INCONTEXT_BACKEND": None, "INCONTEXT_TOKENIZER_URL": None}
CHECKS = ["source", "results", "honest-exact", "agreement", "deepcopy", "threads", "errors", "speed", "lifecycle"]
LEAKY_PLUGIN = '''
from baton_engine.tokens.contract import BackendSpec, CannotCount, TokenCount, TokenizerBackend
from baton_engine.tokens.hookspecs import hookimpl

class Leaky(TokenizerBackend):
    source = "leaky"
    def count_text(self, text):
        return TokenCount(len(text.split()), True, "leaky")
    def count_chat(self, request):
        messages = request.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise CannotCount(f"cannot count {messages!r}")
        if not all(isinstance(m.get("role"), str) for m in messages):
            raise CannotCount(f"cannot count {messages!r}")
        return TokenCount(sum(len(str(m.get("content") or "").split()) for m in messages), True, "leaky")

@hookimpl
def baton_tokenizer_backends():
    return [BackendSpec("leaky", factory=lambda config: Leaky())]
'''


def invoke(*args: str, **env: str | None):
    return CliRunner().invoke(cli, list(args), env={**CLEAN_ENV, **env}, catch_exceptions=False)


@pytest.fixture()
def leaky_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed entry points plus one for a backend whose errors quote the request."""
    (tmp_path / "kit_leaky_plugin.py").write_text(textwrap.dedent(LEAKY_PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    leaky = EntryPoint("leaky", "kit_leaky_plugin", plugins.hookspecs.ENTRY_POINT_GROUP)
    installed = list(entry_points(group=plugins.hookspecs.ENTRY_POINT_GROUP))
    monkeypatch.setattr(plugins, "entry_points", lambda group: [*installed, leaky])


def test_check_passes_with_a_table_and_exit_0() -> None:
    result = invoke("tokens", "check", "tiktoken")
    assert result.exit_code == 0, result.output
    assert "backend tiktoken (tiktoken:o200k_base)" in result.output and "all checks passed" in result.output
    assert "tokens/s" in result.output and "how to fix" not in result.output


def test_check_json_is_the_report() -> None:
    result = invoke("tokens", "check", "rough", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ok"] is True and data["backend"] == {"source": "rough", "name": "rough"} and data["reference"] is None
    assert [check["name"] for check in data["checks"]] == CHECKS
    assert set(data["speed"]) == {"chat_tokens_per_second", "text_tokens_per_second", "first_count_ms",
                                  "repeated_count_ms"}


def test_check_with_a_reference_built_from_the_same_settings() -> None:
    with VllmStandin(qwen3_dir()) as server:
        result = invoke("tokens", "check", "vllm", "--reference", "hf", "--json",
                        BATON_TOKENIZER_URL=server.url, BATON_TOKENIZER_PATH=str(qwen3_dir()))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["reference"] == {"source": "hf:qwen3", "name": "hf"}
    agreement = next(check for check in data["checks"] if check["name"] == "agreement")
    assert agreement["status"] == "pass" and "equal to hf:qwen3" in agreement["detail"]


def test_the_reference_advice_works_as_written(tmp_path: Path) -> None:
    """Issue 31 item 5: the generated README's ``--reference hf`` failed without its tokenizer's path (it said
    only "needs a tokenizer"); the advice now names the path, the failure says it is the reference's."""
    pytest.importorskip("baton_hf")
    assert invoke("tokens", "new-backend", "my-tok", "--dir", str(tmp_path / "pkg")).exit_code == 0
    advice = next(line for line in (tmp_path / "pkg" / "README.md").read_text().splitlines()
                  if "--reference hf" in line)
    assert advice.startswith("BATON_TOKENIZER_PATH=/your/model/dir baton tokens check my-tok --reference hf")
    # as written (with the model's directory), against a backend that counts as hf does: the agreement passes
    result = invoke("tokens", "check", "hf", "--reference", "hf", "--json", BATON_TOKENIZER_PATH=str(qwen3_dir()))
    assert result.exit_code == 0, result.output
    agreement = next(c for c in json.loads(result.output)["checks"] if c["name"] == "agreement")
    assert agreement["status"] == "pass"
    missing = CliRunner().invoke(cli, ["tokens", "check", "rough", "--reference", "hf", "--json"], env=CLEAN_ENV)
    message = json.loads(missing.output)["error"]["message"]
    assert missing.exit_code == 2 and message.startswith("the reference backend hf cannot start: ")
    assert "BATON_TOKENIZER_PATH=/models/yours baton tokens check NAME --reference hf" in message


def test_a_failed_check_exits_1_with_how_to_fix(leaky_installed: None) -> None:
    result = invoke("tokens", "check", "leaky")
    assert result.exit_code == 1, result.output
    assert "how to fix errors: say what is wrong without quoting the request" in result.output
    assert "1 check(s) failed" in result.output and "baton-kit-canary" not in result.output
    data = json.loads(invoke("tokens", "check", "leaky", "--json").output)
    assert data["ok"] is False
    assert [(c["name"], c["status"]) for c in data["checks"] if c["status"] == "fail"] == [("errors", "fail")]


@pytest.mark.parametrize("args", [("tokens", "check", "sentencepiece"),
                                  ("tokens", "check", "rough", "--reference", "sentencepiece")])
def test_unknown_backend_is_a_usage_error(args: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*args, "--json"], env=CLEAN_ENV)
    assert result.exit_code == 2
    error = json.loads(result.output)["error"]
    assert error["kind"] == "input_error" and "'sentencepiece' is not installed" in error["message"]
    assert "installed: " in error["message"]


def test_missing_name_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["tokens", "check"], env=CLEAN_ENV)
    assert result.exit_code == 2 and "Missing argument 'NAME'" in result.output


def test_bad_vllm_url_setting_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["tokens", "check", "vllm"], env={**CLEAN_ENV, "BATON_TOKENIZER_URL": "ftp://x"})
    assert result.exit_code == 2 and "BATON_TOKENIZER_URL must be an http(s) URL" in result.output


def test_new_backend_writes_the_package(tmp_path: Path) -> None:
    target = tmp_path / "pkg"
    result = invoke("tokens", "new-backend", "my-tok", "--dir", str(target), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["files"] == ["README.md", "baton_backend_my_tok/__init__.py", "baton_backend_my_tok/backend.py",
                             "baton_backend_my_tok/plugin.py", "chat.json", "pyproject.toml",
                             "tests/test_conformance.py"]
    assert 'my-tok = "baton_backend_my_tok.plugin"' in (target / "pyproject.toml").read_text()
    assert "class MyTokBackend(TokenizerBackend)" in (target / "baton_backend_my_tok" / "backend.py").read_text()


@pytest.mark.parametrize(("name", "message"), [
    ("My Tok", "is not usable: use lower-case letters and digits"),
    ("9tok", "is not usable"),
    ("tok-", "is not usable"),
    ("t" * 33, "at most 32 characters"),
    ("auto", "is reserved by baton-engine"),
    ("rough", "is reserved by baton-engine"),
    ("tiktoken", "already provided by baton-engine-tiktoken"),
])
def test_new_backend_refuses_bad_names(tmp_path: Path, name: str, message: str) -> None:
    result = CliRunner().invoke(cli, ["tokens", "new-backend", name, "--dir", str(tmp_path / "x")], env=CLEAN_ENV)
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "x").exists()


def test_new_backend_refuses_a_non_empty_directory_or_a_file(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    result = CliRunner().invoke(cli, ["tokens", "new-backend", "mytok", "--dir", str(tmp_path)], env=CLEAN_ENV)
    assert result.exit_code == 2 and "is not empty; pass --dir with a new or empty directory" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    result = CliRunner().invoke(cli, ["tokens", "new-backend", "mytok", "--dir", str(tmp_path / "keep.txt")],
                                env=CLEAN_ENV)
    assert result.exit_code == 2 and "is not a directory" in result.output
