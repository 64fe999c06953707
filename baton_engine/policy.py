"""When to compact: the trigger, the hard ceiling and anti-thrash, as pure arithmetic over plain data (the one
decision that reads them is ``budget.decide``).

Why one scale: every number here is the size of the FULL provider request (system prompt + tool
schemas + messages), the quantity Hermes passes to ``should_compress`` once Baton's estimators are in
place. The post-compaction size is measured the same way, so with 50 tools (20-30k tokens of schemas)
the anti-thrash rule compares like with like instead of a message-only count that never reaches the
trigger again.

Anti-thrash: after a compaction the next one needs real growth (a tenth of the trigger); a compaction
whose result is still at or above the trigger is marked ``stuck`` (the fixed part — system prompt,
tools, brief — does not fit under it) and repeated only after the same growth, never at every check.
At the hard ceiling (no useful output fits) the growth rule is bypassed, unless the last compaction
itself ended above the ceiling.

The floor: a trigger so low that half of it cannot hold the fixed part plus the block and the minimum
shares (``trigger_floor``) compacts at nearly every request and elides every result the model has not
seen. Such a trigger is raised to the floor (``Limits.floor``, known once a request's frame was counted),
never refused: the fixed part is only known at run time and differs per toolset, and refusing then would
hand the session back to Hermes' own compressor.

Every limit is clamped to the window's size (``Limits.clamped``, the ONE place that turns a window and the settings
into the limits every decision uses): the minimum reply is at most ``MIN_REPLY_SHARE``-th of the window and the
fallback margin at most ``MARGIN_SHARE``-th, so the defaults made for 128K windows (4,096 + 1,024) leave a 4K or 8K
window a working trigger and ceiling instead of a ceiling of 0 (a compaction at every request). No output cap
below ``MIN_CAP_TOKENS`` (at most the minimum reply) is ever sent: a request that leaves less is shortened instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

GROWTH_SHARE = 10  # after a compaction the next one needs trigger/10 tokens of real growth
POST_COMPACTION_SHARE = 2  # the compacted request aims at half the trigger: the next compaction is many turns away
# ...and at least this far below it, so a small window's compaction leaves room for several turns (below a trigger of
# 22,936 the aim is lowered; 32K windows and above keep half). The figure is the benchmark workload's largest growth
# over 4 consecutive turns (Qwen3 tokens: 11,468; p99 9,807): a compaction before the heaviest stretch still leaves
# 5 turns. Measured with benchmarks/compaction/gap_bench.py at 16,384 (benchmarks/FINDINGS.md): 9,216 kept the fewest turns
# between two compactions at 4, 11,468 (with no minimum tail) at 5.
POST_COMPACTION_ROOM_TOKENS = 11468
DEFAULT_TAIL_CAP = 8192  # the default verbatim tail never exceeds this, however large the trigger
MIN_TAIL_TOKENS = 1024  # the verbatim tail the trigger floor makes room for (the latest answered turns)
MIN_UNANSWERED_TOKENS = 2048  # the share for results not yet answered never falls below this
DEFAULT_TAIL_SHARE = 4  # a degraded compaction keeps at most a quarter of the compaction window
# The minimum reply and the fallback margin as shares of the window at most: 4K keeps 512 + 128, 8K 1,024 + 256,
# 16K 2,048 + 512, 32K and above the configured 4,096 + 1,024 (docs/compaction.md, "Small windows").
MIN_REPLY_SHARE = 8
MARGIN_SHARE = 32
# The smallest output cap ever sent: above the largest tool-call reply of the benchmark workload (Qwen3 tokens of
# 200 turns' assistant messages: tool calls p50 64, p95 119, max 172; answers max 54; benchmarks/FINDINGS.md,
# "Figures behind the code's constants", smallest cap). A smaller cap cuts a tool call mid-JSON.
MIN_CAP_TOKENS = 256


def min_reply_tokens(window: int, configured: int) -> int:
    """The minimum reply a window of ``window`` tokens keeps: the configured one, at most a share of the window."""
    return max(1, min(configured, window // MIN_REPLY_SHARE))


def margin_tokens(window: int, configured: int) -> int:
    """The fallback margin a window of ``window`` tokens keeps: the configured one, at most a share of the window."""
    return max(0, min(configured, window // MARGIN_SHARE))


def reserved_tokens(window: int, min_output_tokens: int, fallback_margin_tokens: int) -> int:
    """What the compaction threshold keeps free below a window: the minimum reply and the margin, clamped."""
    return min_reply_tokens(window, min_output_tokens) + margin_tokens(window, fallback_margin_tokens)


@dataclass(frozen=True)
class Limits:
    """The numbers a decision uses, all in tokens of the full request."""

    threshold: int
    window: int  # the effective window (Hermes' context length, or the server's smaller one)
    min_output_tokens: int
    fallback_threshold: int | None = None
    floor: int | None = None  # the smallest workable trigger for this request frame (``trigger_floor``)
    fallback_margin_tokens: int = 0  # kept beside a count that is neither exact nor carries its own margin
    min_cap_tokens: int = 1  # no smaller output cap is ever sent (``MIN_CAP_TOKENS``, clamped)

    @classmethod
    def clamped(cls, window: int, *, threshold: int, min_output_tokens: int, fallback_margin_tokens: int,
                fallback_threshold: int | None = None, floor: int | None = None) -> Limits:
        """The limits of ``window`` under the settings: the minimum reply, the margin and the smallest cap clamped
        to the window's size, the threshold and the fallback threshold at most the ceiling. The ONE place the
        settings become limits (the engine, the auxiliary calls, the benchmarks)."""
        if window <= 0:
            raise ValueError("window must be positive")
        reply = min_reply_tokens(window, min_output_tokens)
        ceiling = max(window - reply, 1)
        return cls(threshold=max(min(threshold, ceiling), 1), window=window, min_output_tokens=reply,
                   fallback_threshold=None if fallback_threshold is None else max(min(fallback_threshold, ceiling), 1),
                   floor=floor, fallback_margin_tokens=margin_tokens(window, fallback_margin_tokens),
                   min_cap_tokens=min(MIN_CAP_TOKENS, reply))

    @property
    def configured_trigger(self) -> int:
        """The lower of the threshold and the fallback threshold, as the settings give them."""
        if self.fallback_threshold is not None:
            return min(self.threshold, self.fallback_threshold)
        return self.threshold

    @property
    def trigger(self) -> int:
        """The size at which compaction starts: the configured trigger, raised to the floor (at most to the
        ceiling) when it is below it."""
        if self.floor is None or self.configured_trigger >= self.floor:
            return self.configured_trigger
        return max(min(self.floor, self.ceiling), self.configured_trigger)

    @property
    def raised(self) -> bool:
        """True when the configured trigger is below the floor and the trigger was raised."""
        return self.trigger > self.configured_trigger

    def trigger_name(self) -> str:
        if self.raised:
            return f"trigger floor (raised from {self.configured_trigger})"
        if self.fallback_threshold is not None and self.fallback_threshold <= self.threshold:
            return "fallback_token_threshold"
        return "threshold"

    @property
    def ceiling(self) -> int:
        """Above this no useful output fits the window."""
        return self.window - self.min_output_tokens

    @classmethod
    def of_window(cls, window: int, min_output_tokens: int, fallback_margin_tokens: int = 0) -> Limits:
        """The limits of a request that is only sent, never compacted here (an auxiliary route's, a benchmark's):
        its window is its only limit."""
        return cls.clamped(window, threshold=window, min_output_tokens=min_output_tokens,
                           fallback_margin_tokens=fallback_margin_tokens)

    @property
    def post_compaction_aim(self) -> int:
        """The size a compaction aims its request at (full-request scale): half the trigger, lowered so that at
        least ``POST_COMPACTION_ROOM_TOKENS`` are left below the trigger. Large windows keep half (their half is
        the larger room); a small window's aim leaves room for several turns instead of a long verbatim tail
        (``tail_budgets`` still keeps ``MIN_TAIL_TOKENS``)."""
        return max(min(self.trigger // POST_COMPACTION_SHARE, self.trigger - POST_COMPACTION_ROOM_TOKENS), 0)

    @property
    def growth_needed(self) -> int:
        return max(self.trigger // GROWTH_SHARE, 1)


@dataclass(frozen=True)
class PolicyState:
    """Per agent: the explicit request flag and what the last compaction achieved."""

    explicit: bool = False
    post_compaction_tokens: int | None = None
    stuck: str | None = None  # why the last compaction could not get below the trigger


def cooling(tokens: int, limits: Limits, state: PolicyState) -> bool:
    """Anti-thrash: less than ``limits.growth_needed`` tokens of growth since the last compaction."""
    if state.post_compaction_tokens is None:
        return False
    return tokens - state.post_compaction_tokens < limits.growth_needed


def hopeless(tokens: int, limits: Limits, state: PolicyState) -> bool:
    """At the ceiling the cooldown is bypassed, unless the last compaction itself ended above the ceiling
    and nothing grew since: compacting again would loop at every check."""
    post = state.post_compaction_tokens
    return post is not None and post >= limits.ceiling and cooling(tokens, limits, state)


def after_compaction(state: PolicyState, post_tokens: int, limits: Limits) -> PolicyState:
    """The state once a compaction produced a request of ``post_tokens`` (full-request scale)."""
    stuck = None
    if post_tokens >= limits.trigger:
        stuck = (f"the compacted request ({post_tokens} tokens) is still at or above the trigger "
                 f"{limits.trigger}: the system prompt, tool schemas and brief do not fit under it")
    return replace(state, explicit=False, post_compaction_tokens=post_tokens, stuck=stuck)


def trigger_floor(fixed_tokens: int, block_tokens: int, configured_tail: int | None = None) -> int:
    """The smallest workable trigger for a request frame of ``fixed_tokens`` (system prompt, tool schemas):
    the one whose post-compaction aim (half of it) holds the fixed part, the block, the tail (the configured
    one, at least ``MIN_TAIL_TOKENS``) and the minimum share for results not yet answered. Below it a
    compaction cannot free room for the next turns: it fires again at (nearly) every request."""
    tail = max(configured_tail or 0, MIN_TAIL_TOKENS)
    return POST_COMPACTION_SHARE * (max(fixed_tokens, 0) + max(block_tokens, 0) + tail + MIN_UNANSWERED_TOKENS)


def tail_budgets(limits: Limits, *, fixed_tokens: int, inflight_tokens: int, block_tokens: int,
                 configured_tail: int | None = None) -> tuple[int, int]:
    """``(room for unanswered results, verbatim tail)`` of a compacted request: fixed part (system prompt,
    tool schemas) + block + unanswered results + tail.

    The unanswered results (the ones that arrived in the request that triggered the compaction) are kept
    verbatim whenever the request can carry them: their room is what the window holds below the ceiling,
    never less than ``MIN_UNANSWERED_TOKENS``; eliding them would hide a result the model never saw. The
    tail aims the rest at ``limits.post_compaction_aim``: what is left after the unanswered results, at most
    ``DEFAULT_TAIL_CAP``, none when they fill the aim (a small window's verbatim tail would take the next turns'
    room: at 16,384 a 1,024-token minimum kept the fewest turns between compactions at 4, none at 5;
    benchmarks/FINDINGS.md); a configured tail (``fresh_tail_tokens``) is used as it is."""
    aim = limits.post_compaction_aim - fixed_tokens - block_tokens
    tail = configured_tail if configured_tail is not None else \
        min(max(aim - inflight_tokens, 0), DEFAULT_TAIL_CAP)
    room = max(limits.ceiling - fixed_tokens - block_tokens - tail, MIN_UNANSWERED_TOKENS)
    return room, tail


def degraded_tail_tokens(threshold: int, configured: int | None = None) -> int:
    """The most a degraded compaction (no handoff) keeps verbatim: the configured ``degradation_max_tokens``,
    else a ``DEFAULT_TAIL_SHARE``-th of the compaction window (at least one token)."""
    return configured or max(threshold // DEFAULT_TAIL_SHARE, 1)
