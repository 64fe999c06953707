"""The provider's prompt cache in the account: what a session's prompts cost, and whether a prune pays for the cache
it breaks.

Why a room of its own beside ``budget`` and ``policy``: a prune (``compaction/pruning.py``) rewrites sent history
from its first changed message on, so the provider's cached prefix ends there and the rest is read again uncached,
once. It pays when the tokens it takes out of every later request are worth more than that one re-read:

    gain = reclaimed x (hit x r + (1 - hit)) x requests until the next compaction
    loss = suffix x hit x (1 - r)

``r`` is what a cached prompt token costs against an uncached one (``cached_price_ratio``: Anthropic prices a cache
read at 0.1x an input token, OpenAI cached input at 0.1x-0.5x by model; the default is their common 0.1), ``hit``
the share of recent prompts the route reported reading from its cache (1 when it never says: a route that caches
silently must not be broken for free), ``suffix`` what the pruned request holds from its first changed message on.
Among the cuts (every candidate from one index on) the one with the largest net wins, so a later cut that keeps a
longer prefix wins whenever the older candidates are not worth their longer re-read.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

DEFAULT_CACHED_PRICE_RATIO = 0.1
HIT_WINDOW = 8  # the responses whose cache reports make a route's hit share
GROWTH_WINDOW = 16  # the request-to-request growths whose mean predicts the requests left before a compaction


@dataclass(frozen=True)
class Cut:
    """One way to prune: every candidate from ``first`` on. ``kept_prefix`` tokens before it stay cached, ``suffix``
    tokens of the pruned request follow it, ``reclaimed`` tokens leave every later request."""

    first: int
    kept_prefix: int
    suffix: int
    reclaimed: int


@dataclass(frozen=True)
class Verdict:
    """A cut worth committing (``cut``), or None and why not (``reason``); ``net`` the cost model's figure."""

    cut: Cut | None
    reason: str
    net: float = 0.0


def net_value(cut: Cut, *, horizon: float, ratio: float, hit: float) -> float:
    """Tokens' worth (in uncached prompt tokens) a cut saves until the next compaction, less its re-read."""
    gain = cut.reclaimed * (hit * ratio + (1 - hit)) * horizon
    loss = cut.suffix * hit * (1 - ratio)
    return gain - loss


def choose_cut(cuts: Sequence[Cut], *, min_reclaim: int, horizon: float, ratio: float, hit: float) -> Verdict:
    """The cut with the largest net among those reclaiming at least ``min_reclaim``; the reason when none pays."""
    if not cuts:
        return Verdict(None, "nothing_eligible")
    large = [cut for cut in cuts if cut.reclaimed >= min_reclaim]
    if not large:
        return Verdict(None, "below_min_reclaim")
    best = max(large, key=lambda cut: (net_value(cut, horizon=horizon, ratio=ratio, hit=hit), cut.kept_prefix))
    net = net_value(best, horizon=horizon, ratio=ratio, hit=hit)
    return Verdict(best, "pays", net) if net > 0 else Verdict(None, "cache_cost", net)


def horizon_requests(tokens: int, trigger: int, growth: float | None) -> float:
    """Requests until a prompt of ``tokens`` growing by ``growth`` per request reaches the compaction trigger (the
    saving of a prune lasts that long: a compaction rewrites the list anyway). 0 without a growth figure yet."""
    if growth is None or growth <= 0:
        return 0.0
    return max(trigger - tokens, 0) / growth


@dataclass
class CacheBook:
    """One session's prompts as its provider read them: sent, read from the cache, written to it, uncached; what
    reclamation took out, the prunes committed and those declined (by reason). Verification counts a cache read as
    part of the prompt on every shape (``tokens.verify.reported_prompt_tokens``)."""

    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    responses: int = 0
    cache_reported: int = 0  # responses whose usage had a cache field at all
    reclaimed_tokens: int = 0
    reclaimed_exact: bool = True  # every reclaimed figure an exact count (False once one was an estimate)
    prunes_committed: int = 0
    declined: Counter[str] = field(default_factory=Counter)
    hits: deque[float] = field(default_factory=lambda: deque(maxlen=HIT_WINDOW))
    growths: deque[int] = field(default_factory=lambda: deque(maxlen=GROWTH_WINDOW))
    last_tokens: int | None = None

    @property
    def uncached_tokens(self) -> int:
        return max(self.prompt_tokens - self.cache_read_tokens, 0)

    def observe(self, prompt_tokens: int, cached: int | None, written: int = 0) -> None:
        """A response's usage: its prompt size and the part read from the cache (None: the route did not say)."""
        if prompt_tokens <= 0:
            return
        self.responses += 1
        self.prompt_tokens += prompt_tokens
        self.cache_write_tokens += max(written, 0)
        if cached is not None:
            self.cache_reported += 1
            self.cache_read_tokens += min(max(cached, 0), prompt_tokens)
            self.hits.append(min(max(cached, 0), prompt_tokens) / prompt_tokens)

    def hit_share(self) -> float:
        """The share of recent prompts read from the cache; 1 when the route never reported it."""
        return sum(self.hits) / len(self.hits) if self.hits else 1.0

    def sized(self, tokens: int) -> None:
        """The exact size of the request about to be sent: its growth over the last one predicts the horizon."""
        if self.last_tokens is not None and tokens > self.last_tokens:
            self.growths.append(tokens - self.last_tokens)
        self.last_tokens = tokens

    def growth(self) -> float | None:
        return sum(self.growths) / len(self.growths) if self.growths else None

    def committed(self, reclaimed: int, *, exact: bool) -> None:
        self.prunes_committed += 1
        self.reclaimed_tokens += reclaimed
        self.reclaimed_exact = self.reclaimed_exact and exact
        self.last_tokens = None  # the next growth is measured from the pruned request

    def summary(self) -> dict[str, object]:
        """Status's and the report's figures (counts only)."""
        return {"prompt_tokens": self.prompt_tokens, "cache_read_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens, "uncached_prompt_tokens": self.uncached_tokens,
                "responses": self.responses, "responses_reporting_cache": self.cache_reported,
                "hit_share": round(self.hit_share(), 4), "reclaimed_tokens": self.reclaimed_tokens,
                "reclaimed_exact": self.reclaimed_exact, "prunes_committed": self.prunes_committed,
                "prunes_declined": dict(sorted(self.declined.items()))}
