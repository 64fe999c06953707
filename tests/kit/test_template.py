"""``baton tokens new-backend``: the generated package installs (editable, offline), is selectable, passes the kit
and its own test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batontest import venvs
from batontest.assets import qwen3_dir

NAME = "acme-tok"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python of a temp venv with the generated package installed, the package's directory)."""
    root = tmp_path_factory.mktemp("template")
    python = venvs.make_venv(root / "venv")
    package = root / "acme"
    done = venvs.baton(python, "tokens", "new-backend", NAME, "--dir", str(package), cwd=root)
    assert done.returncode == 0, done.stderr
    venvs.install(python, package, editable=True)  # its README's offline install: --no-build-isolation -e
    return python, package


def test_installed_package_is_listed_and_passes_the_kit(generated: tuple[Path, Path]) -> None:
    python, package = generated
    listing = json.loads(venvs.baton(python, "tokens", "backends", "--json", cwd=package.parent).stdout)
    assert {"name": NAME, "distribution": "baton-backend-acme-tok",
            "description": "acme-tok tokenizer (words and punctuation)"} in listing["backends"]
    done = venvs.baton(python, "tokens", "check", NAME, cwd=package.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all checks passed" in done.stdout and "acme-tok:default" in done.stdout


def test_selected_through_settings(generated: tuple[Path, Path], tmp_path: Path) -> None:
    python, package = generated
    (tmp_path / "chat.json").write_text(json.dumps([{"role": "user", "content": "two words"}]))
    done = venvs.baton(python, "tokens", "count", "chat.json", "--json", cwd=tmp_path,
                       env={"BATON_TOKENIZER_BACKEND": NAME, "BATON_TOKENIZER_MODEL": "m 1"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # the starter is no model's tokenizer: an estimate, not an exact count
    assert (result["exact"], result["source"]) == (False, "acme-tok:m_1")
    assert result["tokens"] == 8  # "<user> two words" and "<assistant>": < user > two words < assistant >


def test_its_estimates_are_reported_not_judged_against_a_real_tokenizer(generated: tuple[Path, Path]) -> None:
    """With exact=True the starter failed agreement with Qwen3's real tokenizer on most corpus items."""
    python, package = generated
    done = venvs.baton(python, "tokens", "check", NAME, "--reference", "hf", "--json", cwd=package.parent,
                       env={"BATON_TOKENIZER_PATH": str(qwen3_dir())})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["reference"] == {"source": "hf:qwen3", "name": "hf"}
    agreement = next(check for check in report["checks"] if check["name"] == "agreement")
    assert agreement["status"] != "fail", agreement


def test_generated_test_passes_in_the_venv(generated: tuple[Path, Path]) -> None:
    python, package = generated
    done = venvs.run_in(python, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests", cwd=package)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout and "all checks passed" in done.stdout
