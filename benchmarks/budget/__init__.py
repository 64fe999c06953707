"""Output budgets: the cap a request carries near the limit, every request shape Hermes builds kept valid and within
the window, and what a translation layer (llm-babel) would lose of those shapes."""
