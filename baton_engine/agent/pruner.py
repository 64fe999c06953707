"""One agent's reclamation side: a host's prune hook (Hermes 0.22's ``prune_tool_results_only``) answered by the
core's prune decision.

Why a collaborator of its own: the hook is the host's, the decision core (``compaction/pruning.reclaim``: what to take
out, ``prompt_cache``: whether it pays for the cache it breaks); this glue gives the core this agent's counts (the
request as it will be sent, counted once: the pruned list's count is the next request's, a cache hit), the
compaction's trigger and tail, the route's cache reports, and commits what the core decided: the pruned originals
into recall, the figures into status and the metrics log, the runway before the next prune.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Any

from baton_engine import policy
from baton_engine.agent import metrics
from baton_engine.agent.compactions import CompactionRunner
from baton_engine.agent.recall_binding import RecallBinding
from baton_engine.agent.requests import RequestBudgeter
from baton_engine.compaction.pruning import CostOf, Reclaim, reclaim, with_media
from baton_engine.prompt_cache import CacheBook, Verdict, horizon_requests
from baton_engine.tokens.rough import estimate_messages_tokens_rough

LOGGER = logging.getLogger("baton_engine.agent")
# A result below this many tokens is left as it is unless it repeats a later one: its stub would save little, and a
# short result (an exit code, a one-line answer) is what the model most often looks back at.
MIN_RESULT_TOKENS = 256
# Tool-call arguments below this many tokens stay as written (a command, a path, a small edit).
MIN_ARGUMENT_TOKENS = 1024


class Pruner:
    """This agent's prunes: when one may run (trigger, runway, never on a request that must compact, never inside
    a compaction) and what the committed ones took out (``requests.cache``)."""

    def __init__(self, requests: RequestBudgeter, compaction: CompactionRunner, recall: RecallBinding) -> None:
        self.requests = requests
        self.compaction = compaction
        self.recall = recall
        self.rearm_tokens = 0  # the request size from which the next prune may run (the runway after the last)
        self.last: dict[str, Any] | None = None  # the last prune's figures (status)

    def new_session(self) -> None:
        """A session of its own (not a rotation at compaction): its cache account and runway start over, as its
        metrics log does."""
        self.requests.cache = CacheBook()
        self.rearm_tokens = 0
        self.last = None

    def prune(self, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """The host's hook: a NEW list and the number of messages pruned, or the input itself and 0 (Hermes commits
        only a new list with a non-zero count)."""
        if not isinstance(messages, list) or self.compaction.compacting:
            return messages, 0
        settings = self.requests.project.settings()
        if settings.reclaim_trigger_tokens <= 0:
            return messages, 0
        requests = self.requests
        view = requests.view_of(messages)
        counted = requests.count(view)
        tokens = counted.tokens
        if tokens is None:
            return messages, 0
        requests.cache.sized(tokens)  # the next request's exact size (its count is shared with that request)
        if tokens < max(settings.reclaim_trigger_tokens, self.rearm_tokens):
            return messages, 0
        if self.compaction.decide(tokens, awaiting_usage=False).compact:
            return self._declined("must_compact", messages)
        ratio = tokens / max(estimate_messages_tokens_rough(list(view.messages)), 1)
        book = requests.cache
        limits = requests.limits(tokens)

        def count(pruned: list[Any]) -> tuple[int | None, bool]:
            after = requests.count(requests.view_of(pruned))
            return after.tokens, after.exact

        decided = reclaim(messages, before=tokens, count=count, cost_of=_cost(ratio),
                          tail_tokens=settings.fresh_tail_tokens or policy.DEFAULT_TAIL_CAP,
                          min_reclaim=settings.reclaim_min_tokens, min_result_tokens=MIN_RESULT_TOKENS,
                          min_argument_tokens=MIN_ARGUMENT_TOKENS,
                          horizon=horizon_requests(tokens, limits.trigger, book.growth()),
                          ratio=settings.cached_price_ratio, hit=book.hit_share())
        if decided.messages is None:
            return self._declined(decided.verdict.reason, messages, decided.verdict)
        self._commit(decided, counted.exact, settings.reclaim_runway_tokens)
        return decided.messages, len(decided.pruned)

    def _commit(self, decided: Reclaim, before_exact: bool, runway: int) -> None:
        exact = before_exact and decided.exact
        self.recall.remember_pruned([message for candidate in decided.pruned for message in candidate.recalled],
                                    self.compaction.session_id)
        self.requests.cache.committed(decided.reclaimed, exact=exact)
        self.rearm_tokens = decided.after + runway
        self.last = {"before": decided.before, "after": decided.after, "reclaimed": decided.reclaimed,
                     "exact": exact, "pruned": dict(Counter(candidate.kind for candidate in decided.pruned)), "first_changed": decided.pruned[0].index,
                     "net": round(decided.verdict.net), "rearm_tokens": self.rearm_tokens}
        metrics.prune(self.requests, committed=True, reason="pays", figures=self.last)
        LOGGER.info("baton pruned answered tool output messages=%d reclaimed=%d exact=%s", len(decided.pruned),
                    decided.reclaimed, exact)

    def _declined(self, reason: str, messages: list[Any], verdict: Verdict | None = None) -> tuple[list[Any], int]:
        self.requests.cache.declined[reason] += 1
        metrics.prune(self.requests, committed=False, reason=reason,
                      figures={"net": round(verdict.net) if verdict is not None else None})
        return messages, 0

    def status(self) -> dict[str, Any]:
        settings = self.requests.project.settings()
        return {"trigger_tokens": settings.reclaim_trigger_tokens, "min_reclaim_tokens": settings.reclaim_min_tokens,
                "cached_price_ratio": settings.cached_price_ratio, "rearm_tokens": self.rearm_tokens,
                "last": self.last, **self.requests.cache.summary()}


def _cost(ratio: float) -> CostOf:
    """A message's tokens on this request's scale: its rough estimate times the request's exact-to-rough ratio, its
    images and documents at their own cost (the choice of a cut needs estimates; the prune is counted exactly)."""
    return with_media(lambda message: math.ceil(ratio * estimate_messages_tokens_rough([message])))
