"""A real ``BatonContextEngine`` at the start of a session, with its runtime installed, and the plugin's
activation around a block (both need hermes-agent)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from baton_engine.settings import BatonSettings, load_settings


def started_engine(project: Path, settings: BatonSettings | None = None, *, window: int = 65536,
                   clock: Callable[[], datetime] | None = None) -> Any:
    """Install a runtime with ``settings`` (default: the environment's) and return an engine for ``project``
    on model ``qwen3`` with ``window``, after Hermes' CLI session start (``session-1``)."""
    from baton_engine.agent.runtime import BatonRuntime, set_runtime
    from baton_engine.hermes.engine import BatonContextEngine

    set_runtime(BatonRuntime(settings or load_settings(), clock=clock))
    engine = BatonContextEngine(project_dir=project)
    engine.update_model("qwen3", window)
    engine.on_session_start("session-1", platform="cli")
    return engine


@contextmanager
def activated() -> Iterator[Any]:
    """The plugin's activation (Hermes' estimators patched, the ``llm_request`` middleware on) for the block,
    undone after it, also when it fails; every patch must install (hermes-agent 0.19.0 has every name)."""
    from baton_engine.hermes.patches import Activation

    activation = Activation()
    skipped = activation.activate()
    assert not skipped, skipped
    try:
        yield activation
    finally:
        activation.deactivate()


@contextmanager
def active_runtime(model: str, base_url: str, context_length: int) -> Iterator[tuple[Any, Any]]:
    """``(activation, runtime)``: a runtime for Hermes' configured ``model`` at ``base_url`` with ``context_length``
    (the environment's settings) installed, and the plugin activated, for the block."""
    from baton_engine.agent.runtime import BatonRuntime, set_runtime
    from baton_engine.hermes.config import HermesView

    runtime = BatonRuntime(load_settings(), HermesView(engine="baton", model=model, base_url=base_url,
                                                       context_length=context_length))
    set_runtime(runtime)
    with activated() as activation:
        yield activation, runtime


def unconfirmed_cap(window: int, prompt: int) -> int:
    """The output cap Baton sends for an exact ``prompt`` on a route whose provider has not reported a prompt
    size yet: the window less the prompt less the room kept for an unconfirmed count (``tokens.verify``)."""
    import math

    from baton_engine.tokens.verify import UNCONFIRMED_SHARE

    return window - prompt - math.ceil(UNCONFIRMED_SHARE * prompt)


# Where each tested Hermes keeps the estimators its loop calls before a request (docs/hermes-versions.md):
# 0.19 imports both into agent.conversation_loop; 0.22 has the preflight one in agent.turn_context and reads
# the pre-API messages one from agent.model_metadata at each call.
ESTIMATOR_HOMES = {"estimate_request_tokens_rough": ("agent.conversation_loop", "agent.turn_context"),
                   "estimate_messages_tokens_rough": ("agent.conversation_loop", "agent.model_metadata")}


def hermes_estimator(name: str) -> Callable[..., int]:
    """Hermes' estimator ``name`` as its loop calls it now (Baton's exact one while activated)."""
    import importlib

    for module_name in ESTIMATOR_HOMES[name]:
        found = getattr(importlib.import_module(module_name), name, None)
        if found is not None:
            return found
    raise LookupError(f"no Hermes module holds {name}")
