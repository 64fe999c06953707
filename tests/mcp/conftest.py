"""baton-mcp fixtures: a real git project, the installed `baton` and `baton-mcp` scripts as real processes, and
the MCP SDK's own stdio client talking to the server."""

from __future__ import annotations

import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from batontest.baton_cli import SCRIPTS, CliResult, clean_env, run_baton
from batontest.gitrepo import commit_file, init_repo

BATON_MCP = SCRIPTS / "baton-mcp"
T = TypeVar("T")


def write_json(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def in_session(root: Path, scenario: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Spawn `baton-mcp --root ROOT` as a subprocess and run ``scenario`` in an initialised SDK client session."""
    assert BATON_MCP.exists(), f"console script not installed at {BATON_MCP}; pip install -e '.[mcp]'"

    async def main() -> T:
        params = StdioServerParameters(command=str(BATON_MCP), args=["--root", str(root)], env=clean_env(),
                                       cwd=str(root))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await scenario(session)

    return anyio.run(main)


def tree_bytes(directory: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (None) below ``directory``: equal before/after = nothing written."""
    if not directory.exists():
        return {}
    return {str(path.relative_to(directory)): (path.read_bytes() if path.is_file() else None)
            for path in sorted(directory.rglob("*"))}


class StoreSnapshot:
    """A copy of ``.baton/`` to put back, so two surfaces can run the same operation on the same state."""

    def __init__(self, root: Path, keep: Path) -> None:
        self.data_dir = root / ".baton"
        self.keep = keep
        shutil.copytree(self.data_dir, keep)

    def restore(self) -> None:
        shutil.rmtree(self.data_dir)
        shutil.copytree(self.keep, self.data_dir)


def capture_payload(**extra: Any) -> dict[str, Any]:
    """A capture payload in the record's nested form (the MCP tool's input schema)."""
    return {
        "work": {"title": "Cart totals include tax", "objective": "Cart.total returns the taxed amount",
                 "constraints": ["keep the public API"]},
        "summary": {"current_state": "tax table added, total() not yet using it", "completed": ["added tax table"]},
        "artifacts": [{"path": "src/cart.py", "role": "modified", "description": "total()"}],
        "decisions": [{"decision": "tax rates live in a table, not code", "rationale": "yearly changes"}],
        "evidence": [{"type": "command", "claim": "tests pass before the change", "ref": "git status",
                      "result": "clean"}],
        "open_items": [{"description": "apply tax in total()", "priority": "high",
                        "suggested_action": "multiply by the rate in total()",
                        "acceptance_check": "pytest tests/test_cart.py passes"}],
        "failed_attempts": [{"attempt": "rounding per item", "outcome": "totals off by a cent"}],
        "origin": {"harness": "claude-code", "actor": {"type": "agent", "name": "test-agent"}},
        **extra,
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with two committed files and an initialised `.baton/` (via the real CLI)."""
    root = init_repo(tmp_path / "shop")
    commit_file(root, "src/cart.py", "def total(items):\n    return sum(items)\n", "initial")
    commit_file(root, "README.md", "# shop\n", "readme")
    init = run_baton("init", "--json", cwd=root)
    assert init.code == 0, init.stderr
    return root


# Helpers as fixtures: `tests/mcp` cannot be imported as a package (its name is the SDK's), so tests get them here.


@pytest.fixture
def baton() -> Callable[..., CliResult]:
    return run_baton


@pytest.fixture
def mcp_session() -> Callable[[Path, Callable[[ClientSession], Awaitable[Any]]], Any]:
    return in_session


@pytest.fixture
def store_bytes() -> Callable[[Path], dict[str, bytes | None]]:
    """The `.baton/` tree of a project as bytes."""
    return lambda root: tree_bytes(root / ".baton")


@pytest.fixture
def snapshot(tmp_path: Path) -> Callable[[Path], StoreSnapshot]:
    counter = iter(range(10_000))
    return lambda root: StoreSnapshot(root, tmp_path / f"snapshot-{next(counter)}")


@pytest.fixture
def payload() -> Callable[..., dict[str, Any]]:
    return capture_payload


@pytest.fixture
def json_file(tmp_path: Path) -> Callable[[Any], str]:
    """Write data to a fresh JSON file (for `--input` / `--capture`); returns its path."""
    counter = iter(range(10_000))
    return lambda data: write_json(tmp_path / f"input-{next(counter)}.json", data)


@pytest.fixture
def commit() -> Callable[..., str]:
    return commit_file
