"""Let the calling agent's engine see a provider's context-overflow refusal, the moment Hermes classifies it.

Why ``classify_api_error``: it is the one call in Hermes' API-error path that receives the exception itself
(its ``.body`` carries llama.cpp's ``n_ctx`` / ``n_prompt_tokens``, which Hermes' own text parsers ignore) while
a loop frame holds the agent, and it runs BEFORE Hermes reacts (``update_model`` with the limit it parsed, then
``_compress_context`` and a retry). The module holding the name differs by version (``docs/hermes-refusals.md``):

- hermes-agent 0.19.0: ``agent.conversation_loop.classify_api_error`` (inside ``run_conversation``);
- hermes-agent(-iot) 0.22.x: ``agent.turn_api_error.classify_api_error`` (inside ``handle_api_error``).

A name missing in this Hermes is skipped with a warning (``Patch``). The wrapper returns the original's result
unchanged, always; reading the refusal and telling the engine are guarded so nothing raises into Hermes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from baton_engine.hermes.caller import calling_agent, engine_types
from baton_engine.hermes.guard import guarded, nothing
from baton_engine.hermes.patches import Patch
from baton_engine.refusal import parse_refusal

LOGGER = logging.getLogger("baton_engine.hermes")
TARGETS = (
    ("agent.conversation_loop", "classify_api_error"),  # hermes-agent 0.19.0
    ("agent.turn_api_error", "classify_api_error"),     # hermes-agent(-iot) 0.22.x
)


def refusal_patches(engine_type: type | None = None) -> list[Patch]:
    """One ``Patch`` per Hermes module that classifies the main loop's API errors; each tells the calling
    agent's engine (an ``engine_type``, by default ``BatonContextEngine``) what a refusal proved."""
    return [Patch(module, attr, lambda original: observing_refusals(original, engine_type), alternative=True)
            for module, attr in TARGETS]


def observing_refusals(original: Callable[..., Any], engine_type: type | None = None) -> Callable[..., Any]:
    """``original`` (Hermes' ``classify_api_error``) that also hands a parsed ``Refusal`` to
    ``engine.observe_refusal`` of the agent whose loop is classifying the error."""

    def classify_api_error_observed(error: Any, *args: Any, **kwargs: Any) -> Any:
        classified = original(error, *args, **kwargs)
        _tell(error, engine_type)
        return classified

    return classify_api_error_observed


@guarded("refusal observer", nothing, instead="Hermes' handling unchanged")
def _tell(error: Any, engine_type: type | None) -> None:
    """Hermes' classify_api_error is its API-error path: it goes on with its own result whatever Baton does."""
    refusal = parse_refusal(error)
    if refusal is None:
        return
    found = calling_agent(engine_type or engine_types())
    observe = getattr(found[1], "observe_refusal", None) if found is not None else None
    if observe is None:
        LOGGER.info("baton saw a %s refusal (%s) with no Baton engine to tell", refusal.kind, refusal.server)
    else:
        observe(refusal)

