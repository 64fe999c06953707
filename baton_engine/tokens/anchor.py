"""Usage-anchored counting: without a tokenizer, the last exact count plus a scaled rough estimate of what changed.

A chars/4 estimate of a whole tool-heavy Qwen3 prompt is 10-30% low, more than any fixed margin covers. But an
exact count of the previous request is nearly always at hand (the tokenizer's, or the provider's reported
``prompt_tokens``), and the next request is usually that request plus a few appended messages. So the estimate is
``anchor exact + ratio * rough(appended) + margin``, where rough is Hermes' chars/4 with digits at a full token,
``ratio`` (exact / rough) is learned from this session and the margin is proportional to the estimated part only. A request that is not an extension of the anchor
(frame changed, history rewritten by compaction) is ``ratio * rough(whole) + margin on the whole``.

One ``UsageAnchor`` per agent session. Thread-safe; copies (``copy.deepcopy``, pickle) are independent.
It stores hashes and numbers only, never message text.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from baton_engine.tokens.contract import ChatRequest, TokenCount
from baton_engine.tokens.rough import estimate_messages_tokens_rough, estimate_tools_tokens_rough

ANCHORED_SOURCE = "anchored"
# Chosen from benchmarks/tokens/anchor_bench.py: the smallest share with no undercount over every anchored model call,
# with headroom over the worst tokenizer, and no budget overflow with the tokenizer lost halfway or absent (the
# figures: benchmarks/results/REPORT.md, "Usage-anchored counting"; benchmarks/FINDINGS.md, "Figures behind the
# code's constants", usage anchor).
DEFAULT_MARGIN_SHARE = 0.2
# The floor covers the template framing of a short appended message, which chars/4 cannot see; a larger floor
# lowers the share needed only a little (same sources).
DEFAULT_MARGIN_FLOOR_TOKENS = 64
# The ratio is the maximum exact/rough over this many recent observations: the ratio of a growing session drifts
# down (tool results are cheaper per character than the frame), so the maximum is safe and still current; a longer
# memory keeps the early, frame-heavy ratio and over-counts longer, and a ratio of appended parts alone was noisier
# (exploration). The share each memory needs: same sources.
RECENT_OBSERVATIONS = 8
# Keys that never reach the prompt; Baton itself rewrites the output budget, which must not look like a new frame.
NON_PROMPT_KEYS = frozenset({"messages", "max_tokens", "max_completion_tokens", "max_output_tokens",
                             "stream", "stream_options"})


@dataclass(frozen=True)
class _Fingerprint:
    """A request as hashes and rough estimates: frame hash, one hash and one rough count per message."""

    frame: str
    messages: tuple[str, ...]
    roughs: tuple[int, ...]
    frame_rough: int

    @property
    def rough(self) -> int:
        return self.frame_rough + sum(self.roughs)


@dataclass(frozen=True)
class _Anchor:
    fingerprint: _Fingerprint
    exact: int


class UsageAnchor:
    """Remembers the last exact count of a session's requests and estimates the next ones from it."""

    def __init__(
        self,
        *,
        margin_share: float = DEFAULT_MARGIN_SHARE,
        margin_floor_tokens: int = DEFAULT_MARGIN_FLOOR_TOKENS,
        recent_observations: int = RECENT_OBSERVATIONS,
    ) -> None:
        if not (math.isfinite(margin_share) and margin_share >= 0):
            raise ValueError("margin_share must be a finite number >= 0")
        if margin_floor_tokens < 0 or recent_observations < 1:
            raise ValueError("margin_floor_tokens must be >= 0 and recent_observations >= 1")
        self._share = margin_share
        self._floor = margin_floor_tokens
        self._lock = threading.Lock()
        # The last ``recent_observations`` exact counts, fingerprinted only when an estimate is needed: observing
        # is on every exact count's path (O(1)), fingerprinting costs a JSON dump per message.
        # Bounded: at most ``recent_observations`` requests are referenced (their message objects are shared).
        self._observed: deque[list[Any]] = deque(maxlen=recent_observations)

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            state = self.__dict__.copy()
            state["_observed"] = deque((list(entry) for entry in self._observed), maxlen=self._observed.maxlen)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def observations(self) -> int:
        """How many recent exact counts the ratio is learned from (status shows it)."""
        return len(self._settled()[1])

    def observe_exact(self, request: ChatRequest, tokens: int) -> None:
        """Make this exact count (tokenizer, or provider-reported ``prompt_tokens``) the anchor. Never raises."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            return
        with self._lock:
            self._observed.append([request, tokens, False, None])  # request, exact, fingerprinted?, fingerprint

    def _settled(self) -> tuple[_Anchor | None, list[float]]:
        """The anchor (the newest readable observation) and the recent exact/rough ratios."""
        with self._lock:
            entries = list(self._observed)
        anchor, ratios = None, []
        for entry in entries:
            if not entry[2]:
                entry[3], entry[2] = _fingerprint(entry[0]), True  # a lost race computes the same value twice
            fingerprint = entry[3]
            if fingerprint is None:
                continue
            anchor = _Anchor(fingerprint, entry[1])
            if fingerprint.rough > 0:
                ratios.append(entry[1] / fingerprint.rough)
        return anchor, ratios

    def estimate(self, request: ChatRequest) -> TokenCount | None:
        """The anchored estimate (margin included, ``margin_tokens`` set); None before any observation."""
        anchor, ratios = self._settled()
        if anchor is None or not ratios:
            return None
        fingerprint = _fingerprint(request)
        ratio = max(ratios)
        if fingerprint is None:
            return None
        known = len(anchor.fingerprint.messages)
        extends = (fingerprint.frame == anchor.fingerprint.frame
                   and fingerprint.messages[:known] == anchor.fingerprint.messages)
        if extends:
            base, estimated = anchor.exact, math.ceil(ratio * sum(fingerprint.roughs[known:]))
        else:
            base, estimated = 0, math.ceil(ratio * fingerprint.rough)
        margin = math.ceil(self._share * estimated) + self._floor
        return TokenCount(base + estimated + margin, False, ANCHORED_SOURCE, margin_tokens=margin)


def _canonical(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _digest(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


_DIGITS = str.maketrans("", "", "0123456789")


def _digit_extra(canonical: str) -> int:
    """Digits cost up to a token each (Qwen3 splits numbers into single digits), not a quarter: without this a
    large numeric tool result (JSON, metrics) after a session of prose undercounts (by how much:
    benchmarks/FINDINGS.md, "Figures behind the code's constants", usage anchor)."""
    return (3 * (len(canonical) - len(canonical.translate(_DIGITS))) + 3) // 4


def _fingerprint(request: ChatRequest) -> _Fingerprint | None:
    """None for anything that is not a JSON chat request with a message list. One JSON dump per message serves
    both its hash and its digit count (the dominant cost). Once the request is JSON, the rough estimates read
    any shape of it (they check each type they look into), so an unreadable request is found here, not by them."""
    if not isinstance(request, Mapping):
        return None
    messages = request.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        return None
    frame = _canonical({key: value for key, value in request.items() if key not in NON_PROMPT_KEYS})
    texts = [_canonical(message) for message in messages]
    if frame is None or None in texts:
        return None
    tools = request.get("tools")
    frame_rough = estimate_tools_tokens_rough(tools) if isinstance(tools, list) else 0
    roughs = tuple(estimate_messages_tokens_rough([message]) + _digit_extra(text)  # type: ignore[arg-type]
                   for message, text in zip(messages, texts))
    return _Fingerprint(_digest(frame), tuple(_digest(t) for t in texts), roughs, frame_rough)  # type: ignore[arg-type]
