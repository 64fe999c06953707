"""A request's output cap and thinking budget, read into its view and written back, beside the shapes' other readers
and writers.

Why here: a shape reads a request's cap and thinking budget into its view (``ProviderRequest.cap``,
``thinking_budget``) once; ``budget.decide`` decides on the view's numbers alone, and the decision is written into
the request here, in the field (and place) the request already uses. The budget never reads the request itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from baton_engine.budget import Decision, Margins, decide
from baton_engine.policy import Limits
from baton_engine.request import OutputCap, ProviderRequest, positive_int
from baton_engine.tokens.contract import TokenCount

# The output-cap fields of the OpenAI-style APIs (chat completions, Anthropic messages, the Responses API), in
# the order a provider honours them when a request carries several: vLLM reads ``max_completion_tokens``
# before ``max_tokens``; the Responses API knows only ``max_output_tokens``.
OUTPUT_CAP_FIELDS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
# Bedrock Converse keeps its cap inside ``inferenceConfig``.
INFERENCE_CONFIG, INFERENCE_CAP_FIELD = "inferenceConfig", "maxTokens"


def find_thinking_budget(request: Mapping[str, Any]) -> int | None:
    """Anthropic extended thinking's ``budget_tokens`` when the request enables it (``thinking: {type: enabled,
    budget_tokens: B}``; adaptive thinking has no budget); the budget is part of ``max_tokens``."""
    thinking = request.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") == "enabled":
        return positive_int(thinking.get("budget_tokens"))
    return None


def find_cap(request: Mapping[str, Any]) -> OutputCap | None:
    """The output cap the provider honours: Bedrock's ``inferenceConfig.maxTokens``; else the first field of
    ``OUTPUT_CAP_FIELDS`` set in the body as sent, where ``extra_body`` is merged over the top level (the
    OpenAI SDK's rule: an ``extra_body`` value wins, even a null one). A value that is not a positive int
    sets no cap."""
    inference = request.get(INFERENCE_CONFIG)
    if isinstance(inference, Mapping) and INFERENCE_CAP_FIELD in inference:
        value = positive_int(inference[INFERENCE_CAP_FIELD])
        return OutputCap(INFERENCE_CAP_FIELD, value, INFERENCE_CONFIG) if value is not None else None
    extra = request.get("extra_body")
    extra = extra if isinstance(extra, Mapping) else {}
    for name in OUTPUT_CAP_FIELDS:
        if name in extra:
            value, within = positive_int(extra[name]), "extra_body"
        elif name in request:
            value, within = positive_int(request[name]), None
        else:
            continue
        if value is not None:
            return OutputCap(name, value, within)
    return None


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


def write_decision(request: Mapping[str, Any], cap: OutputCap | None, decision: Decision) -> dict[str, Any] | None:
    """``request`` with ``decision``'s cap written (a request that needs compaction carries the smallest cap, what
    it is sent with if it cannot be shortened); None to leave it as it is."""
    if decision.action == "leave" or cap is None or decision.value is None:
        return None
    return write_cap(request, cap, decision.value, decision.thinking_budget)


def budget_output(request: Mapping[str, Any], view: ProviderRequest, count: TokenCount, limits: Limits, *,
                  unconfirmed_margin: int = 0) -> tuple[Decision, dict[str, Any] | None]:
    """The output budget of ``request`` as its shape read it (``view``: its cap and thinking budget), counted
    ``count`` under ``limits`` (``Limits.clamped`` or ``Limits.of_window``): the decision and the rewritten request
    (None: leave it as it is)."""
    decision = decide(count, limits, cap=view.cap, thinking_budget=view.thinking_budget,
                      margins=Margins.of(limits, unconfirmed_margin))
    return decision, write_decision(request, view.cap, decision)


def apply_output(request: Mapping[str, Any], count: TokenCount, limits: Limits, *, cap: OutputCap | None = None,
                 unconfirmed_margin: int = 0) -> tuple[Decision, dict[str, Any] | None]:
    """``budget_output`` for a request no shape has read (a benchmark's or a test's): its cap (``cap`` when the
    caller imposes one) and thinking budget read here."""
    view = ProviderRequest((), cap=cap if cap is not None else find_cap(request),
                           thinking_budget=find_thinking_budget(request))
    return budget_output(request, view, count, limits, unconfirmed_margin=unconfirmed_margin)
