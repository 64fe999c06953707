"""The tokenizer-backend contract: one small ABC, many interchangeable implementations.

A backend answers one question: how many tokens will the provider see for this request?
It raises ``CannotCount`` (or any exception) when it cannot answer; the counter turns that
into a rough estimate plus a safety margin, so a backend never needs its own fallback.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


def copy_json(value: Any) -> Any:
    """A copy of JSON-like data that never aliases the input: mappings become dicts, lists and tuples lists
    (scalars are shared). The ONE such copy: compaction, the request normalisation and the backends use it."""
    if isinstance(value, Mapping):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_json(item) for item in value]
    return value


class NotPlain(Exception):
    """A value holds something other than JSON data of exact types (``plain_copy``)."""


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def plain_copy(value: Any) -> Any:
    """A deep copy of JSON data of exact types (dicts with str keys, lists, tuples, str, int, float, bool, None),
    strings shared; anything else raises ``NotPlain``. The ONE such snapshot: what memos compare a later request
    with (``==``) to know it did not change (the prefix memos, the hf backend's rendered prefix)."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if kind is dict:
        if not all(type(key) is str for key in value):
            raise NotPlain("non-string key")
        return {key: plain_copy(item) for key, item in value.items()}
    if kind is list:
        return [plain_copy(item) for item in value]
    if kind is tuple:
        return tuple(plain_copy(item) for item in value)
    raise NotPlain(kind.__name__)


class CannotCount(Exception):
    """The backend cannot count this request (server down, unsupported shape, ...).

    The message must never contain prompt text, URLs with credentials or secrets:
    it may be shown in status output.
    """


class RequestNotCountable(CannotCount):
    """This request cannot be counted; the backend is healthy (e.g. a server that cannot render one shape).

    Distinct from other failures so the circuit breaker does not stop counting every other request.
    """


class MalformedCount(Exception):
    """The backend answered with something that is not a usable TokenCount: a backend failure like any other
    (the circuit breaker counts it), never a count."""


class BackendConfigError(ValueError):
    """The backend's settings are unusable; raised at start-up, names the setting to fix."""


@dataclass(frozen=True)
class TokenCount:
    """A count and where it came from.

    ``tokens`` is None only for the explicit "unknown" result (every source failed);
    callers then leave requests unchanged. ``margin_tokens`` is the safety margin already included in
    ``tokens`` (estimates carry their own margin, so budgets must not add another). ``media_tokens`` is the
    images' and documents' share of ``tokens``: their estimated cost (``tokens.media``), a term of its own that
    the provider's usage scales apart from the text (``tokens.verify``).
    """

    tokens: int | None
    exact: bool
    source: str
    max_model_len: int | None = None
    fallback_reason: str | None = None
    margin_tokens: int = 0
    media_tokens: int = 0

    @property
    def known(self) -> bool:
        return self.tokens is not None


def checked_count(result: object) -> TokenCount:
    """``result`` when it is a usable TokenCount (non-negative int tokens, bool exact, int or None
    max_model_len); raises ``MalformedCount`` otherwise."""
    if (
        not isinstance(result, TokenCount)
        or isinstance(result.tokens, bool)
        or not isinstance(result.tokens, int)
        or result.tokens < 0
        or not isinstance(result.exact, bool)
        or not (result.max_model_len is None or type(result.max_model_len) is int)
    ):
        raise MalformedCount
    return result


UNKNOWN_SOURCE = "unknown"  # no count at all (requests are left unchanged)


@dataclass(frozen=True)
class TokenizerConfig:
    """Settings a backend factory receives (built by ``baton_engine.settings``)."""

    backend: str = "auto"
    url: str | None = None
    model: str | None = None
    path: str | None = None
    timeout_seconds: float = 10.0
    user_agent: str | None = None
    api_key: str | None = field(default=None, repr=False)
    context_length: int | None = None


# A chat request is the OpenAI-style dict the provider receives:
# {"messages": [...], "tools": [...]?, "chat_template_kwargs": {...}?,
#  "add_generation_prompt": bool (default True), "model": str?, ...}. Backends must not mutate it.
ChatRequest = Mapping[str, Any]


class TokenizerBackend(ABC):
    """Counts provider-visible prompts. Implementations must be thread-safe.

    ``remote`` is a fact callers budget with: True when every count is a network round trip (a
    tokenizer server), so a compaction counts only what must be exact.
    """

    remote: bool = False

    @property
    @abstractmethod
    def source(self) -> str:
        """Stable, non-sensitive diagnostic name, e.g. ``hf:Qwen/Qwen3-8B`` (never a URL with credentials)."""

    @abstractmethod
    def count_chat(self, request: ChatRequest) -> TokenCount:
        """Count messages + tools + chat-template kwargs + generation prompt as the provider renders them."""

    @abstractmethod
    def count_text(self, text: str) -> TokenCount:
        """Count plain text with no special tokens added (brief budgets)."""

    @property
    def max_model_len(self) -> int | None:
        """The model's context length when the backend knows it."""
        return None

    def clear_cache(self) -> None:
        """Forget backend-local cached counts."""

    def close(self) -> None:
        """Release connections or other resources; the backend may be rebuilt afterwards."""


# detect(url, model, timeout_seconds): whether the server at ``url`` (a route's base URL) counts prompts for
# itself through this backend. One cheap request that carries no prompt and no credential; False when unsure.
ServerDetector = Callable[[str, "str | None", float], bool]

# window(url, model, timeout_seconds): the window (prompt + reply, in tokens) the server at ``url`` serves ``model``
# with, as the server itself states it (vLLM's max_model_len); None when it is not this backend's server or does not
# say. One cheap request that carries no prompt and no credential. ``baton doctor`` compares it with config.yaml.
ServerWindow = Callable[[str, "str | None", float], "int | None"]


@dataclass(frozen=True)
class BackendSpec:
    """What a plugin offers: a name, a factory and, for a backend that asks a server, how to recognise one. Only
    the selected factory is ever called; ``detect`` only for a route whose tokenizer nobody configured; ``window``
    only by ``baton doctor``."""

    name: str
    factory: Callable[[TokenizerConfig], TokenizerBackend]
    description: str = ""
    detect: ServerDetector | None = None
    window: ServerWindow | None = None
