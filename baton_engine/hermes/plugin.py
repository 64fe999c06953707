"""Hermes plugin entry: ``register(ctx)`` wires Baton into the host (entry point ``hermes_agent.plugins``).

Registers the engine (a real ``ContextEngine`` subclass), the bundled skill, the ``llm_request`` and
``llm_execution`` middleware, and the guarded estimator/auxiliary patches. Settings are validated HERE, at start-up, in
the one precedence (``settings.load_settings``, the working directory's ``.baton/config.json`` lowest): a
malformed value (BATON_*, ``baton:`` or project config) raises an error naming it (Hermes reports the plugin
as failed and uses its own compressor). Registration never selects the engine: the user's ``context.engine:
baton`` does. Patches are installed only when that selection is made, and the log says which.

What the user must know is said on the terminal (stderr, one line each), because Hermes 0.19 sends plugin
warnings only to its log files: a value that stops Baton, an unknown ``baton:`` key (ignored), and a
configured tokenizer that cannot start (built beside the plugin load when Baton is selected, ``agent/startup``, so
the line comes at start-up and not at the first request; Baton then counts with estimates, ``tokenizer_check``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from baton_engine.agent import startup
from baton_engine.agent.notices import tell
from baton_engine.errors import UserInputError
from baton_engine.hermes.config import ENGINE_NAME
from baton_engine.hermes.host import host_runtime
from baton_engine.hermes.manifest import MIDDLEWARE
from baton_engine.hermes.patches import Activation, activation, set_activation
from baton_engine.hermes.refusal_patch import refusal_patches
from baton_engine.tokens.counter import TokenCounter

LOGGER = logging.getLogger("baton_engine.hermes")
SKILL_PATH = Path(__file__).with_name("SKILL.md")
SKILL_DESCRIPTION = "Record decisions, evidence and open items so Baton handoffs survive context compaction."

# ``activation`` lives in ``patches`` (status reads it there)
__all__ = ["activation", "register", "unregister"]


def _host_home() -> Path | None:
    """Hermes' own answer (profiles may override ``$HERMES_HOME``), when this Hermes has it."""
    try:
        from hermes_constants import get_hermes_home
    except ImportError:
        return None
    try:
        return Path(get_hermes_home())
    # Hermes' own home resolver (profiles) runs at plugin registration: any failure falls back to $HERMES_HOME as
    # Baton reads it, never a failed plugin load
    except Exception:  # noqa: BLE001
        return None


def register(ctx: Any) -> None:
    """Called by Hermes' PluginManager when ``baton`` is in ``plugins.enabled``."""
    try:
        runtime = host_runtime(_host_home())
    except UserInputError as exc:  # a bad BATON_* value, baton: key or .baton/config.json: named, not guessed
        tell(f"NOT started: {exc}; Hermes uses its built-in compressor until this is fixed (see `baton doctor`)")
        raise
    startup.install(runtime)
    view = runtime.view
    from baton_engine.hermes.engine import BatonContextEngine  # imports Hermes: only once Hermes loads the plugin

    engine = BatonContextEngine()
    if view.context_length:
        engine.update_model(view.model or "", view.context_length, base_url=view.base_url or "",
                            provider=view.provider or "")
    ctx.register_context_engine(engine)
    ctx.register_skill("baton", SKILL_PATH, description=SKILL_DESCRIPTION)
    current = Activation(extra=refusal_patches())
    replaced = set_activation(current)
    if replaced is not None:
        replaced.deactivate()
    for kind in MIDDLEWARE:  # what plugin.yaml declares (provides_middleware), from the same tuple
        ctx.register_middleware(kind, getattr(current, kind))
    if view.engine_selected:
        skipped = current.activate()
        startup.start_counting(runtime, lambda counter: _said_active(counter, skipped))
    else:
        LOGGER.warning(
            "Baton plugin loaded but NOT active: context.engine is %r; set context.engine: %s to use it",
            view.engine, ENGINE_NAME,
        )


def _said_active(counter: TokenCounter | None, skipped: list[str]) -> None:
    """Once the start-up build ended (``startup.start_counting``): Baton is active, counting with what."""
    LOGGER.warning(
        "Baton context engine ACTIVE (context.engine: %s): counting with %s, %d patch(es) skipped%s",
        ENGINE_NAME, counter.source if counter is not None else "estimates (the tokenizer cannot start)",
        len(skipped), f": {'; '.join(skipped)}" if skipped else "",
    )


def unregister() -> None:
    """Undo the patches (restoring Hermes' originals where still ours) and release the tokenizer (once its
    start-up build is done)."""
    startup.started()
    replaced = set_activation(None)
    if replaced is not None:
        replaced.deactivate()
    startup.uninstall()
