"""The one decision for a request (``decide``: compact, lower the cap to n, or leave) and the budget arithmetic
it uses: compression window, threshold, pressure, margins, how far to shorten. Pure, no I/O; the request itself is
read and written by its shape (``shapes``: the cap and thinking budget beside the conversation, ``shapes.cap``).

Why one function: the host asks twice per request (before it sends: compact?; as it sends: what output cap?),
and both answers read the same count, window and margins; one function keeps the margins in one place. The
compaction rules' arithmetic (trigger, ceiling, floor, cooldown) lives in ``policy``.

Symbols: W = compression window, P = prompt tokens, R = minimum output reserve, B = the caller's
output cap. The output budget is a decision (``decide``) applied by a writer (``shapes.cap.write_cap``):
a cap is only ever lowered, never added: to a useful size (>= min(R, B)) while one fits, else to what the
window leaves (a short reply, never a request certain to be refused) down to the smallest cap worth sending
(``Limits.min_cap_tokens``); a request that leaves less "needs compaction" (it is shortened), and the cap it
would carry unshortened is that smallest cap, never the caller's. So the cap is monotone: a larger prompt never
gets a larger cap, and no cap ever exceeds what the window leaves.
Anthropic extended thinking spends its ``budget_tokens`` inside ``max_tokens`` and refuses a budget >=
max_tokens or < 1,024: a lowered cap lowers the thinking budget with it, keeping beside it the answer room the
caller left (Hermes: 4,096) up to R, and a room too small for 1,024 thinking tokens plus that answer is "needs
compaction", never an invalid request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from baton_engine.policy import Limits, PolicyState, cooling, hopeless
from baton_engine.request import OutputCap
from baton_engine.tokens.contract import TokenCount

# Anthropic's smallest extended-thinking budget (a smaller ``budget_tokens`` is refused).
MIN_THINKING_BUDGET_TOKENS = 1024


# Below this window, the room Hermes' percentage keeps free above its threshold shrinks in proportion to the window
# (``small_window_threshold``). Why: the percentage keeps room for Hermes' own compressor (an LLM call, counts by
# characters / 4); Baton needs only the minimum reply and the margin above its trigger (exact counts, a clamped cap,
# a request that does not fit shortened for itself). At 16,384 the 75% default (12,288) compacted 76 times in the
# benchmark's 600 turns, the fewest 4 turns apart; at 13,824 with the post-compaction aim 64 times, 5 apart
# (benchmarks/compaction/gap_bench.py, benchmarks/FINDINGS.md). 32K and above keep the percentage.
SMALL_WINDOW_TOKENS = 32768


def small_window_threshold(context_length: int, threshold_percent: float) -> int:
    """Hermes' threshold, its reserve (``1 - threshold_percent`` of the window) scaled by ``context_length /
    SMALL_WINDOW_TOKENS`` below that window: 16,384 at 75% -> 14,336 (then lowered to the ceiling less the
    margin by ``compression_window``), 32,768 and above unchanged. Never below Hermes' own threshold."""
    share = min(1.0, context_length / SMALL_WINDOW_TOKENS)
    return max(context_length - int(context_length * (1 - threshold_percent) * share),
               threshold_tokens(context_length, threshold_percent))


def threshold_tokens(context_length: int, threshold_percent: float) -> int:
    """Hermes' compaction threshold: ``int(context_length * threshold_percent)``."""
    if context_length <= 0:
        raise ValueError("context_length must be positive")
    if not 0 < threshold_percent <= 1:
        raise ValueError("threshold_percent must be in (0, 1]")
    return int(context_length * threshold_percent)


def compression_window(
    context_length: int,
    threshold_percent: float,
    *,
    reserved_output_tokens: int = 0,
    override: int | None = None,
) -> int:
    """W: the override when set, else the threshold (``small_window_threshold``), lowered so the reserved output still
    fits the context."""
    if override is not None:
        if override <= 0:
            raise ValueError("compression window override must be positive")
        return override
    if reserved_output_tokens < 0:
        raise ValueError("reserved_output_tokens must not be negative")
    window = min(small_window_threshold(context_length, threshold_percent), context_length - reserved_output_tokens)
    if window <= 0:
        raise ValueError("reserved_output_tokens leaves no room for a prompt in the context")
    return window


def compression_pressure(prompt_tokens: int, min_output_tokens: int) -> int:
    """``P + R - 1``: Hermes compacts at pressure >= W, i.e. exactly when fewer than R tokens remain."""
    if prompt_tokens < 0:
        raise ValueError("prompt_tokens must not be negative")
    if min_output_tokens <= 0:
        raise ValueError("min_output_tokens must be positive")
    return prompt_tokens + min_output_tokens - 1


def margin_for(count: TokenCount, fallback_margin_tokens: int) -> int:
    """Safety margin to subtract for this count: none when exact or when the count already includes one
    (``margin_tokens``: rough + margin, anchored estimates)."""
    if count.exact or count.margin_tokens > 0:
        return 0
    return fallback_margin_tokens


@dataclass(frozen=True)
class Margins:
    """Room a decision keeps beside the count: ``fallback`` for a count that is neither exact nor carries a
    margin of its own (``margin_for``), ``unconfirmed`` for a count its provider has not confirmed yet
    (``tokens.verify``; kept even when that makes the reply short)."""

    fallback: int = 0
    unconfirmed: int = 0

    @classmethod
    def of(cls, limits: Limits, unconfirmed: int = 0) -> Margins:
        """A request's margins: its window's fallback margin, and the room its route keeps while unconfirmed."""
        return cls(fallback=limits.fallback_margin_tokens, unconfirmed=unconfirmed)


@dataclass(frozen=True)
class Decision:
    """The one answer for a request: ``needs_compaction`` (compact, with the reason), ``lower_cap_to`` n, or
    ``leave`` (the action names are those status and the metrics log show).

    Numbers and field names only (safe for status and logs). ``value`` is the cap to write: the lowered one, or for
    ``needs_compaction`` the smallest cap, which the request carries if it cannot be shortened. ``short`` marks a
    cap lowered below the minimum useful reply: the prompt left less room, and a short reply beats a refused
    request. ``thinking_budget``: the extended-thinking budget that goes with a lowered cap (None: no thinking
    budget). ``held``: the request is at or above the compaction trigger but the cooldown holds it back (the reason
    says why). ``prompt_room``: for a request about to be sent that needs compaction, how far to shorten it: the
    tokens its prompt may take and still leave the reply room (``reply_room``), margins included.
    """

    action: Literal["needs_compaction", "lower_cap_to", "leave"]
    reason: str
    value: int | None = None
    short: bool = False
    thinking_budget: int | None = None
    held: bool = False
    prompt_room: int | None = None

    @property
    def compact(self) -> bool:
        return self.action == "needs_compaction"


def decide(count: TokenCount, limits: Limits, *, state: PolicyState | None = None, cap: OutputCap | None = None,
           thinking_budget: int | None = None, margins: Margins = Margins(), awaiting_usage: bool = False,
           detector: Callable[[], str | None] | None = None) -> Decision:
    """What a request of ``count`` tokens needs under ``limits``, margins included.

    With ``state`` (the host asks whether to compact before it sends: Hermes' ``should_compress``): the
    compaction rules on the full-request size as counted (an estimate's own margin is in ``count.tokens``):
    compact at the trigger, or at the ceiling whatever the cooldown; ``leave`` otherwise. ``detector`` is asked
    only below the trigger (it reads the project store) and returns a reason to compact, or None.

    Without ``state`` (a request about to be sent): its output budget. ``lower_cap_to(W - P - margin -
    unconfirmed)`` when the request's own ``cap`` does not fit; never below a useful reply (``min(R, B)``) while
    one fits the window, never above what the window leaves. Below a useful reply the cap is lowered to what is
    left (``short``) down to ``limits.min_cap_tokens``, the unconfirmed room giving way before that smallest cap
    does: the request is never sent certain to be refused, and the next check compacts. ``needs_compaction`` when
    the window leaves less than that smallest cap (or no room for the minimum thinking budget beside the answer):
    the request is shortened. A request without a cap is left alone: OpenAI-compatible servers (vLLM, OpenAI)
    then default the output to what remains of the window, so it cannot overflow, while ADDING a cap field can
    be refused (OpenAI reasoning models reject ``max_tokens``)."""
    if state is not None:
        return _compaction(count.tokens, limits, state, awaiting_usage, detector)
    decision = _output(count, cap, limits, margins, thinking_budget)
    if not decision.compact:
        return decision
    return replace(decision, prompt_room=_prompt_room(count, limits, cap, thinking_budget, margins.unconfirmed))


def _compaction(tokens: int | None, limits: Limits, state: PolicyState, awaiting_usage: bool,
                detector: Callable[[], str | None] | None) -> Decision:
    if state.explicit:
        return Decision("needs_compaction", "explicit handoff request")
    if tokens is None or tokens < 0 or (tokens == 0 and awaiting_usage):
        return Decision("leave", "awaiting real usage after compaction")
    if tokens >= limits.ceiling and not hopeless(tokens, limits, state):
        return Decision("needs_compaction", f"request {tokens} leaves less than {limits.min_output_tokens} "
                                            f"output tokens")
    trigger = None
    if tokens >= limits.trigger:
        trigger = f"request {tokens} >= {limits.trigger_name()} {limits.trigger}"
    elif detector is not None:
        trigger = detector()
    if trigger is None:
        return Decision("leave", f"request {tokens} below trigger {limits.trigger}")
    if cooling(tokens, limits, state):
        growth = tokens - (state.post_compaction_tokens or 0)
        stuck = f"; {state.stuck}" if state.stuck else ""
        return Decision("leave", f"cooldown: {growth} tokens of growth since the last compaction, "
                                 f"needs {limits.growth_needed}{stuck}", held=tokens >= limits.trigger)
    return Decision("needs_compaction", trigger)


def _output(count: TokenCount, cap: OutputCap | None, limits: Limits, margins: Margins,
            thinking_budget: int | None) -> Decision:
    if limits.window <= 0 or limits.min_output_tokens <= 0 or margins.fallback < 0 or margins.unconfirmed < 0:
        raise ValueError("window and min_output_tokens must be positive, margins >= 0")
    if not count.known:
        return Decision("leave", "token count unknown; request unchanged")
    window, min_output_tokens, unconfirmed_margin = limits.window, limits.min_output_tokens, margins.unconfirmed
    prompt = count.tokens
    margin = margin_for(count, margins.fallback)
    available = window - prompt - margin  # type: ignore[operator]
    smallest = max(min(limits.min_cap_tokens, min_output_tokens), 1)
    reserve = min_output_tokens if cap is None else min(min_output_tokens, cap.value)
    # An unconfirmed count keeps its room even at the cost of a short reply (down to the smallest one): a wrong
    # tokenizer's first request would otherwise overflow exactly when the room is tight (benchmarks/tokens/verify_bench.py,
    # "as each first").
    value = available - unconfirmed_margin
    numbers = (f"window={window} prompt={prompt} margin={margin} unconfirmed={unconfirmed_margin} "
               f"available={available} reserve={reserve} smallest={smallest}")
    if cap is None:
        if available < smallest:
            return Decision("needs_compaction", f"the prompt leaves no useful reply: {numbers}")
        return Decision("leave", f"no output cap sent; the server defaults to the remaining window: {numbers}")
    least = min(smallest, cap.value)
    if available < least:
        # Shortened first; unshortened it carries the smallest cap, never a larger one (monotone, and never the
        # caller's cap over a window that cannot hold it).
        why = "alone does not fit" if available < 1 else "leaves less than the smallest reply"
        return Decision("needs_compaction", f"the prompt {why}: {numbers}",
                        least if thinking_budget is None else None)
    value = max(value, least)  # the unconfirmed room gives way down to the smallest reply, never below it
    if cap.value <= value:
        return Decision("leave", f"{cap.field}={cap.value} fits: {numbers}")
    short = value < reserve
    why = ", below the minimum reply (compaction is due)" if short else ""
    if thinking_budget is None:
        return Decision("lower_cap_to", f"{cap.field} {cap.value} -> {value}{why}: {numbers}", value, short)
    answer = _answer_room(cap, thinking_budget, min_output_tokens)
    thinking = min(thinking_budget, value - answer)
    if thinking < MIN_THINKING_BUDGET_TOKENS:
        return Decision("needs_compaction", f"needs compaction: {cap.field} {value} has no room for "
                        f"{MIN_THINKING_BUDGET_TOKENS} thinking tokens beside an answer of {answer}: {numbers}")
    return Decision("lower_cap_to", f"{cap.field} {cap.value} -> {value}, thinking budget "
                    f"{thinking_budget} -> {thinking}{why}: {numbers}", value, short, thinking)


def _prompt_room(count: TokenCount, limits: Limits, cap: OutputCap | None, thinking_budget: int | None,
                 unconfirmed: int) -> int:
    """How far a request that needs compaction is shortened: the window less the reply room and the fallback margin;
    an unconfirmed count keeps its share of the shortened prompt's text too (the shortened prompt may keep fewer
    images: all of it text)."""
    room = limits.window - reply_room(limits, cap, thinking_budget) - limits.fallback_margin_tokens
    text = (count.tokens or 0) - count.media_tokens
    if unconfirmed and text > 0:
        room = int(room / (1 + unconfirmed / text))
    return room


def _answer_room(cap: OutputCap, thinking_budget: int, min_output_tokens: int) -> int:
    """The answer room extended thinking keeps beside its budget: what the caller left, at most the minimum reply."""
    return max(min(cap.value - thinking_budget, min_output_tokens), 1)


def reply_room(limits: Limits, cap: OutputCap | None, thinking_budget: int | None) -> int:
    """The output a shortened request keeps room for: the minimum reply; with extended thinking, the answer room
    plus Anthropic's smallest thinking budget (less is what ``decide`` calls needs_compaction: the request would
    go out with the caller's cap)."""
    if cap is None or thinking_budget is None:
        return limits.min_output_tokens
    return _answer_room(cap, thinking_budget, limits.min_output_tokens) + MIN_THINKING_BUDGET_TOKENS
