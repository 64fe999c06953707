"""Whether the configured tokenizer works: build it and count one request, with a verdict a user can act on.

Why one module: the plugin's start-up line, ``get_status()``, ``baton doctor`` and ``baton tokens`` must tell
the same story about the same settings. The rule they share: a tokenizer that cannot start never stops
Baton. The session runs on estimates (rough + margin, anchored on the provider's reported usage once it has
seen one) and every place the user looks says so, naming the setting that chose the tokenizer and the reason.
Messages carry setting names, backend names and paths, never prompt text or secrets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from baton_engine.settings import TOKENIZER_KEYS, BatonSettings
from baton_engine.tokens.contract import BackendConfigError, TokenizerConfig
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.plugins import build_backend
from baton_engine.tokens.rough import ROUGH_SOURCE

Verdict = Literal["exact", "estimate", "failing"]
# What the check counts: small, fixed, a system prompt and a user turn like every real request.
PROBE_REQUEST: dict[str, Any] = {"messages": [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Check that Baton can count this request."},
]}
ESTIMATES = "Baton counts with estimates (rough + margin, anchored on the provider's reported usage) until it is fixed"


def configured_by(settings: BatonSettings) -> str:
    """The settings that chose the tokenizer (``baton.tokenizer.path in config.yaml, BATON_TOKENIZER_BACKEND``),
    or that none did."""
    labels = [label for key, label in settings.origins if key in TOKENIZER_KEYS and key != "api_key"]
    return ", ".join(labels) if labels else "no tokenizer setting (the default, backend auto)"


def start_failure(error: Exception, chosen_by: str) -> str:
    """Why a tokenizer cannot start and what Baton does instead. A ``BackendConfigError``'s message is written
    to be shown (it names the setting and the fix); any other exception is named by type only."""
    why = (str(error) if isinstance(error, BackendConfigError)
           else f"its backend failed to start ({type(error).__name__})")
    return f"tokenizer cannot start (set by {chosen_by}): {why}. {ESTIMATES}"


@dataclass(frozen=True)
class TokenizerVerdict:
    """``exact``: the tokenizer counts requests exactly; ``estimate``: it runs, its counts are estimates;
    ``failing``: it cannot start or cannot count (``reason`` says why and how to fix it)."""

    verdict: Verdict
    source: str | None
    reason: str
    tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "source": self.source, "reason": self.reason, "tokens": self.tokens}


def check_tokenizer(settings: BatonSettings, config: TokenizerConfig | None = None) -> TokenizerVerdict:
    """Build ``config`` (default: the configured tokenizer) and count ``PROBE_REQUEST`` as the agent loop would."""
    config = config if config is not None else settings.tokenizer
    chosen_by = configured_by(settings)
    try:
        backend, selection = build_backend(config)
    except Exception as exc:  # noqa: BLE001 - the verdict reports it (BackendConfigError's message, else the type)
        return TokenizerVerdict("failing", None, start_failure(exc, chosen_by))
    counter = TokenCounter(backend, fallback_margin_tokens=settings.fallback_margin_tokens)
    try:
        count = counter.count_chat(PROBE_REQUEST)
        source = counter.source
    finally:
        counter.close()
    if count.fallback_reason is not None:
        return TokenizerVerdict("failing", source, f"tokenizer {source} (set by {chosen_by}) started but could "
                                f"not count a probe request: {count.fallback_reason}. {ESTIMATES}")
    if count.exact:
        return TokenizerVerdict("exact", source, f"{source} counted a probe request exactly ({selection.reason})",
                                count.tokens)
    hint = ("; for exact budgets set baton.tokenizer (backend + path, url or model) or BATON_TOKENIZER_*"
            if source == ROUGH_SOURCE else "")
    return TokenizerVerdict("estimate", source, f"{source} runs; its request counts are estimates "
                            f"({selection.reason}){hint}", count.tokens)

