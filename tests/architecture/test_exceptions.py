"""Broad exception catches only at a boundary: the host's, a third party's code, or the surfaces' JSON contract.

Why: inside the core a catch-all hides Baton's own bugs as silent fallbacks. Where Baton calls code it does not
own (Hermes, a tokenizer backend, transformers, a backend author's code under the conformance kit) or promises
an answer instead of a traceback, a broad catch is the design; each such place is listed below with the contract
it protects. A handler that ends in ``raise`` (a cleanup that re-raises, or a translation into a typed error)
hides nothing and is allowed anywhere. The walk reads the source (AST), it imports nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "baton_engine", *sorted(path for path in (REPO / "backends").iterdir() if path.is_dir()))
BROAD = {"Exception", "BaseException"}


@dataclass(frozen=True)
class Boundary:
    """Broad catches allowed in ``module`` (a file or a folder, relative to the repo), optionally only inside the
    function ``function`` (its qualified name), because of ``reason``."""

    module: str
    reason: str
    function: str | None = None

    def covers(self, path: str, function: str | None) -> bool:
        inside = path == self.module or path.startswith(self.module.rstrip("/") + "/")
        return inside and (self.function is None or self.function == function)


BOUNDARIES = (
    Boundary("baton_engine/hermes/", "the host boundary: nothing may raise into Hermes"),
    Boundary("baton_engine/results.py", "the command surfaces promise a JSON answer, never a traceback",
             function="call"),
    Boundary("baton_engine/tokens/counter.py", "a tokenizer backend is third-party code: any failure of it "
             "becomes a fallback count, never a failed request"),
    Boundary("baton_engine/tokens/deadline.py", "a bounded count runs a backend (third-party code) on a worker "
             "thread: its outcome is handed to the caller, a clean-up failure is logged, never lost in the thread"),
    Boundary("baton_engine/tokens/plugins.py", "backend plugins are third-party code: a broken one is reported, "
             "never fatal for the others"),
    Boundary("baton_engine/tokenizer_check.py", "a backend factory is third-party code: the verdict reports its "
             "failure", function="check_tokenizer"),
    Boundary("baton_engine/testing/", "the conformance kit runs a backend author's code and reports what it does"),
    Boundary("backends/hf/baton_hf/jinja_env.py", "transformers' private template compiler and jinja2 are "
             "third-party code: a template they reject just gets no fast path"),
    Boundary("baton_engine/refusal.py", "a provider SDK's exception object is third-party code: a property that "
             "raises is no text", function="_safe"),
    Boundary("baton_engine/metrics/otel.py", "OpenTelemetry's SDK and exporters are third-party code: a failure "
             "drops that event's measurements, never the agent's request", function="OtelSink._guarded"),
    Boundary("baton_engine/compaction/builder.py", "the caller's counter is host or backend code: its failure "
             "becomes rough + 10%", function="GuardedCounter.__call__"),
)


@dataclass(frozen=True)
class Catch:
    path: str
    line: int
    function: str | None
    caught: str


def _names(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"(bare)"}
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(item) for item in node.elts))
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return {node.id} if isinstance(node, ast.Name) else set()


def _reraises(handler: ast.ExceptHandler) -> bool:
    return bool(handler.body) and isinstance(handler.body[-1], ast.Raise)


class _Walker(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.scope: list[str] = []
        self.found: list[Catch] = []

    def _scoped(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        caught = _names(node.type) & (BROAD | {"(bare)"})
        if caught and not _reraises(node):
            self.found.append(Catch(self.path, node.lineno, ".".join(self.scope) or None, ", ".join(sorted(caught))))
        self.generic_visit(node)


def broad_catches(roots: tuple[Path, ...] = ROOTS) -> list[Catch]:
    found: list[Catch] = []
    for root in roots:
        for file in sorted(root.rglob("*.py")):
            relative = file.relative_to(REPO).as_posix()
            if "/tests/" in f"/{relative}" or "/benchmarks/" in f"/{relative}":
                continue  # a backend's own tests and benchmarks are not the engine
            walker = _Walker(relative)
            walker.visit(ast.parse(file.read_text(encoding="utf-8"), filename=relative))
            found += walker.found
    return found


def outside_boundaries(catches: list[Catch]) -> list[Catch]:
    return [catch for catch in catches
            if not any(boundary.covers(catch.path, catch.function) for boundary in BOUNDARIES)]


def test_broad_catches_only_at_a_listed_boundary() -> None:
    stray = outside_boundaries(broad_catches())
    assert not stray, (
        "broad exception catches outside a boundary (tests/architecture/test_exceptions.py BOUNDARIES):\n"
        + "\n".join(f"  {c.path}:{c.line} in {c.function or '<module>'}: except {c.caught}" for c in stray)
        + "\nFix: catch the exceptions the code path can really raise (and test that path), raise a typed error "
          "from baton_engine.errors, or re-raise; if the callee is host or third-party code, add a Boundary "
          "naming the contract the catch protects.")


def test_every_boundary_still_holds_a_broad_catch() -> None:
    """A boundary left over after its catch was narrowed or moved would allow the next one silently."""
    catches = broad_catches()
    unused = [b for b in BOUNDARIES if not any(b.covers(c.path, c.function) for c in catches)]
    assert not unused, "boundaries without a broad catch (remove them): " + ", ".join(
        f"{b.module}{':' + b.function if b.function else ''}" for b in unused)


def test_the_walk_finds_a_broad_catch_outside_the_boundaries(tmp_path: Path) -> None:
    """The check can fail: a core module with a catch-all (and one that re-raises, which is allowed)."""
    module = REPO / "baton_engine" / "handoff" / "_probe_for_the_walk.py"
    source = ("def f():\n    try:\n        pass\n    except Exception:\n        return None\n"
              "def g():\n    try:\n        pass\n    except BaseException:\n        raise\n")
    tree = ast.parse(source)
    walker = _Walker(module.relative_to(REPO).as_posix())
    walker.visit(tree)
    assert [(c.line, c.function) for c in outside_boundaries(walker.found)] == [(4, "f")]
