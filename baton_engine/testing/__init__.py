"""The conformance kit for tokenizer-backend authors: run Baton's checks against your own backend, offline.

``run_checks(backend, reference=None) -> Report`` and ``assert_conformant(backend, reference=None)``; the
same checks as ``baton tokens check NAME``. See the README's "Writing a backend".
"""

from baton_engine.testing.conformance import assert_conformant, run_checks
from baton_engine.testing.report import Check, Report

__all__ = ["Check", "Report", "assert_conformant", "run_checks"]
