"""No import circle among the modules of benchmarks/ (issue 45): each section's module imports what it shares,
never the report that imports it.

Why ``ast`` and not grimp (as ``tests/architecture/test_imports.py`` does for baton_engine): the benchmarks are
scripts run from their folder, importing each other by bare name (``import report``), not a package grimp can
map. Every import statement counts, function-local ones too: a circle hidden in a function works until someone
moves the import to the top.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def benchmark_imports(folder: Path) -> dict[str, set[str]]:
    """Each module of ``folder`` (its ``*.py``, by bare name) and the modules of ``folder`` it imports."""
    modules = {path.stem: path for path in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
        graph[name] = imported & modules.keys()
    return graph


def import_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its first module repeated at the end), or None when the imports run one way."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(reversed(error.args[1]))
    return None


def test_the_benchmarks_import_one_way() -> None:
    graph = benchmark_imports(BENCHMARKS)
    assert {"report", "memory_bench", "soak_report", "markdown_table"} <= graph.keys()
    circle = import_circle(graph)
    assert circle is None, "an import circle in benchmarks/: " + " -> ".join(circle or [])


def test_a_function_local_import_back_is_a_circle(tmp_path: Path) -> None:
    (tmp_path / "report.py").write_text("import json\n\n\ndef render():\n    import section\n", "utf-8")
    (tmp_path / "section.py").write_text("def render():\n    from report import table\n", "utf-8")
    (tmp_path / "alone.py").write_text("import report\n", "utf-8")
    graph = benchmark_imports(tmp_path)
    assert graph == {"report": {"section"}, "section": {"report"}, "alone": {"report"}}
    assert import_circle(graph) in (["report", "section", "report"], ["section", "report", "section"])
    (tmp_path / "section.py").write_text("def render():\n    from markdown_table import markdown_table\n", "utf-8")
    assert import_circle(benchmark_imports(tmp_path)) is None
