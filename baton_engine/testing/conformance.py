"""The conformance kit's entry points: ``run_checks`` (a report) and ``assert_conformant`` (for pytest).

    from baton_engine.testing import assert_conformant
    def test_my_backend_conforms():
        assert_conformant(MyBackend(), reference=None)

The checks run in a fixed order on the backend itself; the last one calls ``close()`` twice, so pass a
backend built for the check. ``reference`` is only counted, never closed.
"""

from __future__ import annotations

from collections.abc import Callable

from baton_engine.testing import contract_checks, safety_checks, speed
from baton_engine.testing.outcomes import count_all, items
from baton_engine.testing.report import FAIL, Check, Report
from baton_engine.tokens.contract import TokenizerBackend


def _guarded(name: str, run: Callable[[], Check]) -> Check:
    """A check that raises (the backend broke the kit's own calls) fails, named by exception type only."""
    try:
        return run()
    except Exception as exc:  # noqa: BLE001 - the backend author's code broke the kit's call: a finding
        return Check(name, FAIL, f"the check stopped: the backend raised {type(exc).__name__}",
                     "see the other failed checks; every contract method must return or raise CannotCount")


def _source_of(backend: TokenizerBackend) -> str:
    try:
        source = backend.source
    except Exception:  # noqa: BLE001 - the source check reports it
        return "<unreadable source>"
    return source if contract_checks.source_problem(source) is None else "<unsafe source>"


def run_checks(backend: TokenizerBackend, reference: TokenizerBackend | None = None) -> Report:
    """Run every check against ``backend`` (and compare with ``reference`` when given); never raises for a
    misbehaving backend, every problem is a failed check with a how-to-fix line."""
    baseline = count_all(backend, items())
    compared = None if reference is None else count_all(reference, items())
    reference_source = None if reference is None else _source_of(reference)
    checks = [
        _guarded("source", lambda: contract_checks.check_source(backend)),
        _guarded("results", lambda: contract_checks.check_results(backend, baseline)),
        _guarded("honest-exact", lambda: contract_checks.check_honest_exact(backend)),
        _guarded("agreement", lambda: contract_checks.check_agreement(baseline, compared, reference_source)),
        _guarded("deepcopy", lambda: safety_checks.check_deepcopy(backend, baseline)),
        _guarded("threads", lambda: safety_checks.check_threads(backend, baseline)),
        _guarded("errors", lambda: safety_checks.check_errors(backend)),
    ]
    figures: dict[str, float] = {}

    def timing() -> Check:
        figures.update(speed.measure(backend))
        return speed.describe(figures)

    checks.append(_guarded("speed", timing))
    checks.append(_guarded("lifecycle", lambda: safety_checks.check_lifecycle(backend, baseline)))
    return Report(_source_of(backend), reference_source, tuple(checks), figures)


def assert_conformant(backend: TokenizerBackend, reference: TokenizerBackend | None = None) -> Report:
    """``run_checks``, raising AssertionError with the whole report when a check failed; returns the report."""
    report = run_checks(backend, reference)
    if not report.ok:
        raise AssertionError(report.text())
    return report
