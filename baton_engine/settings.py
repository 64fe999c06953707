"""One frozen settings object: BATON_* environment (INCONTEXT_* accepted as aliases) + Hermes ``baton:`` block
+ the project's ``.baton/config.json``: the ONE place that decides which value wins.

Precedence, per setting: ``BATON_*`` env > ``INCONTEXT_*`` env alias > Hermes ``config.yaml`` ``baton:`` block
> the project's ``.baton/config.json`` (``PROJECT_KEYS``: ``tokenizer.{backend,path,url,model}``,
``brief.max_tokens``) > default. The environment wins because it is how an operator overrides a shared config
file for one process or deployment without editing it. Blank or malformed values fail with a ``SettingsError`` that
names the variable (or config key) and says what is expected. Every call reads the environment afresh
(skelet's class-level ``EnvSource`` snapshots ``os.environ`` once per process; we build a new source per call).
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from skelet import EnvSource, Field, Storage

from baton_engine.embedding import EmbedderConfig
from baton_engine.errors import UserInputError
from baton_engine.handoff.config import BatonConfig
from baton_engine.handoff.render import DEFAULT_MAX_TOKENS, MIN_MAX_TOKENS
from baton_engine.messages.markers import BATON_TOOLS
from baton_engine.tokens.contract import TokenizerConfig

# Environment variables cannot contain NUL, so this default can only mean "not set".
_UNSET = "\x00unset"


class SettingsError(UserInputError):
    """A setting is blank or malformed; the message names it and says what is expected."""

    kind = "settings_error"


# setting -> (primary env var, incontext alias or None)
ENV_VARIABLES: dict[str, tuple[str, str | None]] = {
    "backend": ("BATON_TOKENIZER_BACKEND", "INCONTEXT_BACKEND"),
    "url": ("BATON_TOKENIZER_URL", "INCONTEXT_TOKENIZER_URL"),
    "model": ("BATON_TOKENIZER_MODEL", None),
    "path": ("BATON_TOKENIZER_PATH", None),
    "timeout_seconds": ("BATON_TOKENIZER_TIMEOUT_SECONDS", "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS"),
    "user_agent": ("BATON_TOKENIZER_USER_AGENT", "INCONTEXT_TOKENIZER_USER_AGENT"),
    "api_key": ("BATON_TOKENIZER_API_KEY", None),
    "fallback_margin_tokens": ("BATON_FALLBACK_MARGIN_TOKENS", "INCONTEXT_FALLBACK_MARGIN_TOKENS"),
    "min_output_tokens": ("BATON_MIN_OUTPUT_TOKENS", "INCONTEXT_MIN_OUTPUT_TOKENS"),
    "compression_window_tokens": ("BATON_COMPRESSION_WINDOW_TOKENS", "INCONTEXT_COMPRESSION_WINDOW_TOKENS"),
    "telemetry": ("BATON_TELEMETRY", None),
    "prometheus_port": ("BATON_PROMETHEUS_PORT", None),
    "prometheus_host": ("BATON_PROMETHEUS_HOST", None),
}
TOKENIZER_KEYS = ("backend", "url", "model", "path", "timeout_seconds", "user_agent", "api_key")


SECRET_VARIABLES = frozenset({"BATON_TOKENIZER_API_KEY"})  # never in a repr, a log or doctor's output


def _raw_fields(namespace: dict[str, Any]) -> None:
    variables = [name for names in ENV_VARIABLES.values() for name in names if name is not None]
    namespace["__annotations__"] = {name.lower(): str for name in variables}
    for name in variables:
        namespace[name.lower()] = Field(_UNSET, read_only=True, hide=name in SECRET_VARIABLES)


# The raw strings of every variable in ENV_VARIABLES (one list: the fields are made from it); parsing and the
# messages are ours, so that they name the variable.
_RawEnvironment = types.new_class("_RawEnvironment", (Storage,), {"sources": []}, _raw_fields)


class _MappingEnvSource(EnvSource):  # type: ignore[type-arg]
    """An EnvSource over a given mapping instead of the process environment (fresh per call)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        super().__init__(prefix="")
        self.data = {str(key).upper(): value for key, value in env.items()}  # type: ignore[misc]


ROUTE_MATCH_KEYS = ("model", "provider", "base_url")


@dataclass(frozen=True)
class TokenizerRoute:
    """A ``baton.tokenizer_routes`` entry: the tokenizer of the routes it matches (model glob, provider, server).

    Why: the tokenizer follows the model. A fallback provider or a ``/model`` switch to another family counts
    with its own backend; an unmatched route that is not the configured model uses ``auto`` for its name."""

    tokenizer: TokenizerConfig
    model: str | None = None  # fnmatch glob over the served model name, e.g. "gpt-*"
    provider: str | None = None
    base_url: str | None = None
    context_length: int | None = None  # the window of the routes it matches (an auxiliary model's, say)

    def matches(self, model: str | None, base_url: str | None, provider: str | None) -> bool:
        if self.model is not None and not (model and fnmatch.fnmatchcase(model, self.model)):
            return False
        if self.provider is not None and provider != self.provider:
            return False
        return self.base_url is None or bool(base_url) and str(base_url).rstrip("/") == self.base_url

    def describe(self) -> str:
        return " ".join(f"{key}={getattr(self, key)}" for key in ROUTE_MATCH_KEYS if getattr(self, key) is not None)


@dataclass(frozen=True)
class BatonSettings:
    """Everything Baton reads at start-up. ``origins`` says where each non-default value came from."""

    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    fallback_margin_tokens: int = 1024
    min_output_tokens: int = 4096
    compression_window_tokens: int | None = None
    auto_checkpoint_on_end: bool = True
    fallback_token_threshold: int | None = None
    degradation_keep_recent: int = 6
    route_states: int = 8  # routes whose state (verification, calibration, anchor) an agent keeps for a switch back
    degradation_max_tokens: int | None = None
    brief_max_tokens: int = DEFAULT_MAX_TOKENS  # every brief: the compaction's and ``baton resume``'s
    fresh_tail_tokens: int | None = None
    tokenizer_routes: tuple[TokenizerRoute, ...] = ()
    # gateway platforms (telegram, discord, slack, api_server, ...): True lets every conversation resume and
    # see the project's handoffs; False (default) limits each to its own conversation's lineage
    share_handoffs: bool = False
    # recall's ranking by meaning: an embedding server or a local model (docs/recall.md); None: lexical only
    embedder: EmbedderConfig | None = None
    # Baton's tools the model is offered: every request carries their schemas (all four: 569 tokens with Qwen3,
    # docs/hermes.md); a small window may leave out the optional ones, e.g. [recall, capture]
    tools: tuple[str, ...] = BATON_TOOLS
    # the project's session metrics logs (docs/report.md): retired when last written more than this many days
    # ago, and the oldest while all of them exceed the total (a request with its response is ~680 bytes, measured:
    # 64 MiB ~ 100,000 requests); never one written within the live window (a gateway's idle but live session)
    metrics_max_age_days: int = 30
    metrics_max_total_mb: int = 64
    metrics_live_hours: int = 24
    # the metrics events also as OpenTelemetry metrics and spans (the ``otel`` extra; docs/report.md): through the
    # OpenTelemetry API's global providers (the process configures the SDK and its exporters), or, with a
    # Prometheus port, through Baton's own provider served at http://prometheus_host:prometheus_port/metrics
    telemetry: bool = False
    prometheus_port: int | None = None  # set: telemetry on, the Prometheus endpoint started on this port
    prometheus_host: str = "127.0.0.1"  # the address it listens on (0.0.0.0: every interface)
    # reclamation (docs/compaction.md, "Reclaiming answered tool output"): from a request of this many tokens on,
    # answered tool output is pruned to stubs (0: off) when a prune takes out at least reclaim_min_tokens and pays
    # for the prompt-cache prefix it breaks (cached_price_ratio: a cached prompt token's price against an uncached
    # one, the providers' published 0.1); the next waits until the request regrew by reclaim_runway_tokens. Hermes'
    # compression.proactive_prune_tokens / _min_reclaim_tokens apply where set. The three defaults are the cheapest
    # of benchmarks/compaction/reclaim_bench.py --sweep at 128K (600 turns; FINDINGS, "Reclamation's defaults"): cost at r=0.1
    # 7.45M against 7.87M-8.07M for the other values tried, 0.77x the prompt tokens of no reclamation
    reclaim_trigger_tokens: int = 16_000
    reclaim_min_tokens: int = 4096
    reclaim_runway_tokens: int = 2048
    cached_price_ratio: float = 0.1
    origins: tuple[tuple[str, str], ...] = ()
    # unknown ``baton:`` keys, each a message naming the key and the nearest known one: ignored so that a typo
    # never stops the plugin (Hermes would fall back to its compressor without a word on the terminal); the
    # plugin prints them at start-up and ``baton doctor`` fails on them
    ignored: tuple[str, ...] = ()


# ---- value parsers: (raw, label) -> value; label is the env var or config key to name in errors ----


def _text(raw: Any, label: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise SettingsError(f"{label} must be a non-empty string; unset it to use the default")
    return raw.strip()


def _backend_name(raw: Any, label: str) -> str:
    value = _text(raw, label).lower()
    if not value.replace("-", "").replace("_", "").isalnum():
        raise SettingsError(f"{label} must be a backend name like 'auto', 'tiktoken', 'hf', 'vllm' or 'rough'")
    return value


def _url(raw: Any, label: str) -> str:
    value = _text(raw, label)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{label} must be an http(s) URL such as http://127.0.0.1:8000 (or .../tokenize)")
    return value.rstrip("/")


def _int(minimum: int) -> Callable[[Any, str], int]:
    def parse(raw: Any, label: str) -> int:
        if isinstance(raw, bool):
            raise SettingsError(f"{label} must be an integer >= {minimum}, not a boolean")
        try:
            value = int(raw.strip()) if isinstance(raw, str) else int(raw) if isinstance(raw, int) else None
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise SettingsError(f"{label} must be an integer >= {minimum}")
        return value

    return parse


def _seconds(raw: Any, label: str) -> float:
    try:
        value = float(raw.strip()) if isinstance(raw, str) else float(raw) if isinstance(raw, (int, float)) else None
    except ValueError:
        value = None
    if isinstance(raw, bool) or value is None or not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{label} must be a number of seconds > 0")
    return value


def _bool(raw: Any, label: str) -> bool:
    if not isinstance(raw, bool):
        raise SettingsError(f"{label} must be true or false")
    return raw


def _flag(raw: Any, label: str) -> bool:
    """A boolean in config.yaml, or an environment variable's text: true/false, 1/0, yes/no, on/off."""
    if isinstance(raw, bool):
        return raw
    word = raw.strip().lower() if isinstance(raw, str) else None
    if word in ("true", "1", "yes", "on"):
        return True
    if word in ("false", "0", "no", "off"):
        return False
    raise SettingsError(f"{label} must be true or false (or 1/0, yes/no, on/off)")


def _ratio(raw: Any, label: str) -> float:
    try:
        value = float(raw.strip()) if isinstance(raw, str) else float(raw) if isinstance(raw, (int, float)) else None
    except ValueError:
        value = None
    if isinstance(raw, bool) or value is None or not 0 <= value <= 1:
        raise SettingsError(f"{label} must be a number from 0 to 1 (a cached token's price against an uncached one)")
    return value


def _port(raw: Any, label: str) -> int:
    value = _int(1)(raw, label)
    if value > 65535:
        raise SettingsError(f"{label} must be a TCP port, 1 to 65535")
    return value


def _tools(raw: Any, label: str) -> tuple[str, ...]:
    """A list of Baton's tool names (``recall`` or ``baton_recall``), in Baton's order; [] offers none."""
    short = [name.removeprefix("baton_") for name in BATON_TOOLS]
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise SettingsError(f"{label} must be a list of Baton's tools, e.g. [{', '.join(short)}]")
    wanted = {item.strip().lower().removeprefix("baton_") for item in raw}
    unknown = sorted(wanted - set(short))
    if unknown:
        raise SettingsError(f"{label}: {unknown[0]} is not one of Baton's tools ({', '.join(short)})")
    return tuple(name for name in BATON_TOOLS if name.removeprefix("baton_") in wanted)


_TOKENIZER_PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "backend": _backend_name,
    "url": _url,
    "model": _text,
    "path": _text,
    "timeout_seconds": _seconds,
    "user_agent": _text,
    "api_key": _text,
}
_BUDGET_PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "fallback_margin_tokens": _int(0),
    "min_output_tokens": _int(1),
    "compression_window_tokens": _int(1),
}
_TELEMETRY_PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "telemetry": _flag,
    "prometheus_port": _port,
    "prometheus_host": _text,
}
_CONFIG_ONLY_PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "auto_checkpoint_on_end": _bool,
    "fallback_token_threshold": _int(1),
    "degradation_keep_recent": _int(0),
    "route_states": _int(1),
    "degradation_max_tokens": _int(1),
    "brief_max_tokens": _int(MIN_MAX_TOKENS),  # below it no brief can be rendered
    "fresh_tail_tokens": _int(1),
    "share_handoffs": _bool,
    "embedder": lambda raw, label: _embedder(raw, label),
    "tools": _tools,
    "metrics_max_age_days": _int(1),
    "metrics_max_total_mb": _int(1),
    "metrics_live_hours": _int(1),
    "reclaim_trigger_tokens": _int(0),
    "reclaim_min_tokens": _int(1),
    "reclaim_runway_tokens": _int(1),
    "cached_price_ratio": _ratio,
}
# Hermes' own keys for its compressor's pruning (config.yaml ``compression:``), honoured below the ``baton:`` block
# where they are set to a positive number (0, Hermes 0.22's default, means its own pruning is off, not Baton's)
HERMES_PRUNE_KEYS = {"proactive_prune_tokens": "reclaim_trigger_tokens",
                     "proactive_prune_min_reclaim_tokens": "reclaim_min_tokens"}
EMBEDDER_KEYS = ("backend", "url", "model", "path", "api_key_env", "timeout_seconds", "query_prefix", "passage_prefix",
                 "weak_below")
_EMBEDDER_PREFIXES = ("query_prefix", "passage_prefix")  # kept as written: "query: " ends with its space


def _embedder(raw: Any, label: str) -> EmbedderConfig:
    """``baton.embedder``: ``{backend: openai, url, model[, api_key_env]}`` or ``{backend: st, path}``."""
    if not isinstance(raw, Mapping) or "backend" not in raw:
        raise SettingsError(f"{label} must be a mapping with a backend: {{backend: openai, url: ..., model: ...}} "
                            "or {backend: st, path: /a/model/directory}")
    unknown = [str(key) for key in raw if key not in EMBEDDER_KEYS]
    if unknown:
        raise SettingsError(f"{label}: {unknown[0]} is not an embedder key; known: {', '.join(EMBEDDER_KEYS)}")
    values = {key: _text(raw[key], f"{label}.{key}") for key in EMBEDDER_KEYS[:5] if raw.get(key) is not None}
    if raw.get("url") is not None:
        values["url"] = _url(raw["url"], f"{label}.url")  # the server's base URL (or .../v1/embeddings)
    for key in _EMBEDDER_PREFIXES:
        if raw.get(key) is not None:
            _text(raw[key], f"{label}.{key}")
            values[key] = raw[key]
    if raw.get("weak_below") is not None:
        floor = raw["weak_below"]
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not -1.0 <= float(floor) <= 1.0:
            raise SettingsError(f"{label}.weak_below must be a cosine from -1 to 1")
        values["weak_below"] = float(floor)
    if raw.get("timeout_seconds") is not None:
        return EmbedderConfig(**values, timeout_seconds=_seconds(raw["timeout_seconds"], f"{label}.timeout_seconds"))
    return EmbedderConfig(**values)


def _env_values(env: Mapping[str, str] | None) -> dict[str, tuple[str, str]]:
    """setting -> (raw value, variable name) for every variable that is set, the BATON_* name winning."""
    source = EnvSource(prefix="") if env is None else _MappingEnvSource(env)
    raw = _RawEnvironment(_sources=[source])
    found: dict[str, tuple[str, str]] = {}
    for setting, names in ENV_VARIABLES.items():
        for name in names:
            if name is None:
                continue
            value = getattr(raw, name.lower())
            if value != _UNSET:
                found[setting] = (value, name)
                break
    return found


def unknown_key(prefix: str, key: str, known: Sequence[str], nested: Sequence[str] = ()) -> str:
    """The message for the unknown key ``prefix + key`` in config.yaml, with the nearest config key (difflib).

    Why normalised: a key written as its variable (``BATON_FRESH_TAIL_TOKENS``), with dashes, or flattened
    (``tokenizer_backend``) still names the config key to write; ``nested`` are the dotted keys (``tokenizer.url``)."""
    candidates = {name.replace(".", "_"): name for name in (*known, *nested)}
    plain = key.strip().lower().replace("-", "_").replace(".", "_").removeprefix("baton_")
    near = difflib.get_close_matches(plain, list(candidates), n=1, cutoff=0.6)
    hint = f"did you mean {prefix}{candidates[near[0]]}? " if near else ""
    return f"{prefix}{key} in config.yaml is not a setting (ignored); {hint}known: {', '.join(known)}"


CONFIG_KEYS = (*_BUDGET_PARSERS, *_TELEMETRY_PARSERS, *_CONFIG_ONLY_PARSERS, "tokenizer", "tokenizer_routes")


def _config_values(hermes_block: Mapping[str, Any] | None) -> tuple[dict[str, tuple[Any, str]], list[str]]:
    """setting -> (value, config key) from the Hermes ``baton:`` block, and the unknown keys (typos) ignored."""
    if hermes_block is None:
        return {}, []
    if not isinstance(hermes_block, Mapping):
        raise SettingsError("baton: in config.yaml must be a mapping of settings")
    found: dict[str, tuple[Any, str]] = {}
    ignored: list[str] = []
    for key, value in hermes_block.items():
        if key == "tokenizer":
            if not isinstance(value, Mapping):
                raise SettingsError("baton.tokenizer in config.yaml must be a mapping")
            for sub_key, sub_value in value.items():
                if sub_key in TOKENIZER_KEYS:
                    found[sub_key] = (sub_value, f"baton.tokenizer.{sub_key} in config.yaml")
                else:
                    ignored.append(unknown_key("baton.tokenizer.", str(sub_key), TOKENIZER_KEYS))
        elif key == "tokenizer_routes":
            found[key] = (_tokenizer_routes(value), "baton.tokenizer_routes in config.yaml")
        elif key in CONFIG_KEYS:
            found[key] = (value, f"baton.{key} in config.yaml")
        else:
            ignored.append(unknown_key("baton.", str(key), CONFIG_KEYS,
                                       [f"tokenizer.{name}" for name in TOKENIZER_KEYS]))
    return found, ignored


def _tokenizer_routes(raw: Any) -> tuple[TokenizerRoute, ...]:
    """``baton.tokenizer_routes``: a list of ``{match: {model|provider|base_url}, backend, url, path, ...}``."""
    if not isinstance(raw, list):
        raise SettingsError("baton.tokenizer_routes in config.yaml must be a list of "
                            "{match: {model: 'gpt-*'}, backend: tiktoken, ...} entries")
    routes = []
    for index, entry in enumerate(raw):
        label = f"baton.tokenizer_routes[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("match"), Mapping) or not entry["match"]:
            raise SettingsError(f"{label} in config.yaml must be a mapping with a non-empty 'match' "
                                f"(keys: {', '.join(ROUTE_MATCH_KEYS)}) and tokenizer keys")
        match = {}
        for key, value in entry["match"].items():
            if key not in ROUTE_MATCH_KEYS:
                raise SettingsError(f"{label}.match.{key} in config.yaml is not a match key; known: "
                                    f"{', '.join(ROUTE_MATCH_KEYS)}")
            match[key] = _url(value, f"{label}.match.{key}") if key == "base_url" else _text(value, f"{label}.match.{key}")
        tokenizer, window = {}, None
        for key, value in entry.items():
            if key == "match":
                continue
            if key == "context_length":
                window = _int(1024)(value, f"{label}.context_length in config.yaml")
                continue
            if key not in TOKENIZER_KEYS:  # an error, not ignored: half an entry could route to the wrong tokenizer
                near = difflib.get_close_matches(str(key), TOKENIZER_KEYS, n=1)
                hint = f"did you mean {label}.{near[0]}? " if near else ""
                raise SettingsError(f"{label}.{key} in config.yaml is not a setting; {hint}known: match, "
                                    f"context_length, {', '.join(TOKENIZER_KEYS)}")
            tokenizer[key] = _TOKENIZER_PARSERS[key](value, f"{label}.{key} in config.yaml")
        if "backend" not in tokenizer:
            raise SettingsError(f"{label}.backend in config.yaml is required (e.g. tiktoken, hf, vllm, rough)")
        routes.append(TokenizerRoute(TokenizerConfig(**tokenizer), **match, context_length=window))
    return tuple(routes)


# setting -> its key in the project's ``.baton/config.json`` (the layer below config.yaml)
PROJECT_KEYS: dict[str, tuple[str, str]] = {
    "backend": ("tokenizer", "backend"),
    "path": ("tokenizer", "path"),
    "url": ("tokenizer", "url"),
    "model": ("tokenizer", "model"),
    "brief_max_tokens": ("brief", "max_tokens"),
}


def _project_values(project: BatonConfig | None) -> dict[str, tuple[Any, str]]:
    """setting -> (value, key) from ``.baton/config.json`` (already type-checked by its model); null = unset."""
    found: dict[str, tuple[Any, str]] = {}
    for setting, (section, key) in PROJECT_KEYS.items():
        value = getattr(getattr(project, section), key) if project is not None else None
        if value is not None:
            found[setting] = (value, f"{section}.{key} in .baton/config.json")
    return found


def _compression_values(compression: Mapping[str, Any] | None) -> dict[str, tuple[Any, str]]:
    """setting -> (value, key) from Hermes' ``compression:`` pruning keys set to a positive integer."""
    found: dict[str, tuple[Any, str]] = {}
    for key, setting in HERMES_PRUNE_KEYS.items():
        value = compression.get(key) if isinstance(compression, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            found[setting] = (value, f"compression.{key} in config.yaml")
    return found


def load_settings(
    env: Mapping[str, str] | None = None,
    hermes_block: Mapping[str, Any] | None = None,
    project: BatonConfig | None = None,
    compression: Mapping[str, Any] | None = None,
) -> BatonSettings:
    """Read the settings afresh: ``env`` defaults to ``os.environ``; ``hermes_block`` is config.yaml's ``baton:``;
    ``project`` is the project's ``.baton/config.json``; ``compression`` config.yaml's ``compression:`` (its pruning
    keys, below the ``baton:`` block)."""
    from_env = _env_values(env)
    block, ignored = _config_values(hermes_block)
    hermes = {key: chosen for key, chosen in block.items() if chosen[0] is not None}
    # an explicit null in config.yaml falls through
    from_config = {**_project_values(project), **_compression_values(compression), **hermes}
    parsers = {**_TOKENIZER_PARSERS, **_BUDGET_PARSERS, **_TELEMETRY_PARSERS, **_CONFIG_ONLY_PARSERS,
               "tokenizer_routes": lambda routes, _label: routes}
    values: dict[str, Any] = {}
    origins: list[tuple[str, str]] = []
    for setting, parse in parsers.items():
        chosen = from_env.get(setting) or from_config.get(setting)
        if chosen is None:
            continue
        raw, label = chosen
        if setting not in from_env and raw is None:
            continue  # an explicit null in config.yaml means "use the default"
        values[setting] = parse(raw, label)
        origins.append((setting, label))
    tokenizer = TokenizerConfig(**{k: values.pop(k) for k in TOKENIZER_KEYS if k in values})
    window = values.get("compression_window_tokens")
    reserve = values.get("min_output_tokens", 4096) + values.get("fallback_margin_tokens", 1024)
    if window is not None and reserve >= window:
        raise SettingsError(
            f"compression window ({window}) must exceed min output + fallback margin ({reserve}); "
            "raise compression_window_tokens or lower min_output_tokens / fallback_margin_tokens (the baton: keys "
            "in config.yaml, or their BATON_* variables)"
        )
    return BatonSettings(tokenizer=tokenizer, origins=tuple(origins), ignored=tuple(ignored), **values)


DEFAULT_ORIGIN = "default"


def describe(settings: BatonSettings) -> list[dict[str, str]]:
    """Every effective setting with where it came from (``origins``, else the default); secrets never shown."""
    origins = dict(settings.origins)
    values = {**{key: getattr(settings.tokenizer, key) for key in TOKENIZER_KEYS},
              **{key: getattr(settings, key)
                 for key in (*_BUDGET_PARSERS, *_TELEMETRY_PARSERS, *_CONFIG_ONLY_PARSERS)}}
    rows = []
    for name, value in values.items():
        shown = ("(set)" if name == "api_key" and value is not None else "unset" if value is None
                 else ", ".join(value) if isinstance(value, tuple) else str(value))
        rows.append({"setting": name, "value": shown, "origin": origins.get(name, DEFAULT_ORIGIN)})
    routes = "; ".join(f"{route.describe()} -> {route.tokenizer.backend}" for route in settings.tokenizer_routes)
    rows.append({"setting": "tokenizer_routes", "value": routes or "none",
                 "origin": origins.get("tokenizer_routes", DEFAULT_ORIGIN)})
    return rows


def describe_line(settings: BatonSettings) -> str:
    """``describe`` as one line for ``baton doctor``: ``backend=auto (default); url=... (BATON_TOKENIZER_URL)``."""
    return "; ".join(f"{row['setting']}={row['value']} ({row['origin']})" for row in describe(settings))
