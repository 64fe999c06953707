"""The process-wide Baton runtime of a host's agents: settings, the token counters (one per tokenizer a route uses)
and the live engines.

Why module state and not engine attributes: Hermes deep-copies the registered engine for every agent,
and a live tokenizer client or lock must not be copied (a copy failure silently falls back to the
built-in compressor). A counter (backend behind a circuit breaker and a content-keyed cache) is
shared by the routes that use its tokenizer (``RouteCounting``); everything per request — frame, route,
window, anchor, the last count — is per agent, on the agent's engine (``agent/ledger.py``). The settings are those of the working directory's project (where
the engine looks for ``.baton/``), in ``settings.load_settings``' one precedence. ``engines`` finds an
agent's engine by session id when the calling frame does not name it.

No host in it: the host passes in what it knows (its view of the main route and window, ``HostView``; how to read
a project's settings, ``ProjectSettings``) and tells ``set_default_factory`` how to build the runtime its engines
get when none was installed (Hermes: ``hermes/host.host_runtime``, registered when ``baton_engine.hermes`` is
imported).

Time comes from ONE injectable clock (``clock``, default real UTC time): a compaction reads it once,
so a test or benchmark that pins it gets the same record ids and timestamps for the same input.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from baton_engine.budget import compression_window
from baton_engine.embedding import EmbedderBreaker, EmbedderError, load_embedder
from baton_engine.errors import BatonError
from baton_engine.handoff.filememo import FileMemo
from baton_engine.handoff.store import find_project_root
from baton_engine.metrics import telemetry
from baton_engine.policy import reserved_tokens
from baton_engine.recall import MemoryIndex, dense
from baton_engine.settings import BatonSettings
from baton_engine.tokenizer_check import configured_by, start_failure
from baton_engine.tokens.anchor import UsageAnchor
from baton_engine.tokens.breaker import count_deadline
from baton_engine.tokens.contract import BackendConfigError, TokenCount, TokenizerConfig
from baton_engine.tokens.counter import FALLBACK_SOURCE, UNKNOWN_SOURCE, TokenCounter
from baton_engine.tokens.plugins import build_backend, detect_server_backend
from baton_engine.tokens.rough import ROUGH_SOURCE, estimate_chat_request, estimate_tokens_rough, request_margin

LOGGER = logging.getLogger("baton_engine.agent")
VECTORS_DIR = "vectors"  # under the project's .baton/cache/ (gitignored): recall's derived vector index
DEFAULT_CONTEXT_LENGTH = 131072
PROJECT_SETTINGS_ENTRIES = 16  # projects a gateway's sessions work in, each with its own settings layer


def _utc_clock() -> datetime:
    return datetime.now(UTC)


class HostView(Protocol):
    """The host's view of its configured main route and window (Hermes: ``hermes/config.HermesView``)."""

    @property
    def model(self) -> str | None: ...

    @property
    def provider(self) -> str | None: ...

    @property
    def base_url(self) -> str | None: ...

    @property
    def context_length(self) -> int | None: ...


@dataclass(frozen=True)
class NoView:
    """The view of a host that names no main route nor window (a runtime built by hand): every route is the main
    one (``BatonRuntime._is_main``), the window ``DEFAULT_CONTEXT_LENGTH``."""

    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    context_length: int | None = None


ProjectSettings = Callable[[Path], BatonSettings]  # a project root -> the settings layered over its config


class EngineRegistry:
    """Live engines by session id (weak: an ended agent's engine is never kept alive by Baton)."""

    def __init__(self) -> None:
        self._engines: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def remember(self, session_id: Any, engine: Any) -> None:
        if session_id:
            with self._lock:
                self._engines[str(session_id)] = engine

    def lookup(self, session_id: Any) -> Any | None:
        if not session_id:
            return None
        with self._lock:
            return self._engines.get(str(session_id))


def _server_root(url: str) -> str:
    """A server's URL without its trailing slash, ``/v1`` or ``/tokenize`` (how a base URL and a tokenizer URL of
    one server are compared)."""
    root = url.strip().rstrip("/")
    for suffix in ("/tokenize", "/v1"):
        root = root.removesuffix(suffix)
    return root


def _remote(counter: TokenCounter | None) -> bool:
    """Whether ``counter``'s backend is a server (``TokenizerBackend.remote``, a contract fact)."""
    return counter is not None and counter.backend.remote


# How long the agent that first needs a tokenizer waits for it to start before counting with estimates (the start
# goes on): building the Qwen3 hf backend took 14.7 s on a loaded 2-core machine (docs/hermes-versions.md), so twice
# that; a factory that hangs costs that one agent this once. Every other agent never waits for a start.
START_WAIT_SECONDS = 30.0
STARTING = "tokenizer starting: counts are estimates (anchored, or rough + margin) until it is ready"
CounterState = Literal["starting", "ready", "unavailable"]


class CounterStart:
    """One tokenizer's start, done once on a thread of its own, so no lock is held while a backend loads."""

    def __init__(self, build: Callable[[], tuple[TokenCounter | None, str | None]]) -> None:
        self._build = build
        self._done = threading.Event()
        self.counter: TokenCounter | None = None
        self.error: str | None = None
        self.asked = False  # a request asked for it (the first one waits for the start, no later one does)
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="baton-tokenizer-start", daemon=True)

    @classmethod
    def built(cls, counter: TokenCounter) -> CounterStart:
        """A start already done with ``counter`` (a counter built elsewhere: a test's own backend)."""
        start = cls(lambda: (counter, None))
        start._run()
        return start

    def begin(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            counter, error = self._build()
            with self._lock:
                self.counter, self.error = counter, error
                closed = self._closed
            if closed and counter is not None:  # the runtime was closed while this tokenizer started
                counter.close()
        finally:
            self._done.set()

    def close(self) -> None:
        """Release the counter, now or (still starting) when its start ends."""
        with self._lock:
            self._closed = True
            counter = self.counter
        if counter is not None:
            counter.close()

    def wait(self, timeout: float | None) -> bool:
        return self._done.wait(timeout)

    @property
    def state(self) -> CounterState:
        if not self._done.is_set():
            return "starting"
        return "ready" if self.counter is not None else "unavailable"


class RouteCounting:
    """Counting for one route (model + server): its tokenizer's counter, or the fallbacks when it has none.

    Why per route: the tokenizer follows the model. A ``/model`` switch, a fallback provider or an auxiliary
    model counts with the backend that fits it, and a tokenizer server's ``max_model_len`` is the window of the
    routes that count with that server only. Counters are shared by every agent on the same tokenizer."""

    def __init__(self, runtime: BatonRuntime, config: TokenizerConfig, why: str,
                 context_length: int | None = None) -> None:
        self.runtime = runtime
        self.config = config
        self.why = why  # which rule chose this tokenizer for the route (status)
        self.context_length = context_length  # the route's window from its tokenizer_routes entry, if set

    def counter(self, *, patient: bool = False) -> TokenCounter | None:
        """The route's counter; None while it starts (``counter_state``) or when it cannot (``counter_error``)."""
        return self.runtime.counter_of(self.config, self.why, patient=patient)

    def ready_counter(self) -> TokenCounter | None:
        """The route's counter if it runs already: never starts it, never waits (background work must not take
        the first request's wait for the tokenizer, ``BatonRuntime.counter_of``)."""
        return self.runtime.built_counter(self.config)

    @property
    def counter_error(self) -> str | None:
        return self.runtime.counter_error_of(self.config)

    @property
    def counter_state(self) -> CounterState | None:
        return self.runtime.counter_state_of(self.config)

    def _no_counter_reason(self) -> str | None:
        """Why a count is an estimate when the route has no counter: it cannot start, or it is starting."""
        return self.counter_error or (STARTING if self.counter_state == "starting" else None)

    def count_chat(self, request: Mapping[str, Any], *, anchor: UsageAnchor | None = None,
                   key: str | None = None) -> TokenCount:
        """Exact provider-visible tokens, anchored on real usage, or rough + margin; never raises."""
        counter = self.counter()
        if counter is not None:
            return counter.count_chat(request, anchor=anchor, key=key)
        error = self._no_counter_reason()
        estimate = anchor.estimate(request) if anchor is not None else None
        if estimate is not None:
            return replace(estimate, fallback_reason=error)
        try:
            estimated = estimate_chat_request(request)
        except TypeError:  # not a chat request (the rough estimator's one refusal): "unknown", left alone
            return TokenCount(None, False, UNKNOWN_SOURCE, fallback_reason=error)
        margin = request_margin(request, estimated, self.runtime.settings.fallback_margin_tokens)
        return TokenCount(estimated + margin, False, FALLBACK_SOURCE if margin else ROUGH_SOURCE,
                          fallback_reason=error, margin_tokens=margin)

    def count_text(self, text: str) -> TokenCount:
        counter = self.counter()
        if counter is None:
            return TokenCount(estimate_tokens_rough(text), False, ROUGH_SOURCE,
                              fallback_reason=self._no_counter_reason())
        return counter.count_text(text)

    def exact_messages(self, batch: Sequence[Any]) -> int:
        """A message list's exact tokens (compaction budgets); raises when no exact count is available."""
        return self.exact_request({"messages": list(batch)})

    def exact_request(self, request: dict[str, Any]) -> int:
        """A chat request's exact tokens; raises when no exact count is available."""
        counted = self.count_chat(request)
        if counted.tokens is None or not counted.exact:
            raise ValueError("no exact count")
        return counted.tokens

    def exact_text(self, text: str) -> int:
        counted = self.count_text(text)
        if counted.tokens is None or not counted.exact:
            raise ValueError("no exact count")
        return counted.tokens

    def counts_on(self, base_url: Any) -> bool:
        """Whether this counting asks the server at ``base_url`` itself (its tokenizer URL is that server's): its
        counts are that provider's own."""
        url = self.config.url
        if not url or not isinstance(base_url, str) or not base_url:
            return False
        return _server_root(url) == _server_root(base_url)

    def remote_tokenizer(self) -> bool:
        """True when every count is a network round trip (a tokenizer server), a fact of the backend."""
        return _remote(self.counter())

    def source(self) -> str:
        counter = self.counter()
        if counter is not None:
            return counter.source
        return "rough (tokenizer starting)" if self.counter_state == "starting" else "rough (backend unavailable)"

    def server_window(self) -> int | None:
        """The serving model's own window as this route's tokenizer server last reported it (vLLM's
        ``max_model_len``); None for local tokenizers, whose ``model_max_length`` is metadata, not a limit a
        server enforces. No I/O: known after one count."""
        counter = self.runtime.built_counter(self.config)
        server = counter.stats().last_max_model_len if counter is not None and _remote(counter) else None
        return server if isinstance(server, int) and not isinstance(server, bool) and server > 0 else None

    def known_window(self) -> int | None:
        """The window of a route that is not the agent's own: its tokenizer server's, else its entry's."""
        return self.server_window() or self.context_length


class BatonRuntime:
    """Settings + host view + lazily built, thread-safe counters, one per tokenizer configuration (never built
    at import or copy time). The configured tokenizer serves the main route; ``for_route`` picks the others'."""

    def __init__(self, settings: BatonSettings, view: HostView | None = None,
                 clock: Callable[[], datetime] | None = None, *, project_root: Path | None = None,
                 project_settings: ProjectSettings | None = None) -> None:
        self.settings = settings
        # the host's (hermes/host.host_runtime): the project whose .baton/config.json layer ``settings`` has, and how
        # to read another project's settings the same way; None (a runtime built by hand) means ``settings`` holds
        # for every project
        self.project_root = project_root
        self._load_project_settings = project_settings
        self._project_settings = FileMemo(PROJECT_SETTINGS_ENTRIES)
        self.clock: Callable[[], datetime] = clock or _utc_clock
        self.view: HostView = view or NoView()
        self.context_length = self.view.context_length or DEFAULT_CONTEXT_LENGTH
        self.engines = EngineRegistry()
        self.recall_index = MemoryIndex()  # what Baton compacted, per lineage, for hosts that bind no session store
        self._embedder: EmbedderBreaker | None = None
        self.embedder_error: str | None = None  # why the configured embedder could not be built (status says it)
        self._starts: dict[TokenizerConfig, CounterStart] = {}  # one per tokenizer configuration, never rebuilt
        self._servers: dict[tuple[str, str | None], str | None] = {}  # (base URL, model) -> backend that asks it
        self._lock = threading.Lock()
        self.main = RouteCounting(self, settings.tokenizer, configured_by(settings))

    def embedder(self) -> EmbedderBreaker | None:
        """The configured embedder (built once, behind its breaker), or None: recall then ranks lexically."""
        config = self.settings.embedder
        if config is None or self.embedder_error is not None:
            return None
        with self._lock:
            if self._embedder is None:
                try:
                    self._embedder = load_embedder(config)
                    paths = find_project_root(self.project_root) if self.project_root is not None else None
                    if paths is not None:  # passage vectors kept beside the records: a restart does not re-embed
                        dense.keep_vectors_in(paths.data_dir / "cache" / VECTORS_DIR)
                except EmbedderError as exc:
                    self.embedder_error = str(exc)
                    LOGGER.warning("recall: embedder not started (%s); lexical ranking", exc)
            return self._embedder

    def now(self) -> datetime:
        """The clock's time as aware UTC; a naive clock is refused (it would silently mean local time)."""
        moment = self.clock()
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise TypeError("BatonRuntime.clock must return an aware datetime (UTC)")
        return moment.astimezone(UTC)

    def settings_for(self, project_dir: Path) -> BatonSettings:
        """The settings of a session's project: ``settings`` when it is the runtime's own project (or the
        runtime was built by hand), else the same layers over that project's ``.baton/config.json`` (the host's
        ``project_settings``), read again only when the file changed. A broken project config keeps ``settings``
        (doctor reports it). The token counter stays the process's."""
        load = self._load_project_settings
        if self.project_root is None or load is None:
            return self.settings
        paths = find_project_root(Path(project_dir))
        if paths is None or paths.root == self.project_root:
            return self.settings
        try:
            return self._project_settings.get(paths.config_path, lambda: load(paths.root))
        except (BatonError, OSError) as exc:  # a bad or unreadable project config: doctor names it
            LOGGER.warning("baton project settings unreadable type=%s", type(exc).__name__)
            return self.settings

    # ---- counting --------------------------------------------------------------------------------

    def for_route(self, model: str | None, base_url: str | None = None, provider: str | None = None,
                  settings: BatonSettings | None = None) -> RouteCounting:
        """The counting of a route under ``settings`` (a session's project settings, ``settings_for``; default
        the runtime's): the first ``tokenizer_routes`` entry that matches it; the configured tokenizer for the
        main route (Hermes' configured model and server, or any route when they are unknown); else the route's
        own server when it counts for itself (``server_backend``: a vLLM server's /tokenize); else ``auto`` for
        the route's own model (tiktoken for OpenAI-family names, else rough + its measured margin, which the
        provider's usage then anchors). Counters are shared per tokenizer configuration, whichever project
        configured it."""
        settings = settings if settings is not None else self.settings
        for entry in settings.tokenizer_routes:
            if entry.matches(model, base_url, provider):
                return RouteCounting(self, entry.tokenizer, f"tokenizer_routes entry {entry.describe()}",
                                     entry.context_length)
        if self._is_main(model, base_url, settings.tokenizer.model):
            if settings.tokenizer == self.settings.tokenizer:
                return self.main
            return RouteCounting(self, settings.tokenizer, configured_by(settings))
        timeout = settings.tokenizer.timeout_seconds
        server = self.server_backend(base_url, model, timeout) if base_url else None
        if server is not None:
            config = TokenizerConfig(backend=server, url=base_url, model=model, timeout_seconds=timeout)
            return RouteCounting(self, config, f"auto for model {model!r}: its server counts for itself ({server})")
        config = TokenizerConfig(backend="auto", model=model, timeout_seconds=timeout)
        return RouteCounting(self, config, f"auto for model {model!r} (not the configured model)")

    def server_backend(self, base_url: str, model: str | None, timeout_seconds: float) -> str | None:
        """The backend through which the server at ``base_url`` counts ``model``'s prompts for itself (a vLLM
        server's /tokenize: ``plugins.detect_server_backend``), asked once per server and model for the process (a
        "no" is kept too); None when it cannot. Not under the lock: one slow server must not hold
        another agent's counting."""
        key = (base_url.rstrip("/"), model)
        with self._lock:
            if key in self._servers:
                return self._servers[key]
        found = detect_server_backend(base_url, model, timeout_seconds)
        with self._lock:
            found = self._servers.setdefault(key, found)
        LOGGER.info("baton asked a new route's server whether it counts for itself: %s",
                    f"yes ({found})" if found else "no")
        return found

    def _is_main(self, model: str | None, base_url: str | None, served: str | None) -> bool:
        main_model, main_url = self.view.model, self.view.base_url
        if not model or not main_model:
            return True
        if model != main_model and model != served:
            return False
        return not (base_url and main_url and base_url.rstrip("/") != main_url.rstrip("/"))

    def counter_of(self, config: TokenizerConfig, chosen_by: str = "", *, patient: bool = False) -> TokenCounter | None:
        """The counter of ``config``; None while it starts or when its backend cannot start (the reason,
        ``counter_error_of``, for status and the start-up line).

        Started once per configuration, on its own thread, outside the process lock. The first request that
        needs it (the agent that switched to the route) waits for it at most ``START_WAIT_SECONDS``; every other
        caller (another agent on the route, or on any other route) never waits and counts with estimates
        meanwhile. ``patient``: the plugin's start-up line, on a thread of its own, which starts the configured
        tokenizer and waits for it however long it takes (it is not a request: the first request still waits)."""
        with self._lock:
            start = self._starts.get(config)
            new = start is None
            if start is None:
                start = self._starts[config] = CounterStart(lambda: self._build(config, chosen_by))
            first_request = not patient and not start.asked
            start.asked = start.asked or not patient
        if new:
            LOGGER.info("baton tokenizer starting (counter: starting; counts are estimates until it is ready)")
            start.begin()
        if (first_request or patient) and not start.wait(None if patient else START_WAIT_SECONDS):
            LOGGER.warning("baton tokenizer still starting after %g s; counting with estimates until it is ready",
                           START_WAIT_SECONDS)
        return start.counter

    def _build(self, config: TokenizerConfig, chosen_by: str) -> tuple[TokenCounter | None, str | None]:
        """Build ``config``'s backend behind its breaker (on the start's own thread): the counter, or why not."""
        built = replace(config, context_length=self.context_length)
        try:
            backend, selection = build_backend(built)
            deadline = count_deadline(bool(backend.remote), config.timeout_seconds)
            counter = TokenCounter(backend, fallback_margin_tokens=self.settings.fallback_margin_tokens,
                                   deadline_seconds=deadline)
        # ``build_backend`` turns any failure of the backend's own code into this error: reported in status,
        # counting falls back to estimates
        except BackendConfigError as exc:
            error = start_failure(exc, chosen_by or configured_by(self.settings))
            LOGGER.warning("baton %s", error)  # names settings and paths, no prompt text
            return None, error
        LOGGER.info("baton tokenizer selected name=%s source=%s deadline=%gs (counter: ready)", selection.name,
                    counter.source, deadline)
        return counter, None

    def built_counter(self, config: TokenizerConfig) -> TokenCounter | None:
        """The counter of ``config`` if it was built already (never builds: status and windows read it)."""
        with self._lock:
            start = self._starts.get(config)
        return start.counter if start is not None else None

    def counter_error_of(self, config: TokenizerConfig) -> str | None:
        """Why ``config``'s backend cannot start; None while it starts, once it runs, or before it was asked."""
        with self._lock:
            start = self._starts.get(config)
        return start.error if start is not None else None

    def counter_state_of(self, config: TokenizerConfig) -> CounterState | None:
        """Where ``config``'s counter is (status ``counter``); None before a count asked for it."""
        with self._lock:
            start = self._starts.get(config)
        return start.state if start is not None else None

    # The main route's counting, for callers outside an agent (tools, doctor, tests).
    def counter(self) -> TokenCounter | None:
        return self.main.counter()

    def count_chat(self, request: Mapping[str, Any], *, anchor: UsageAnchor | None = None,
                   key: str | None = None) -> TokenCount:
        return self.main.count_chat(request, anchor=anchor, key=key)

    # ---- budgets ---------------------------------------------------------------------------------

    def threshold_for(self, context_length: int, threshold_percent: float) -> int:
        """Hermes' threshold for ``context_length``, lowered so the minimum reply and the margin (clamped to the
        window's size, ``policy.reserved_tokens``) stay free above it; the output clamp guarantees the rest."""
        return compression_window(
            context_length,
            threshold_percent,
            reserved_output_tokens=reserved_tokens(context_length, self.settings.min_output_tokens,
                                                   self.settings.fallback_margin_tokens),
            override=self.settings.compression_window_tokens,
        )

    def close(self) -> None:
        """Close the counters built; one still starting closes itself when its start ends."""
        with self._lock:
            starts, self._starts = list(self._starts.values()), {}
        for start in starts:
            start.close()


_ACTIVE: BatonRuntime | None = None
_ACTIVE_LOCK = threading.Lock()


def set_runtime(runtime: BatonRuntime | None) -> BatonRuntime | None:
    """Install ``runtime`` as the process runtime; returns the previous one (closed by the caller)."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        previous, _ACTIVE = _ACTIVE, runtime
    return previous


def clock_now() -> datetime:
    """The installed runtime's clock, else real UTC time (never builds a runtime or reads settings)."""
    with _ACTIVE_LOCK:
        active = _ACTIVE
    return active.now() if active is not None else _utc_clock()


_DEFAULT_FACTORY: Callable[[], BatonRuntime] | None = None


def set_default_factory(factory: Callable[[], BatonRuntime] | None) -> None:
    """How ``get_runtime`` builds the runtime when none is installed: the host's (Hermes: ``hermes/host.host_runtime``,
    set when ``baton_engine.hermes`` is imported, so an engine used outside the plugin gets the plugin's settings)."""
    global _DEFAULT_FACTORY
    with _ACTIVE_LOCK:
        _DEFAULT_FACTORY = factory


def get_runtime() -> BatonRuntime:
    """The installed runtime, or one built by the host's default factory, as its plugin builds it (an engine used
    outside the plugin); without either, a RuntimeError (no host to read settings from)."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        if _ACTIVE is None:
            if _DEFAULT_FACTORY is None:
                raise RuntimeError("no Baton runtime installed (set_runtime) and no host default (set_default_factory)")
            _ACTIVE = _DEFAULT_FACTORY()
            start_telemetry(_ACTIVE.settings)
        return _ACTIVE


def start_telemetry(settings: BatonSettings) -> telemetry.State:
    """OpenTelemetry as the process's settings ask (``baton.telemetry``, ``baton.prometheus_port``): started
    once per process, kept while the same settings come again."""
    return telemetry.configure(telemetry.Wanted(settings.telemetry, settings.prometheus_port,
                                                settings.prometheus_host))
