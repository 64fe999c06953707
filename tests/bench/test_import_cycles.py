"""No import circle among the modules of benchmarks/ (issue 45): each section's module imports what it shares,
never the report that imports it.

Why ``ast`` and not grimp (as ``tests/architecture/test_imports.py`` does for baton_engine): the benchmarks are
scripts that put the repository on ``sys.path`` themselves and import Hermes, incontext or numpy only where they
run; reading the statements needs none of them installed. Every import statement counts, function-local ones
too: a circle hidden in a function works until someone moves the import to the top.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module below ``root`` (the folder of ``package``) by its dotted name; a package by its folder's."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported_modules(node: ast.AST, known: set[str]) -> set[str]:
    """The modules of ``known`` one import statement names (``from a import b``: ``a.b`` when it is a module)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & known
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        named = {f"{node.module}.{alias.name}" for alias in node.names} & known
        return named or ({node.module} & known)
    return set()


def benchmark_imports(root: Path, package: str = "benchmarks") -> dict[str, set[str]]:
    """Each module of the ``package`` at ``root`` and the modules of that package it imports."""
    modules = module_names(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        graph[name] = {found for node in ast.walk(tree) for found in imported_modules(node, set(modules))} - {name}
    return graph


def import_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its first module repeated at the end), or None when the imports run one way."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(reversed(error.args[1]))
    return None


def test_the_benchmarks_import_one_way() -> None:
    graph = benchmark_imports(REPO / "benchmarks")
    folders = {name.split(".")[1] for name in graph if name.count(".") >= 2}
    assert folders >= {"harness", "tokens", "budget", "compaction", "recall", "host", "report"}, folders
    assert {"benchmarks.report.render", "benchmarks.report.sections", "benchmarks.host.memory_bench",
            "benchmarks.report.soak_section", "benchmarks.harness.markdown_table"} <= graph.keys()
    assert "benchmarks.compaction.compress_bench" in graph["benchmarks.report.sections"]
    circle = import_circle(graph)
    assert circle is None, "an import circle in benchmarks/: " + " -> ".join(circle or [])


def test_a_function_local_import_back_is_a_circle(tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "__init__.py").write_text("", "utf-8")
    (tmp_path / "report" / "__init__.py").write_text("", "utf-8")
    (tmp_path / "report" / "render.py").write_text("import json\n\n\ndef render():\n    from b import section\n",
                                                   "utf-8")
    (tmp_path / "section.py").write_text("def render():\n    from b.report.render import table\n", "utf-8")
    (tmp_path / "alone.py").write_text("import b.report.render\n", "utf-8")
    graph = benchmark_imports(tmp_path, "b")
    assert graph == {"b": set(), "b.report": set(), "b.report.render": {"b.section"},
                     "b.section": {"b.report.render"}, "b.alone": {"b.report.render"}}
    assert import_circle(graph) in (["b.report.render", "b.section", "b.report.render"],
                                    ["b.section", "b.report.render", "b.section"])
    (tmp_path / "section.py").write_text("def render():\n    from b.markdown_table import markdown_table\n", "utf-8")
    assert import_circle(benchmark_imports(tmp_path, "b")) is None
