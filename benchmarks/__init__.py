"""Baton's benchmarks: each script runs from the repository root (``python benchmarks/run.py``) and imports the
others as ``benchmarks.*``, the way the tests import them."""
