"""The import contracts of ``pyproject.toml`` (``[tool.importlinter]``) hold: imports run one way through
baton_engine's rooms, only ``baton_engine.hermes`` imports Hermes, a backend imports only the tokens contract.

Why import-linter and not a reviewer: a function-local import that points up a layer (the compaction core
calling the command layer) works, passes every behaviour test and quietly ties the core to an edge. The
checker runs in a subprocess with this venv's interpreter, on THIS tree (its root and backends first on
the path), exactly as ``lint-imports`` from the repository root would; Hermes need not be installed (the
graph is read from the import statements).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("hf", "tiktoken", "vllm", "llamacpp")
LINT = "import sys\nfrom importlinter.cli import lint_imports\nsys.exit(lint_imports(no_cache=True, no_logo=True))"
LAYERS = "baton_engine's rooms import only the rooms below them"
HERMES = "Only baton_engine.hermes imports Hermes"
BACKEND = "A tokenizer backend imports only the tokens contract of baton_engine"
HERMES_ROOMS = "hermes/ runs one way"
AGENT_ROOMS = "agent/ runs one way"
CONTRACTS = len(tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]["contracts"])


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the tree at ``root`` (its pyproject.toml, its packages): exit code and report."""
    paths = [str(root), *(str(root / "backends" / name) for name in BACKENDS)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def verdict(report: str, contract: str) -> str:
    """KEPT or BROKEN, as the report says of ``contract`` (a long name wraps onto the next line)."""
    flat = " ".join(report.split())
    rest = flat[flat.index(contract) + len(contract):]
    kept, broken = rest.find(" KEPT"), rest.find(" BROKEN")
    return "BROKEN" if broken != -1 and (kept == -1 or broken < kept) else "KEPT"


def test_the_import_contracts_are_kept() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, f"an import breaks a contract in pyproject.toml:\n{result.stdout}{result.stderr}"
    assert f"{CONTRACTS} kept, 0 broken" in result.stdout, result.stdout


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the packages and the contracts, to break on purpose."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "baton_engine", tmp_path / "baton_engine", ignore=ignore)
    for name in BACKENDS:
        shutil.copytree(REPO / "backends" / name, tmp_path / "backends" / name, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _add_local_import(module: Path, statement: str) -> None:
    """A function-local import at the end of ``module`` (the kind a layer check must see too)."""
    with module.open("a", encoding="utf-8") as handle:
        handle.write(f"\n\ndef _deliberately_bad() -> None:\n    {statement}  # noqa: F401\n")


@pytest.mark.parametrize(("module", "statement", "contract", "shown"), [
    ("baton_engine/compaction/cycle.py", "from baton_engine.operations import handoffs", LAYERS,
     "baton_engine.compaction.cycle -> baton_engine.operations.handoffs"),
    ("baton_engine/recall/search.py", "from baton_engine.compaction import scan", LAYERS,
     "baton_engine.recall.search -> baton_engine.compaction.scan"),
    ("baton_engine/tokens/counter.py", "import agent.model_metadata", HERMES,
     "baton_engine.tokens.counter -> agent"),
    ("backends/hf/baton_hf/backend.py", "from baton_engine.handoff import store", BACKEND,
     "baton_hf.backend -> baton_engine.handoff.store"),
    ("baton_engine/hermes/patches.py", "from baton_engine.hermes import engine", HERMES_ROOMS,
     "baton_engine.hermes.patches -> baton_engine.hermes.engine"),
    ("baton_engine/agent/ledger.py", "from baton_engine.agent import requests", AGENT_ROOMS,
     "baton_engine.agent.ledger -> baton_engine.agent.requests"),
    ("baton_engine/agent/recall_binding.py", "from baton_engine.agent import compactions", AGENT_ROOMS,
     "baton_engine.agent.recall_binding -> baton_engine.agent.compactions"),
])
def test_a_wrong_way_import_breaks_its_contract(tree: Path, module: str, statement: str, contract: str,
                                                shown: str) -> None:
    _add_local_import(tree / module, statement)
    result = lint_imports(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert verdict(result.stdout, contract) == "BROKEN" and shown in result.stdout, result.stdout
    assert f"{CONTRACTS - 1} kept, 1 broken" in result.stdout, result.stdout


def test_a_new_room_must_be_placed_in_the_layers(tree: Path) -> None:
    (tree / "baton_engine" / "unplaced.py").write_text('"""A room the contract does not list."""\n', "utf-8")
    result = lint_imports(tree)
    assert result.returncode == 1 and f"{LAYERS} BROKEN" in result.stdout, result.stdout
    assert "baton_engine.unplaced" in result.stdout, result.stdout
