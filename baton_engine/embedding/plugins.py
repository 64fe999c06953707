"""Find an embedder by name: the built-in ``openai`` or a distribution's ``baton_engine.embedders`` entry point.

An entry point names a factory ``(EmbedderConfig) -> Embedder``; only the chosen one is imported. The result is
wrapped in the breaker, with ``RefusalSplitter`` inside it (a refused text costs only itself). An unknown name
is an ``EmbedderError`` that lists what is installed.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from baton_engine.embedding.breaker import EmbedderBreaker
from baton_engine.embedding.contract import EmbedderConfig, EmbedderError
from baton_engine.embedding.openai import create as create_openai
from baton_engine.embedding.refusals import RefusalSplitter

ENTRY_POINT_GROUP = "baton_engine.embedders"


def installed() -> list[str]:
    return sorted({"openai", *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})


def load_embedder(config: EmbedderConfig) -> EmbedderBreaker:
    """The configured embedder behind a breaker; ``EmbedderError`` when it cannot be built."""
    if config.backend == "openai":
        return EmbedderBreaker(RefusalSplitter(create_openai(config)))
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == config.backend]
    if not found:
        raise EmbedderError(f"no embedder backend named {config.backend!r}; installed: {', '.join(installed())} "
                            "(pip install baton-engine-st for a local sentence-transformers model)")
    try:
        factory = found[0].load()
        return EmbedderBreaker(RefusalSplitter(factory(config)))
    except EmbedderError:
        raise
    except Exception as exc:  # noqa: BLE001  a third-party factory: any failure is a clear start-up error
        raise EmbedderError(f"embedder backend {config.backend!r} failed to start: {type(exc).__name__}") from None
