"""A separately built distribution adds a backend with no core change: installed into a temporary venv."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RUN_CLI = "from baton_engine.cli import main; main()"
REQUEST = {"messages": [{"role": "system", "content": "be brief"},
                        {"role": "user", "content": "count these five words"}],
           "tools": [{"type": "function", "function": {"name": "ls", "parameters": {}}}]}


def _venv(root: Path) -> Path:
    """A pip-less venv that also sees the dev venv's packages (fast, and .venv stays untouched)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    dev_site = sysconfig.get_paths()["purelib"]
    Path(purelib, "_baton_dev_site.pth").write_text(f"import site; site.addsitedir({dev_site!r})\n")
    return python


def _install(python: Path, source: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
         "--no-build-isolation", "--disable-pip-version-check", str(source)],
        check=True, timeout=300, capture_output=True,
    )


def _baton(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run([str(python), "-c", RUN_CLI, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env, check=False)


@pytest.fixture(scope="module")
def venv_with_words(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("thirdparty")
    python = _venv(root / "venv")
    source = root / "src"
    shutil.copytree(HERE, source, ignore=shutil.ignore_patterns("test_*.py", "__pycache__", "*.egg-info", "build"))
    _install(python, source)
    (root / "chat.json").write_text(json.dumps(REQUEST))
    return python, root


def test_selected_by_name_through_the_cli(venv_with_words: tuple[Path, Path]) -> None:
    python, root = venv_with_words
    done = _baton(python, "tokens", "count", "chat.json", "--backend", "words", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["tokens"], result["exact"], result["source"]) == (2 + 4 + 1, True, "words")
    listing = json.loads(_baton(python, "tokens", "backends", "--json", cwd=root).stdout)
    assert {"name": "words", "distribution": "baton-thirdparty-words",
            "description": "whitespace-separated words"} in listing["backends"]


def test_not_visible_outside_its_venv() -> None:
    done = subprocess.run([sys.executable, "-c", RUN_CLI, "tokens", "backends", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert "words" not in [b["name"] for b in json.loads(done.stdout)["backends"]]


def test_unknown_name_fails_listing_installed(venv_with_words: tuple[Path, Path]) -> None:
    python, root = venv_with_words
    done = _baton(python, "tokens", "count", "chat.json", "--backend", "sentencepiece", cwd=root)
    assert done.returncode == 2
    assert "'sentencepiece' is not installed" in done.stderr and "words" in done.stderr


def test_two_distributions_claiming_one_name_fail_at_startup(
    venv_with_words: tuple[Path, Path], tmp_path: Path
) -> None:
    _, root = venv_with_words
    clone = tmp_path / "venv2"
    python2 = _venv(clone)
    _install(python2, root / "src")
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
    _install(python2, rival)
    for args in (("tokens", "count", str(root / "chat.json"), "--backend", "words"), ("tokens", "backends")):
        done = _baton(python2, *args, cwd=tmp_path)
        assert done.returncode == 2, done.stdout
        assert "'words' is provided by two distributions: baton-thirdparty-words and rival-words" in done.stderr
