"""The settings and counter an operation runs with: the host's inside Hermes, else the layered settings.

Why a context and not arguments: the CLI, the engine tools and the MCP server call the same operation
functions; the Hermes engine sets its settings and counter around a tool call (``host_counting``), the CLI
names a Hermes ``baton:`` block (``config_yaml_layer``), and an operation reads whichever holds
(``effective_settings``, ``brief_counter``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from baton_engine.errors import UserInputError
from baton_engine.handoff import store
from baton_engine.handoff.config import BatonConfig, load_config
from baton_engine.settings import BatonSettings, load_settings
from baton_engine.tokens.contract import BackendConfigError
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend
from baton_engine.tokens.rough import ROUGH_SOURCE, estimate_tokens_rough

# The host's settings and counter for the operations run inside it (the Hermes engine sets them around a tool
# call), so ``baton_resume`` counts with the engine's backend instead of building one per call. A context
# variable, not a global: it holds only for the call that set it.
_HOST_COUNTING: ContextVar[tuple[BatonSettings, Callable[[], TokenCounter | None]] | None] = ContextVar(
    "baton_host_counting", default=None)


@contextmanager
def host_counting(settings: BatonSettings, counter: Callable[[], TokenCounter | None]) -> Iterator[None]:
    """Within this block, operations use ``settings`` and ``counter()`` (built lazily, never closed here)."""
    token = _HOST_COUNTING.set((settings, counter))
    try:
        yield
    finally:
        _HOST_COUNTING.reset(token)


def project_config(start: Path | str | None) -> BatonConfig | None:
    """The ``.baton/config.json`` of the project at or above ``start`` (default: the working directory, where
    the engine looks for its project too); None outside a project. A broken file raises ``UserInputError``."""
    paths = store.find_project_root(Path(start or ".").resolve())
    return load_config(paths.data_dir) if paths is not None else None


# The Hermes ``baton:`` block an operation outside Hermes reads as its config.yaml layer: set by the CLI when a
# Hermes home is named (``--hermes-home`` or ``$HERMES_HOME``), so `baton doctor` / `baton tokens` see the
# settings Hermes uses.
_CONFIG_YAML_LAYER: ContextVar[Mapping[str, Any] | None] = ContextVar("baton_config_yaml_layer", default=None)


@contextmanager
def config_yaml_layer(block: Mapping[str, Any] | None) -> Iterator[None]:
    """Within this block, ``effective_settings`` reads ``block`` (a ``baton:`` block) as the config.yaml layer."""
    token = _CONFIG_YAML_LAYER.set(block)
    try:
        yield
    finally:
        _CONFIG_YAML_LAYER.reset(token)


def effective_settings(config: BatonConfig | None = None) -> BatonSettings:
    """The settings an operation uses: the host's when one is set, else ``settings.load_settings`` with the
    Hermes ``baton:`` block when one is named (``config_yaml_layer``) and the project's ``.baton/config.json``
    as its lowest layer (the one precedence, see ``settings``)."""
    host = _HOST_COUNTING.get()
    if host is not None:
        return host[0]
    return load_settings(hermes_block=_CONFIG_YAML_LAYER.get(), project=config)


@contextmanager
def brief_counter(settings: BatonSettings) -> Iterator[tuple[Callable[[str], int] | None, str | None]]:
    """The configured exact text counter for brief budgets: the host's counter, else one built from
    ``settings`` for this call.

    With no exact backend configured this yields ``(None, None)``: the renderer's own chars/4 estimate. The
    agent-loop safety margin is not added here (it is sized for whole prompts, not a 1,200-token brief); a
    backend failure falls back to the rough count of the same text.
    """
    host = _HOST_COUNTING.get()
    if host is not None:
        shared = host[1]()
        if shared is None or shared.source == ROUGH_SOURCE:
            yield None, None
        else:
            yield _text_counter(shared), shared.source
        return
    try:
        backend, selection = build_backend(settings.tokenizer)
    except BackendConfigError as exc:
        raise UserInputError(f"tokenizer: {exc}") from None
    if selection.name == ROUGH_SOURCE:
        backend.close()
        yield None, None
        return
    counter = TokenCounter(backend, fallback_margin_tokens=0)
    try:
        yield _text_counter(counter), counter.source
    finally:
        counter.close()


def _text_counter(counter: TokenCounter) -> Callable[[str], int]:
    def count(text: str) -> int:
        tokens = counter.count_text(text).tokens
        return tokens if tokens is not None else estimate_tokens_rough(text)

    return count
