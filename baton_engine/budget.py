"""Budget arithmetic: compression window, threshold, pressure and the output clamp. Pure, no I/O.

Symbols: W = compression window, P = prompt tokens, R = minimum output reserve, B = the caller's
output cap. A request is only ever clamped to a useful size (>= min(R, B)); when no useful output fits,
the request is returned unchanged so that compaction, not a ``max_tokens=1`` reply, handles it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from baton_engine.tokens.contract import TokenCount

OUTPUT_BUDGET_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


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
class OutputBudget:
    """What the clamp did and why (for status and logs; contains numbers and field names only)."""

    request: Mapping[str, Any]
    changed: bool
    reason: str
    field: str | None = None
    max_tokens: int | None = None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _caller_cap(request: Mapping[str, Any]) -> tuple[str, bool, int] | None:
    """(field name, lives in extra_body?, smallest positive cap) over top level and extra_body."""
    extra = request.get("extra_body")
    top = [(f, False, v) for f in OUTPUT_BUDGET_FIELDS if (v := _positive_int(request.get(f))) is not None]
    nested = (
        [(f, True, v) for f in OUTPUT_BUDGET_FIELDS if (v := _positive_int(extra.get(f))) is not None]
        if isinstance(extra, Mapping)
        else []
    )
    if not top and not nested:
        return None
    field, in_extra, _ = min(top or nested, key=lambda item: item[2])
    return field, in_extra, min(v for _, _, v in top + nested)


def clamp_output(
    request: Mapping[str, Any],
    count: TokenCount,
    *,
    window: int,
    min_output_tokens: int,
    fallback_margin_tokens: int,
) -> OutputBudget:
    """``max_tokens = min(B, W - P - margin)`` when that is >= min(R, B); else the request unchanged.

    The result request is a new dict (the input and its ``extra_body`` are never mutated); the caller's
    field name and location are kept and conflicting aliases are removed.
    """
    if window <= 0 or min_output_tokens <= 0 or fallback_margin_tokens < 0:
        raise ValueError("window and min_output_tokens must be positive, fallback_margin_tokens >= 0")
    if not count.known:
        return OutputBudget(request, False, "token count unknown; request unchanged")
    prompt = count.tokens
    margin = margin_for(count, fallback_margin_tokens)
    available = window - prompt - margin  # type: ignore[operator]
    cap = _caller_cap(request)
    reserve = min_output_tokens if cap is None else min(min_output_tokens, cap[2])
    numbers = f"window={window} prompt={prompt} margin={margin} available={available} reserve={reserve}"
    if available < reserve:
        return OutputBudget(request, False, f"needs compaction: {numbers}; request unchanged")
    field, in_extra, value = (
        ("max_tokens", False, available) if cap is None else (cap[0], cap[1], min(available, cap[2]))
    )
    rewritten = {k: v for k, v in request.items() if k not in OUTPUT_BUDGET_FIELDS}
    extra = request.get("extra_body")
    if isinstance(extra, Mapping):
        rewritten["extra_body"] = {k: v for k, v in extra.items() if k not in OUTPUT_BUDGET_FIELDS}
    target = rewritten["extra_body"] if in_extra else rewritten
    target[field] = value
    return OutputBudget(rewritten, True, f"clamped: {numbers} -> {field}={value}", field, value)
