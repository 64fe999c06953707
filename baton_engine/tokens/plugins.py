"""Tokenizer-backend registry: pluggy + the ``baton_engine.tokenizers`` entry points.

The built-in ``rough`` backend is registered through the same hook as third-party plugins (the
datasette pattern), so there is one discovery path. Only the selected backend's factory is called;
configuration mistakes (unknown name, two distributions claiming one name) fail at start-up with a
message that says how to fix them; a plugin that fails to import is skipped and reported.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import pluggy

from baton_engine.tokens import hookspecs, rough
from baton_engine.tokens.contract import BackendConfigError, BackendSpec, TokenizerBackend, TokenizerConfig

LOGGER = logging.getLogger("baton_engine.tokens")
AUTO = "auto"
CORE_DISTRIBUTION = "baton-engine"
_OPENAI_MODEL = re.compile(
    r"^(?:openai/)?(?:gpt-|chatgpt-|ft:gpt-|text-embedding-|codex-|o[1-9](?:$|-))", re.IGNORECASE
)


@dataclass(frozen=True)
class InstalledBackend:
    spec: BackendSpec
    distribution: str


@dataclass(frozen=True)
class BrokenPlugin:
    """An entry point that failed to import: skipped, reported by name, distribution and exception type."""

    entry_point: str
    distribution: str
    error_type: str

    def describe(self) -> str:
        return f"{self.entry_point} ({self.distribution}: {self.error_type})"


@dataclass(frozen=True)
class Registry:
    """Installed backends by name (sorted) plus plugins that could not be imported."""

    backends: dict[str, InstalledBackend]
    broken: tuple[BrokenPlugin, ...] = ()


@dataclass(frozen=True)
class Selection:
    """Which backend was chosen and why (shown by status and ``baton tokens backends``)."""

    name: str
    reason: str
    requested: str


def _distribution_name(entry_point: EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return dist.name if dist is not None else f"<entry point {entry_point.value}>"


def _plugin_manager(
    eps: Iterable[EntryPoint],
) -> tuple[pluggy.PluginManager, dict[str, str], tuple[BrokenPlugin, ...]]:
    """Register the built-in plugin and every importable entry point.

    A plugin that fails to import is skipped (it must not take the other backends down) and reported.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(rough, name=f"{CORE_DISTRIBUTION}:rough")
    owners = {f"{CORE_DISTRIBUTION}:rough": CORE_DISTRIBUTION}
    broken: list[BrokenPlugin] = []
    for ep in eps:
        dist = _distribution_name(ep)
        plugin_name = f"{dist}:{ep.name}"
        if pm.has_plugin(plugin_name):
            continue
        try:
            module = ep.load()
        except Exception as exc:  # noqa: BLE001 - reported, never fatal for the other backends
            LOGGER.warning("tokenizer plugin skipped entry_point=%s distribution=%s type=%s",
                           ep.name, dist, type(exc).__name__)
            broken.append(BrokenPlugin(ep.name, dist, type(exc).__name__))
            continue
        pm.register(module, name=plugin_name)
        owners[plugin_name] = dist
    return pm, owners, tuple(broken)


def discover(eps: Iterable[EntryPoint] | None = None) -> Registry:
    """Every backend on offer; constructs nothing. Two distributions claiming one name is an error.

    ``eps`` replaces the installed entry points (tests); by default the ``baton_engine.tokenizers`` group.
    """
    if eps is None:
        eps = entry_points(group=hookspecs.ENTRY_POINT_GROUP)
    pm, owners, broken = _plugin_manager(eps)
    found: dict[str, InstalledBackend] = {}
    for impl in pm.hook.baton_tokenizer_backends.get_hookimpls():
        plugin_name = pm.get_name(impl.plugin) or ""
        dist = owners[plugin_name]
        try:
            specs = impl.function()
        except Exception as exc:  # noqa: BLE001 - a failing hook is reported like a failed import
            LOGGER.warning("tokenizer plugin skipped distribution=%s type=%s", dist, type(exc).__name__)
            broken = (*broken, BrokenPlugin(plugin_name.partition(":")[2], dist, type(exc).__name__))
            continue
        if not isinstance(specs, (list, tuple)) or not all(isinstance(spec, BackendSpec) for spec in specs):
            raise BackendConfigError(
                f"tokenizer plugin from distribution {dist!r} returned {type(specs).__name__}, expected a list "
                "of BackendSpec; upgrade or uninstall it"
            )
        for spec in specs:
            other = found.get(spec.name)
            if other is not None and other.distribution != dist:
                first, second = sorted((other.distribution, dist))
                raise BackendConfigError(
                    f"tokenizer backend name {spec.name!r} is provided by two distributions: "
                    f"{first} and {second}; uninstall one of them"
                )
            found[spec.name] = InstalledBackend(spec, dist)
    return Registry(dict(sorted(found.items())), broken)


def installed_backends(eps: Iterable[EntryPoint] | None = None) -> dict[str, BackendSpec]:
    """Backend name -> spec, sorted by name."""
    return {name: item.spec for name, item in discover(eps).backends.items()}


def _auto_choice(config: TokenizerConfig) -> tuple[str, str]:
    if config.url:
        return "vllm", "a tokenizer URL is set"
    if config.path:
        return "hf", "a tokenizer path/id is set"
    if config.model and _OPENAI_MODEL.match(config.model):
        return "tiktoken", f"model {config.model!r} is OpenAI-family"
    return "rough", "no tokenizer URL, path or OpenAI-family model is configured"


def select_backend(config: TokenizerConfig, registry: Registry | None = None) -> Selection:
    """Resolve ``auto`` and check the name; raises BackendConfigError for an unknown explicit name."""
    if registry is None:
        registry = discover()
    installed = registry.backends
    requested = config.backend.strip().lower()
    if requested != AUTO:
        if requested not in installed:
            names = ", ".join(installed)
            failed = "".join(f"; plugin that failed to import: {item.describe()}" for item in registry.broken)
            near = difflib.get_close_matches(requested, [*installed, AUTO], n=1, cutoff=0.6)
            hint = f"did you mean {near[0]!r}? " if near else ""
            # both places the name can be set: a typo in config.yaml must not be told to set a variable
            raise BackendConfigError(
                f"tokenizer backend {requested!r} is not installed (installed: {names}{failed}); {hint}set the "
                "backend (baton.tokenizer.backend in config.yaml, or BATON_TOKENIZER_BACKEND) to one of them or "
                "to 'auto', or install the backend's distribution"
            )
        return Selection(requested, "chosen explicitly (backend setting)", requested)
    name, why = _auto_choice(config)
    if name in installed:
        return Selection(name, f"auto: {why}", requested)
    broken: BrokenPlugin | None = next((item for item in registry.broken if item.entry_point == name), None)
    problem = (
        f"its plugin failed to import ({broken.distribution}: {broken.error_type})"
        if broken
        else f"it is not installed (pip install 'baton-engine[{name}]')"
    )
    return Selection(rough.ROUGH_SOURCE, f"auto: {why} -> {name}, but {problem}; using rough", requested)


def _probe_answers(field: str, url: str, model: str | None, timeout_seconds: float, registry: Registry | None,
                   failing: str, then: str = "") -> Iterator[tuple[str, Any]]:
    """``(backend name, answer)`` of each installed backend (by name) whose ``BackendSpec.<field>`` probe asks the
    server at ``url``. A probe is plugin code: one that fails is reported by type (``failing`` says what it
    failed to do, ``then`` what follows) and skipped, never believed."""
    if registry is None:
        registry = discover()
    for name, item in registry.backends.items():
        probe = getattr(item.spec, field)
        if probe is None:
            continue
        try:
            answer = probe(url, model, timeout_seconds)
        except Exception as exc:  # noqa: BLE001 - a broken probe is reported by type and never believed
            LOGGER.warning("tokenizer backend %r failed to %s (%s)%s", name, failing, type(exc).__name__, then)
            continue
        yield name, answer


def detect_server_backend(url: str, model: str | None, timeout_seconds: float,
                          registry: Registry | None = None) -> str | None:
    """The first installed backend (by name) that recognises the server at ``url`` as one that counts for itself
    (``BackendSpec.detect``); None when none does."""
    return next((name for name, found in _probe_answers("detect", url, model, timeout_seconds, registry,
                                                         "probe a server", "; not using it") if found is True), None)


def backend_window(url: str, model: str | None, timeout_seconds: float,
                   registry: Registry | None = None) -> tuple[str, int] | None:
    """``(backend name, window)`` from the first installed backend (by name) whose ``BackendSpec.window`` reads the
    server at ``url``; None when none does."""
    return next(((name, found) for name, found in _probe_answers("window", url, model, timeout_seconds, registry,
                                                                  "read a server's window")
                 if type(found) is int and found > 0), None)


def build_backend(
    config: TokenizerConfig, registry: Registry | None = None
) -> tuple[TokenizerBackend, Selection]:
    """Construct only the selected backend. Factory errors surface as BackendConfigError at start-up."""
    if registry is None:
        registry = discover()
    selection = select_backend(config, registry)
    chosen = registry.backends[selection.name]
    try:
        backend = chosen.spec.factory(config)
    except BackendConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - a broken factory is a start-up error, named by type only
        raise BackendConfigError(
            f"tokenizer backend {selection.name!r} (distribution {chosen.distribution}) failed to start "
            f"({type(exc).__name__}); check its settings"
        ) from exc
    if not isinstance(backend, TokenizerBackend):
        raise BackendConfigError(
            f"tokenizer backend {selection.name!r} (distribution {chosen.distribution}) built "
            f"{type(backend).__name__}, not a TokenizerBackend; upgrade or uninstall it"
        )
    return backend, selection


def backends_report(config: TokenizerConfig, registry: Registry | None = None) -> dict[str, Any]:
    """JSON-able view for ``baton tokens backends`` and status: installed, broken, and what ``auto`` picks."""
    if registry is None:
        registry = discover()
    auto = select_backend(replace(config, backend=AUTO), registry)
    return {
        "ok": True,
        "backends": [
            {"name": name, "distribution": item.distribution, "description": item.spec.description}
            for name, item in registry.backends.items()
        ],
        "broken": [
            {"entry_point": item.entry_point, "distribution": item.distribution, "error_type": item.error_type}
            for item in registry.broken
        ],
        "configured": config.backend,
        "auto": {"name": auto.name, "reason": auto.reason},
    }
