"""One agent's request ledger: its route, the frame of its last request, one count per request view.

Why per agent: a gateway runs many agents in one process with different tools, windows and counts;
the ledger lives on each agent's engine copy (plain data, so Hermes' ``copy.deepcopy`` works), never in
process-wide "last request" state. The frame (system prompt, tools, template kwargs) the middleware saw
completes the estimators' partial arguments, so both count the same view; the memo makes a retry of
the same request cost no tokenizer call; the anchor turns each response's real ``prompt_tokens`` into
the basis of the next estimate when exact counting is unavailable.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from baton_engine import policy
from baton_engine.budget import Decision
from baton_engine.compaction.cycle import SessionFacts, first_unanswered
from baton_engine.request import ProviderRequest
from baton_engine.tokens.anchor import UsageAnchor
from baton_engine.tokens.contract import TokenCount
from baton_engine.tokens.media import BOUND, MediaRule, priced
from baton_engine.tokens.rough import estimate_chat_request, estimate_tokens_rough
from baton_engine.tokens.server_window import ServedWindow
from baton_engine.tokens.verify import RouteCheck, plausible


@dataclass(frozen=True)
class Route:
    """Where this agent's main requests go, and what last changed it (for status)."""

    model: str | None = None
    base_url: str | None = None
    provider: str | None = None
    api_mode: str | None = None
    changed_by: str | None = None

    def moved(self, *, model: Any = None, base_url: Any = None, provider: Any = None, api_mode: Any = None,
              why: str) -> Route:
        """This route with every given (non-empty) value replaced; ``changed_by`` says why when it moved.

        A ``base_url`` given empty ("") clears it: Hermes passes its route's whole base URL, and a provider
        without one (Bedrock, a native SDK) must not keep the previous server's (None: not given, kept)."""
        values = {"model": model, "provider": provider, "api_mode": api_mode}
        changes: dict[str, str | None] = {k: str(v) for k, v in values.items() if v and str(v) != getattr(self, k)}
        if base_url is not None and (url := str(base_url).rstrip("/") or None) != self.base_url:
            changes["base_url"] = url
        return replace(self, **changes, changed_by=why) if changes else self

    def differs_from(self, other: Route) -> bool:
        """True when ``other`` is another model or server (not this one with a blank filled in): the counts,
        anchor and verdict of one route say nothing about another."""
        return any(mine and theirs and mine != theirs for mine, theirs in
                   ((self.model, other.model), (self.base_url, other.base_url)))

    def key(self) -> tuple[str | None, str | None, str | None, str | None]:
        """What names this route's state (``RouteLedgers``): model, server, provider, API mode."""
        return self.model, self.base_url, self.provider, self.api_mode

    def serves(self, model: Any, base_url: Any) -> bool:
        """True when a request to (model, base_url) goes to this route's model (unknown parts match)."""
        if self.model and model and str(model) != self.model:
            return False
        return not (self.base_url and base_url and str(base_url).rstrip("/") != self.base_url)


@dataclass(frozen=True)
class Measure:
    """How the compaction cycle counts: exactly where counts are local and cheap, else calibrated.

    With a remote tokenizer every count is a network round trip, so inside one compaction the tail
    and brief budgets use the rough estimate scaled by this request's exact/rough ratio, and only the
    compacted request itself is counted exactly (at most 3 round trips per compaction)."""

    count_messages: Any
    count_text: Any
    count_request: Any  # a whole chat request (the frame: system prompt, tool schemas)


@dataclass
class RouteLedgers:
    """One agent's ledgers of the routes it is not on, by ``Route.key``, least recently used dropped first: a switch
    back (``/model`` A -> B -> A, a fallback provider and back) finds its route's verification, calibration,
    learned window and anchor, and an auxiliary model's route (titles, vision, summaries on another model or server)
    keeps its own verification across calls. Plain data, so Hermes' per-agent ``copy.deepcopy`` copies it whole."""

    left: OrderedDict[tuple[str | None, ...], Ledger] = field(default_factory=OrderedDict)

    def switch(self, current: Ledger, old: Route, new: Route, capacity: int) -> Ledger:
        """Keep ``current`` as ``old``'s state and return ``new``'s (a fresh ledger for a route never seen, or one
        dropped); at most ``capacity`` routes are kept, the current one included."""
        self._keep(old.key(), current)
        ledger = self.left.pop(new.key(), None) or Ledger()
        self._bound(capacity)
        return ledger

    def auxiliary(self, route: Route, capacity: int) -> Ledger:
        """The ledger of ``route``, another route than the agent's own that an auxiliary call goes to (a fresh one
        for a route never seen, or one dropped), now the most recently used; at most ``capacity`` routes are kept,
        the agent's own included."""
        # the anchor of one request: an auxiliary request may carry an image (vision), and a kept route's cost is what
        # its ledger references (benchmarks/FINDINGS.md, "State kept per route")
        ledger = self.left.get(route.key()) or Ledger(anchor=UsageAnchor(recent_observations=1))
        self._keep(route.key(), ledger)
        self._bound(capacity)  # with room for the agent's own route only, nothing else is kept
        return ledger

    def routes(self) -> list[tuple[tuple[str | None, ...], Ledger]]:
        """The routes kept, least recently used first (status lists their verification)."""
        return list(self.left.items())

    def _keep(self, key: tuple[str | None, ...], ledger: Ledger) -> None:
        self.left[key] = ledger
        self.left.move_to_end(key)

    def _bound(self, capacity: int) -> None:
        while self.left and len(self.left) >= max(capacity, 1):
            self.left.popitem(last=False)


@dataclass
class Ledger:
    """One route's request state for one agent; kept in ``RouteLedgers`` while the agent is on another route."""

    frame: ProviderRequest | None = None
    sent: dict[str, Any] | None = None  # the count request of the last main request sent
    sent_count: TokenCount | None = None  # what the counter said of it (before calibration)
    memo_key: str | None = None
    memo_content: str | None = None  # the memo's content key, on routes counted by content
    memo: TokenCount | None = None  # the counter's own count of the last view
    # (key, count request) of the last view counted: the request sent is kept as this one when their keys match, so
    # the ledger never holds the host's copies of the history (freeing them at the next request grew with it)
    counted_request: tuple[str, dict[str, Any]] | None = None
    anchor: UsageAnchor = field(default_factory=UsageAnchor)
    check: RouteCheck = field(default_factory=RouteCheck)  # this route's counts against its provider's
    output: Decision | None = None
    auxiliary_output: Decision | None = None
    counted: int = 0  # views counted (memo misses)
    memo_hits: int = 0
    learned_window: int | None = None  # the window a refusal stated
    served: ServedWindow | None = None  # the window the route's server stated when asked (a cut prompt's check)
    served_asked: bool = False  # the server was asked (once per route)
    refusals: int = 0  # context-length refusals seen on this route
    request_compactions: int = 0  # requests shortened for themselves (their prompt alone did not fit)
    short_caps: int = 0  # caps lowered below the minimum reply (no room was left; compaction was due)
    fixed: tuple[str | None, int] | None = None  # (frame key, what that frame adds) of the last frame counted
    floor_warned: int | None = None  # the raised trigger last warned about (warn once per value)
    sent_requests: int = 0  # main requests sent on this route; the usage of the last one is observed once
    observed_request: int = 0  # the request (by number) whose reported size was last observed
    implausible_usage: int = 0  # reported sizes ignored as impossible for the request they would answer

    def count(self, view: ProviderRequest, counting: Any, *, by_content: bool = False,
              media_rule: MediaRule = BOUND) -> TokenCount:
        """One count per distinct view, on the provider's scale (``RouteCheck.adjust``); the same view again
        (a retry) is answered from the memo. ``by_content``: on a route whose wire format is not chat messages
        (Responses, Converse, Anthropic), the transport's view of the request the estimator just counted is the
        same request (``ProviderRequest.content_key``), answered from the memo too; it then names the memo, so
        the request sent pairs with its count. ``media_rule``: whose published rule prices the view's images
        (``tokens.media.rule_of`` the route)."""
        request = priced(view.count_request(), media_rule)
        key = view.key if request is view.count_request() or view.key is None else f"{view.key}:{media_rule}"
        content = view.content_key if by_content else None
        if self.memo is not None and ((key is not None and key == self.memo_key)
                                      or (content is not None and content == self.memo_content)):
            self.memo_hits += 1
            self.memo_key = key
            return self.check.adjust(self.memo)
        counted = counting.count_chat(request, anchor=self.anchor, key=key)
        self.counted += 1
        self.memo_key, self.memo_content, self.memo = key, content, counted
        self.counted_request = (view.key, view.count_request()) if view.key is not None else None
        return self.check.adjust(counted)

    def trigger_count(self, current_tokens: Any) -> TokenCount | None:
        """The count Hermes compacts on, when it is this ledger's last count: Hermes passes the number its
        (Baton's) estimate just returned, so the request that triggered the compaction is not counted again."""
        memo = self.check.adjust(self.memo) if self.memo is not None else None
        if memo is not None and memo.tokens is not None and current_tokens == memo.tokens:
            return memo
        return None

    def sent_request(self, view: ProviderRequest, *, auxiliary: bool = False, instead: bool = False) -> None:
        """The request about to go out (counted just before): its body anchors usage, its count is what the
        response's reported size is checked against; a main request's frame completes later estimates (an
        auxiliary call's frame, a title's or a vision prompt's, is no frame of the agent's requests). ``instead``:
        the request recorded last is sent as ``view`` (shortened to fit), not as one more request."""
        if not auxiliary:
            self.frame = view.frame()
        kept = self.counted_request
        self.sent = kept[1] if kept is not None and view.key == kept[0] else view.count_request()
        self.sent_count = self.memo if view.key is not None and view.key == self.memo_key else None
        if not instead:
            self.sent_requests += 1

    def observe_usage(self, prompt_tokens: int) -> bool:
        """The provider's size of the last request sent (0 = none reported): the anchor, and the check of
        this route's counts, once per request (Hermes 0.22 reports the same usage again at the end of the turn)
        and only when it is plausible for that request (``verify.plausible``). True when this response showed
        the counts are off (the route is calibrated)."""
        if self.sent is None or prompt_tokens <= 0 or self.usage_observed():
            return False
        if not plausible(self.sent_count, prompt_tokens):
            self.implausible_usage += 1
            return False
        self.observed_request = self.sent_requests
        self.anchor.observe_exact(self.sent, prompt_tokens)
        return self.check.observe(self.sent_count, prompt_tokens)

    def observe_truncation(self, prompt_tokens: int, served: ServedWindow) -> None:
        """The provider cut the last request sent to its window ``served`` (``verify.truncated``): its size is no
        anchor and no check of the counts; the route budgets against ``served`` from now on."""
        self.observed_request = self.sent_requests
        self.served = served
        if self.sent_count is not None:
            self.check.note_truncation(self.sent_count, prompt_tokens, served.tokens)

    def usage_observed(self) -> bool:
        """True when the last request sent already had its reported size observed."""
        return self.sent_requests > 0 and self.observed_request == self.sent_requests

    def decided(self, decision: Decision, *, auxiliary: bool) -> None:
        self.short_caps += int(decision.short)
        if auxiliary:
            self.auxiliary_output = decision
        else:
            self.output = decision

    def fixed_tokens(self, counting: Any) -> int | None:
        """What the last request's frame (system prompt, tool schemas) adds to a conversation, counted once per
        frame (``frame_tokens``): exactly with a local tokenizer, with a remote one (a round trip per count) the
        rough estimate at the last request's exact/rough ratio (``measure``); None before the first request. A
        local count made with estimates (the tokenizer still starting) is not kept: the exact one replaces it."""
        if self.frame is None:
            return None
        key = self.frame.key
        if self.fixed is None or self.fixed[0] != key or key is None:
            exact = True
            if counting.remote_tokenizer() and self.sent_count is not None and self.sent is not None:
                sent = self.frame.with_conversation(self.sent.get("messages") or [])
                measure = self.measure(self.sent_count, sent, counting)
            else:
                def count_request(request: dict[str, Any]) -> int:
                    nonlocal exact
                    counted = counting.count_chat(request)
                    if counted.tokens is None:
                        raise ValueError("uncountable frame")
                    exact = exact and counted.exact
                    return counted.tokens

                measure = Measure(None, None, count_request)
            fixed = frame_tokens(self.frame, measure)
            if not exact:  # counted while the tokenizer starts (or cannot): an estimate, counted again next time
                return fixed
            self.fixed = (key, fixed)
        return self.fixed[1]

    def trigger_floor(self, counting: Any, configured_tail: int | None) -> int | None:
        """The smallest workable trigger for this route's frame (``policy.trigger_floor``); None before the
        first request."""
        fixed = self.fixed_tokens(counting)
        return None if fixed is None else policy.trigger_floor(fixed, SessionFacts.max_block_tokens, configured_tail)

    def tail_budgets(self, view: ProviderRequest, messages: Sequence[Any], measure: Measure, limits: policy.Limits,
                     *, configured_tail: int | None) -> tuple[int, int]:
        """``(room for unanswered results, verbatim tail)`` for this transcript (``policy.tail_budgets``): the
        fixed part is what the request's frame (system prompt, tool schemas) adds, counted once per session
        (``frame_tokens``; the request less its whole conversation gives the same number but counted the
        whole transcript again at every compaction: 18 ms at 200k tokens), the unanswered results are counted
        the way ``measure`` counts."""
        transcript = list(messages or [])
        try:
            unanswered = transcript[first_unanswered(transcript):]
            inflight = measure.count_messages(unanswered) if unanswered else 0
        except (TypeError, ValueError):  # not a chat transcript, or no exact count now: budgets from the trigger alone
            inflight = 0
        return policy.tail_budgets(limits, fixed_tokens=frame_tokens(view, measure), inflight_tokens=inflight,
                                   block_tokens=SessionFacts.max_block_tokens, configured_tail=configured_tail)

    def measure(self, before: TokenCount, view: ProviderRequest, counting: Any) -> Measure:
        """How a compaction counts on this route (``counting``: its ``RouteCounting``)."""
        local = not counting.remote_tokenizer()
        if before.exact and local:
            return Measure(counting.exact_messages, counting.exact_text, counting.exact_request)
        ratio = _ratio(before, view)

        def count_messages(batch: list[dict[str, Any]]) -> int:
            return math.ceil(ratio * estimate_chat_request({"messages": batch}))

        def count_text(text: str) -> int:
            # A local backend counts text exactly and cheaply even when its chat count is an estimate (tiktoken):
            # the whole request's ratio is no rate for other text (an emoji transcript's ratio would over-count an
            # ASCII brief until it could not fit; benchmarks/compaction/soak.py found it).
            if local:
                counted = counting.count_text(text)
                if counted.exact and counted.tokens is not None:
                    return counted.tokens
            return math.ceil(ratio * estimate_tokens_rough(text))

        def count_request(request: dict[str, Any]) -> int:
            return math.ceil(ratio * estimate_chat_request(request))

        return Measure(count_messages, count_text, count_request)


_PROBE = {"role": "user", "content": "."}


def frame_tokens(view: ProviderRequest, measure: Measure) -> int:
    """What ``view``'s frame (system prompt, tool schemas) adds to a conversation's count: the frame around a
    one-message probe less the probe alone, so the template's framing (BOS, generation prompt), which a count of
    the conversation includes too, is not counted twice. Two small counts, the same every compaction of a
    session (cached); 0 for no frame or an uncountable one (as if it were free)."""
    frame = view.frame()
    if not (frame.messages or frame.tools):
        return 0
    try:
        framed = measure.count_request(frame.with_conversation([_PROBE]).count_request())
        return max(framed - measure.count_request({"messages": [_PROBE]}), 0)
    except (TypeError, ValueError):  # not a chat frame, or no exact count now: as if it were free
        return 0


def _ratio(before: TokenCount, view: ProviderRequest) -> float:
    """Exact (or anchored) tokens per rough token for this request, its safety margin left out (a margin
    protects one whole request, not every fragment); 1.0 when nothing better is known."""
    try:
        rough = estimate_chat_request(view.count_request())
    except (TypeError, ValueError):
        return 1.0
    if before.tokens is None or rough <= 0:
        return 1.0
    return max((before.tokens - before.margin_tokens) / rough, 0.1)
