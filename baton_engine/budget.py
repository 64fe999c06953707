"""Budget arithmetic: compression window, threshold, pressure and the output clamp. Pure, no I/O.

Symbols: W = compression window, P = prompt tokens, R = minimum output reserve, B = the caller's
output cap. The output budget is a decision (``decide_output``) applied by a writer (``write_cap``):
a cap is only ever lowered, never added: to a useful size (>= min(R, B)) while one fits, else to what the
window leaves (a short reply, never a request certain to be refused); only a prompt that alone exceeds the
window "needs compaction" before it can be sent.
Anthropic extended thinking spends its ``budget_tokens`` inside ``max_tokens`` and refuses a budget >=
max_tokens or < 1,024: a lowered cap lowers the thinking budget with it, keeping beside it the answer room the
caller left (Hermes: 4,096) up to R, and a room too small for 1,024 thinking tokens plus that answer is "needs
compaction", never an invalid request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from baton_engine.request import INFERENCE_CONFIG, OUTPUT_CAP_FIELDS, OutputCap, find_cap, find_thinking_budget
from baton_engine.tokens.contract import TokenCount

# Anthropic's smallest extended-thinking budget (a smaller ``budget_tokens`` is refused).
MIN_THINKING_BUDGET_TOKENS = 1024


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
    """W: the override when set, else the threshold, lowered so the reserved output still fits the context."""
    if override is not None:
        if override <= 0:
            raise ValueError("compression window override must be positive")
        return override
    if reserved_output_tokens < 0:
        raise ValueError("reserved_output_tokens must not be negative")
    window = min(threshold_tokens(context_length, threshold_percent), context_length - reserved_output_tokens)
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
class OutputDecision:
    """What the output budget of one request needs: ``lower_cap_to`` n, ``needs_compaction`` or ``leave``.

    Numbers and field names only (safe for status and logs). ``short`` marks a cap lowered below the
    minimum useful reply: the prompt left less room, and a short reply beats a refused request.
    ``thinking_budget``: the extended-thinking budget that goes with a lowered cap (None: no thinking budget)."""

    action: Literal["lower_cap_to", "needs_compaction", "leave"]
    reason: str
    value: int | None = None
    short: bool = False
    thinking_budget: int | None = None


def decide_output(
    count: TokenCount,
    cap: OutputCap | None,
    *,
    window: int,
    min_output_tokens: int,
    fallback_margin_tokens: int,
    unconfirmed_margin: int = 0,
    thinking_budget: int | None = None,
) -> OutputDecision:
    """The output cap a request may carry so that prompt + cap never exceeds the window.

    ``lower_cap_to(W - P - margin - unconfirmed)`` when the request's own cap does not fit; never below a
    useful reply (``min(R, B)``) while one fits the window, never above what the window leaves. Below a
    useful reply the cap is lowered to what is left (``short``): the request is never sent certain to be
    refused, and the next check compacts. ``needs_compaction`` only when the prompt alone does not fit.
    ``unconfirmed_margin``: room kept for a count its provider has not confirmed yet (``tokens.verify``), kept
    even when that makes the reply short.

    A request without a cap is left alone: OpenAI-compatible servers (vLLM, OpenAI) then default the
    output to what remains of the window, so it cannot overflow, while ADDING a cap field can be
    refused (OpenAI reasoning models reject ``max_tokens``).
    """
    if window <= 0 or min_output_tokens <= 0 or fallback_margin_tokens < 0 or unconfirmed_margin < 0:
        raise ValueError("window and min_output_tokens must be positive, margins >= 0")
    if not count.known:
        return OutputDecision("leave", "token count unknown; request unchanged")
    prompt = count.tokens
    margin = margin_for(count, fallback_margin_tokens)
    available = window - prompt - margin  # type: ignore[operator]
    reserve = min_output_tokens if cap is None else min(min_output_tokens, cap.value)
    numbers = (f"window={window} prompt={prompt} margin={margin} unconfirmed={unconfirmed_margin} "
               f"available={available} reserve={reserve}")
    if available < 1:
        return OutputDecision("needs_compaction", f"the prompt alone does not fit: {numbers}")
    if cap is None:
        return OutputDecision("leave", f"no output cap sent; the server defaults to the remaining window: {numbers}")
    # An unconfirmed count keeps its room even at the cost of a short reply: a wrong tokenizer's first request
    # would otherwise overflow exactly when the room is tight (benchmarks/verify_bench.py, "as each first").
    value = available - unconfirmed_margin if available - unconfirmed_margin >= 1 else available
    if cap.value <= value:
        return OutputDecision("leave", f"{cap.field}={cap.value} fits: {numbers}")
    short = value < reserve
    why = f", below the minimum reply (compaction is due)" if short else ""
    if thinking_budget is None:
        return OutputDecision("lower_cap_to", f"{cap.field} {cap.value} -> {value}{why}: {numbers}", value, short)
    answer = max(min(cap.value - thinking_budget, min_output_tokens), 1)  # the answer room beside the thinking
    thinking = min(thinking_budget, value - answer)
    if thinking < MIN_THINKING_BUDGET_TOKENS:
        return OutputDecision("needs_compaction", f"needs compaction: {cap.field} {value} has no room for "
                              f"{MIN_THINKING_BUDGET_TOKENS} thinking tokens beside an answer of {answer}: {numbers}")
    return OutputDecision("lower_cap_to", f"{cap.field} {cap.value} -> {value}, thinking budget "
                          f"{thinking_budget} -> {thinking}{why}: {numbers}", value, short, thinking)


def write_cap(request: Mapping[str, Any], cap: OutputCap, value: int,
              thinking_budget: int | None = None) -> dict[str, Any]:
    """A copy of ``request`` whose output cap is ``value`` in the field (and place) ``cap`` names, and whose
    ``thinking.budget_tokens`` is ``thinking_budget`` when given.

    Conflicting aliases of the cap are removed so the provider sees one; the input and its nested
    mappings are never mutated; no field the request did not use is added.
    """
    rewritten = {k: v for k, v in request.items() if k not in OUTPUT_CAP_FIELDS}
    extra = request.get("extra_body")
    if isinstance(extra, Mapping):
        rewritten["extra_body"] = {k: v for k, v in extra.items() if k not in OUTPUT_CAP_FIELDS}
    if cap.within == INFERENCE_CONFIG:
        rewritten[INFERENCE_CONFIG] = dict(request.get(INFERENCE_CONFIG) or {})
    target = rewritten[cap.within] if cap.within else rewritten
    target[cap.field] = value
    if thinking_budget is not None and isinstance(request.get("thinking"), Mapping):
        rewritten["thinking"] = {**request["thinking"], "budget_tokens": thinking_budget}
    return rewritten


def apply_output(
    request: Mapping[str, Any],
    count: TokenCount,
    *,
    window: int,
    min_output_tokens: int,
    fallback_margin_tokens: int,
    cap: OutputCap | None = None,
    unconfirmed_margin: int = 0,
) -> tuple[OutputDecision, dict[str, Any] | None]:
    """Decide, then write: the decision and the rewritten request (None: leave the request as it is).

    ``cap`` is the request's own cap when the caller already knows it (a host's request view), else the
    cap ``request`` sends that the provider honours (``find_cap``)."""
    cap = cap if cap is not None else find_cap(request)
    decision = decide_output(count, cap, window=window, min_output_tokens=min_output_tokens,
                             fallback_margin_tokens=fallback_margin_tokens, unconfirmed_margin=unconfirmed_margin,
                             thinking_budget=find_thinking_budget(request))
    if decision.action != "lower_cap_to" or cap is None or decision.value is None:
        return decision, None
    return decision, write_cap(request, cap, decision.value, decision.thinking_budget)
