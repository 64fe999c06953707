"""A separately built distribution adds a backend with no core change: installed into a temporary venv."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from batontest import venvs

HERE = Path(__file__).resolve().parent
RUN_CLI = venvs.RUN_CLI
REQUEST = {"messages": [{"role": "system", "content": "be brief"},
                        {"role": "user", "content": "count these five words"}],
           "tools": [{"type": "function", "function": {"name": "ls", "parameters": {}}}]}


@pytest.fixture(scope="module")
def venv_with_words(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("thirdparty")
    python = venvs.make_venv(root / "venv")
    source = root / "src"
    shutil.copytree(HERE, source, ignore=shutil.ignore_patterns("test_*.py", "__pycache__", "*.egg-info", "build"))
    venvs.install(python, source)
    (root / "chat.json").write_text(json.dumps(REQUEST))
    return python, root


def test_selected_by_name_through_the_cli(venv_with_words: tuple[Path, Path]) -> None:
    python, root = venv_with_words
    done = venvs.baton(python, "tokens", "count", "chat.json", "--backend", "words", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["tokens"], result["exact"], result["source"]) == (2 + 4 + 1, True, "words")
    listing = json.loads(venvs.baton(python, "tokens", "backends", "--json", cwd=root).stdout)
    assert {"name": "words", "distribution": "baton-thirdparty-words",
            "description": "whitespace-separated words"} in listing["backends"]


def test_passes_the_conformance_kit_through_the_cli(venv_with_words: tuple[Path, Path]) -> None:
    python, root = venv_with_words
    done = venvs.baton(python, "tokens", "check", "words", "--json", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["backend"] == {"source": "words", "name": "words"}
    assert [c["name"] for c in report["checks"] if c["status"] == "pass"] == [
        "source", "results", "honest-exact", "deepcopy", "threads", "errors", "lifecycle"]


def test_not_visible_outside_its_venv() -> None:
    done = subprocess.run([sys.executable, "-c", RUN_CLI, "tokens", "backends", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert "words" not in [b["name"] for b in json.loads(done.stdout)["backends"]]


def test_unknown_name_fails_listing_installed(venv_with_words: tuple[Path, Path]) -> None:
    python, root = venv_with_words
    done = venvs.baton(python, "tokens", "count", "chat.json", "--backend", "sentencepiece", cwd=root)
    assert done.returncode == 2
    assert "'sentencepiece' is not installed" in done.stderr and "words" in done.stderr


def test_two_distributions_claiming_one_name_fail_at_startup(
    venv_with_words: tuple[Path, Path], tmp_path: Path
) -> None:
    _, root = venv_with_words
    clone = tmp_path / "venv2"
    python2 = venvs.make_venv(clone)
    venvs.install(python2, root / "src")
    rival = tmp_path / "rival"
    (rival / "rival_words").mkdir(parents=True)
    (rival / "rival_words" / "__init__.py").write_text(textwrap.dedent('''
        from baton_engine.tokens.contract import BackendSpec
        from baton_engine.tokens.hookspecs import hookimpl
        from baton_engine.tokens.rough import RoughBackend

        @hookimpl
        def baton_tokenizer_backends():
            return [BackendSpec("words", factory=lambda config: RoughBackend())]
    '''))
    (rival / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["hatchling>=1.24"]
        build-backend = "hatchling.build"
        [project]
        name = "rival-words"
        version = "1.0"
        [project.entry-points."baton_engine.tokenizers"]
        words = "rival_words"
        [tool.hatch.build.targets.wheel]
        packages = ["rival_words"]
    '''))
    venvs.install(python2, rival)
    for args in (("tokens", "count", str(root / "chat.json"), "--backend", "words"), ("tokens", "backends")):
        done = venvs.baton(python2, *args, cwd=tmp_path)
        assert done.returncode == 2, done.stdout
        assert "'words' is provided by two distributions: baton-thirdparty-words and rival-words" in done.stderr
