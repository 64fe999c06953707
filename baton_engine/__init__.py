"""Baton: exact-budget, handoff-based context engine for Hermes Agent."""

__version__ = "0.1.0"
