"""Counts the provider confirms: each route's counts checked against the prompt size its provider reports.

Why: an exact tokenizer is only exact when it is the right one. A wrong family (o200k for a Qwen3 model) or
wrong template kwargs count ~20% low, and a clamp that trusts them sends prompt + cap above the window. Every
response says the truth (``usage.prompt_tokens``), so each one is compared with what Baton counted for that
exact request. Within ``TOLERANCE`` the route stays ``confirmed`` (exact); beyond it the route is
``calibrated``: counts are put on the provider's scale (``ratio * count`` with the largest reported/counted
ratio of the recent requests) plus a margin, and labelled inexact. Until a route's first response nothing is
confirmed, so output caps keep ``UNCONFIRMED_SHARE`` of the count free (the first request of a wrong tokenizer
must not overflow either).

Images and documents apart: their cost is an estimate (``tokens.media``) that no tokenizer checks, so a request
carrying them never teaches the text's scale. What the provider reported beyond the text's known scale is the
media term's (``media_ratio``: the provider's media cost per estimated media token, applied to later media terms);
two requests with the same media and a different text size measure the text's scale from their difference (the
media cancels), so a conversation whose history keeps its images is still confirmed or calibrated.

One ``RouteCheck`` per route (model + server); plain data (Hermes deep-copies engines), numbers only.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from baton_engine.tokens.anchor import ANCHORED_SOURCE
from baton_engine.tokens.contract import UNKNOWN_SOURCE, TokenCount
from baton_engine.tokens.rough import FALLBACK_SOURCE, ROUGH_SOURCE

CALIBRATED_SOURCE = "calibrated"
Verdict = Literal["unconfirmed", "confirmed", "calibrated"]

# The reported size may differ from the count by this much and the count stays exact (tokens, share of the
# count; the larger applies). The benchmark report states the figures it is chosen from.
TOLERANCE_TOKENS = 8
TOLERANCE_SHARE = 0.002
# Calibrated counts: ratio * count plus this share of it and a floor (the ratio's drift over a session).
CALIBRATED_MARGIN_SHARE = 0.03
CALIBRATED_MARGIN_FLOOR = 64
# Before a route's first confirmed response, output caps keep this share of the prompt free. Half: a wrong
# family undercounts a session's first request (system prompt + tool schemas) far more than a long history,
# and a quarter did not cover that first request (benchmarks/tokens/verify_bench.py); the cost is a few hundred
# tokens of output room on one small request.
UNCONFIRMED_SHARE = 0.5
RECENT = 8  # ratios remembered per route
SETTLED = 3  # responses after which a calibrated route's ratio is trusted without the unconfirmed room
# Text growth between two requests with the same media that measures the text's scale from their difference: the
# tolerance is 8 tokens, so 256 tokens of growth measure a ratio to 3%.
MEDIA_DELTA_TOKENS = 256


def usage_mapping(raw: Any) -> Mapping[str, Any]:
    """A provider SDK's usage object (pydantic: ``model_dump``) or a dict, as a mapping (empty for anything else)."""
    if isinstance(raw, Mapping):
        return raw
    dump = getattr(raw, "model_dump", None)
    dumped = dump() if callable(dump) else None
    return dumped if isinstance(dumped, Mapping) else {}


def usage_value(usage: Mapping[str, Any], *keys: str) -> int:
    """The first non-negative int among ``keys`` (usage dicts vary by provider and Hermes version); 0 when none."""
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


def reported_prompt_tokens(usage: Mapping[str, Any]) -> int:
    """The provider's size of the prompt it was sent, from any usage shape (0 = not reported).

    OpenAI-compatible (vLLM, SGLang, llama.cpp, OpenAI chat): ``prompt_tokens`` (cached tokens included).
    Anthropic: ``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens`` (Hermes'
    normalised ``cache_read_tokens`` / ``cache_write_tokens``). Responses API: ``input_tokens``."""
    return usage_value(usage, "prompt_tokens") or (
        usage_value(usage, "input_tokens") + usage_value(usage, "cache_read_input_tokens", "cache_read_tokens")
        + usage_value(usage, "cache_creation_input_tokens", "cache_write_tokens"))


# Where each usage shape says how much of the prompt the provider read from its cache: OpenAI chat and vLLM
# (``--enable-prompt-tokens-details``) ``prompt_tokens_details.cached_tokens``, the Responses API
# ``input_tokens_details.cached_tokens``, Anthropic ``cache_read_input_tokens``, Bedrock ``cacheReadInputTokens``,
# DeepSeek ``prompt_cache_hit_tokens``, Hermes' canonical ``cache_read_tokens``.
_CACHE_READ_KEYS = ("cache_read_tokens", "cache_read_input_tokens", "cacheReadInputTokens", "prompt_cache_hit_tokens")
_CACHE_DETAILS = ("prompt_tokens_details", "input_tokens_details")


def cached_prompt_tokens(usage: Mapping[str, Any]) -> int | None:
    """The part of the prompt the provider read from its cache (part of ``reported_prompt_tokens`` on every shape),
    None when the usage has no cache field at all (a route that does not say, not a miss)."""
    for key in _CACHE_READ_KEYS:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    for key in _CACHE_DETAILS:
        details = usage.get(key)
        if isinstance(details, Mapping) and "cached_tokens" in details:
            return usage_value(details, "cached_tokens")
    return None


PLAUSIBLE_FACTOR = 100  # a reported size this many times off the count answers another request (or none)


def plausible(counted: TokenCount | None, reported: int) -> bool:
    """Whether ``reported`` can be the provider's size of the request ``counted`` measured: positive, and
    within ``PLAUSIBLE_FACTOR`` of the count either way. No tokenizer ratio is that far off; a usage that is
    (0, an aggregated or mis-paired number) is ignored, never calibrated on."""
    if reported <= 0:
        return False
    if counted is None or counted.tokens is None or counted.tokens <= 0:
        return True  # nothing to compare with: the provider's size is the best there is
    return counted.tokens / PLAUSIBLE_FACTOR <= reported <= counted.tokens * PLAUSIBLE_FACTOR


def within_tolerance(counted: int, reported: int) -> bool:
    return abs(reported - counted) <= max(TOLERANCE_TOKENS, math.ceil(TOLERANCE_SHARE * counted))


def below(counted: TokenCount | None, reported: int) -> bool:
    """Whether a tokenizer count of a request lies above the provider's size of it beyond the tolerance (what
    would calibrate the route down)."""
    if counted is None or counted.tokens is None or reported <= 0 or not _from_tokenizer(counted):
        return False
    tokens = raw_tokens(counted)
    return tokens > reported and not within_tolerance(tokens, reported)


def truncated(counted: TokenCount | None, reported: int, window: int) -> bool:
    """Whether a reported size below the count is the server cutting the prompt to its window, not a wrong
    tokenizer: the count is above the window the server states, the report at or under it. Ollama cuts with
    HTTP 200 (it drops the oldest messages until the prompt fits its num_ctx, server/prompt.go; one still too long
    is cut to about half the window, llm/llama_server.go), so the report may sit well under the window.
    Calibrating down on such a report makes every later count too small, the worst case; taking an overcounting
    tokenizer for a cut is the safe mistake (counts stay high, the window is the server's own)."""
    if counted is None or window <= 0 or not below(counted, reported):
        return False
    return raw_tokens(counted) > window >= reported


@dataclass(frozen=True)
class Comparison:
    """One response: what Baton counted for the request and what the provider reported."""

    counted: int
    reported: int

    @property
    def ratio(self) -> float:
        return self.reported / self.counted if self.counted > 0 else 1.0


class RouteCheck:
    """The verdict on one route's counts, from the responses seen so far."""

    def __init__(self) -> None:
        self.verdict: Verdict = "unconfirmed"
        self.requests_seen = 0
        self.mismatches = 0
        self.last: Comparison | None = None
        self.excess = 0  # the largest within-tolerance undercount seen: added to confirmed counts
        self._ratios: deque[float] = deque(maxlen=RECENT)
        self.calibrated_at: int | None = None  # requests_seen when the route flipped
        self.media_ratio: float | None = None  # the provider's media cost per estimated media token (learned)
        self.media_requests = 0
        self._media_seen: tuple[int, int, int] | None = None  # (text, media, reported) of the last media request
        self.truncations = 0  # responses whose prompt the server cut to its window (``truncated``)
        self.truncation: tuple[int, int, int] | None = None  # (counted, reported, window) of the last one

    def observe(self, counted: TokenCount | None, reported: int) -> bool:
        """Compare a response's reported size with the count of the request it answers; True when this
        response flipped the route to ``calibrated``. Only tokenizer counts are verified: an anchored or
        rough count is already an estimate from the provider's numbers. A request with media teaches the
        media term (``_observe_media``)."""
        if counted is None or counted.tokens is None or reported <= 0 or not _from_tokenizer(counted):
            return False
        tokenizer_tokens = raw_tokens(counted)
        if tokenizer_tokens <= 0:
            return False
        if counted.media_tokens > 0:
            return self._observe_media(tokenizer_tokens - counted.media_tokens, counted.media_tokens, reported)
        return self._compare(tokenizer_tokens, reported)

    def note_truncation(self, counted: TokenCount, reported: int, window: int) -> None:
        """A response whose prompt the server cut to ``window`` (``truncated``): no comparison, no calibration."""
        self.truncations += 1
        self.truncation = (raw_tokens(counted), reported, window)

    def _observe_media(self, text: int, media: int, reported: int) -> bool:
        """A request with ``media`` estimated media tokens beside ``text`` tokenizer tokens: the text's scale only
        from the difference with the last request of the same media (the media cancels), and what the report
        holds beyond the text at its known scale is the media term's (``media_ratio``)."""
        self.media_requests += 1
        previous, self._media_seen = self._media_seen, (text, media, reported)
        flipped = False
        if previous is not None and previous[1] == media:
            grown, reported_growth = text - previous[0], reported - previous[2]
            if abs(grown) >= MEDIA_DELTA_TOKENS and grown * reported_growth > 0:
                flipped = self._compare(abs(grown), abs(reported_growth))
        expected = self.ratio * text if self.verdict == "calibrated" else text + self.excess
        self.media_ratio = max(reported - expected, 0) / media
        return flipped

    def _compare(self, tokenizer_tokens: int, reported: int) -> bool:
        """One comparison of tokenizer tokens with the provider's: confirms, or flips the route to calibrated."""
        comparison = Comparison(tokenizer_tokens, reported)
        self.requests_seen += 1
        self.last = comparison
        self._ratios.append(comparison.ratio)
        if within_tolerance(comparison.counted, reported):
            if self.verdict == "unconfirmed":
                self.verdict = "confirmed"
            self.excess = max(self.excess, reported - comparison.counted)
            return False
        self.mismatches += 1
        flipped = self.verdict != "calibrated"
        if flipped:
            self.verdict, self.calibrated_at = "calibrated", self.requests_seen
        return flipped

    @property
    def ratio(self) -> float:
        """The largest recent reported/counted ratio (a ratio drifts; the largest is the safe one)."""
        return max(self._ratios) if self._ratios else 1.0

    def adjust(self, counted: TokenCount) -> TokenCount:
        """A tokenizer count on this route's provider scale: as it is while confirmed (plus the largest small
        undercount seen), ``ratio * count + margin`` (inexact, ``calibrated``) once calibrated. The media term is
        scaled apart, by ``media_ratio`` once a response showed it."""
        if counted.tokens is None or not _from_tokenizer(counted):
            return counted
        media = counted.media_tokens
        text = raw_tokens(counted) - media
        if media and self.media_ratio is not None:
            media = math.ceil(self.media_ratio * media)
        if self.verdict == "calibrated":
            scaled = math.ceil(self.ratio * text) + media
            margin = math.ceil(CALIBRATED_MARGIN_SHARE * scaled) + CALIBRATED_MARGIN_FLOOR
            return TokenCount(scaled + margin, False, CALIBRATED_SOURCE, counted.max_model_len,
                              fallback_reason=counted.fallback_reason, margin_tokens=margin, media_tokens=media)
        excess = self.excess if self.verdict == "confirmed" else 0
        if not excess and media == counted.media_tokens:
            return counted
        return replace(counted, tokens=text + excess + media + counted.margin_tokens, media_tokens=media)

    def output_margin(self, counted: TokenCount) -> int:
        """Extra room an output cap keeps for this count (a tokenizer count, or ``adjust``'s calibrated one): a
        share of it until the route is confirmed, and while a
        calibrated route's ratio rests on fewer than ``SETTLED`` responses (one small first request's ratio is no
        rate for a large tool result: the real loop's second request undercounted after one;
        benchmarks/FINDINGS.md, "Figures behind the code's constants", calibrated routes)."""
        if counted.tokens is None or not (_from_tokenizer(counted) or counted.source == CALIBRATED_SOURCE):
            return 0
        if self.verdict == "confirmed" or (self.verdict == "calibrated" and self.requests_seen >= SETTLED):
            return 0
        return math.ceil(UNCONFIRMED_SHARE * (raw_tokens(counted) - counted.media_tokens))

    def status(self, source: str) -> dict[str, Any]:
        """Numbers for ``baton_status`` and doctor: counted vs reported, the ratio, requests seen."""
        last = self.last
        advice = None
        if self.verdict == "calibrated" and last is not None:
            share = round(abs(1 - self.ratio) * 100)
            direction = "undercounts" if self.ratio > 1 else "overcounts"
            advice = (f"your tokenizer {source} {direction} this server by {share}%: set baton.tokenizer to the "
                      f"served model's tokenizer (backend vllm with the server's url, or hf with its files); "
                      f"budgets use the provider's reported sizes meanwhile")
        return {"verdict": self.verdict, "requests_seen": self.requests_seen, "mismatches": self.mismatches,
                "last_counted": last.counted if last else None, "last_reported": last.reported if last else None,
                "ratio": round(self.ratio, 4), "calibrated_after_requests": self.calibrated_at, "advice": advice,
                "truncations": self.truncations,
                "last_truncation": None if self.truncation is None else dict(
                    zip(("counted", "reported", "window"), self.truncation, strict=True)),
                "media_requests": self.media_requests,
                "media_ratio": None if self.media_ratio is None else round(self.media_ratio, 4)}


def raw_tokens(counted: TokenCount) -> int:
    """The tokenizer's own number inside a count (any margin left out)."""
    return int(counted.tokens or 0) - counted.margin_tokens


_NOT_TOKENIZER = frozenset({ANCHORED_SOURCE, CALIBRATED_SOURCE, ROUGH_SOURCE, FALLBACK_SOURCE, UNKNOWN_SOURCE})


def _from_tokenizer(counted: TokenCount) -> bool:
    """Whether the count is the tokenizer's own (not a fallback, an anchored estimate or a calibration)."""
    return counted.fallback_reason is None and counted.source not in _NOT_TOKENIZER
