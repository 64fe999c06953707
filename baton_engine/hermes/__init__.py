"""Baton inside Hermes Agent: the ONLY package that imports Hermes (lazily, inside functions).

``plugin.register`` is the entry point (``hermes_agent.plugins: baton``); ``engine.BatonContextEngine``
is the engine; ``cycle`` runs one compaction as a Baton handoff; ``patches`` swaps Hermes' rough
estimators for exact counts and clamps output budgets; ``tools`` exposes baton_capture / baton_resume /
baton_status. Importing this package does not import Hermes, so the CLI works without it.
"""
