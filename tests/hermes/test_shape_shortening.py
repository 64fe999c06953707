"""Every request shape, built by hermes-agent 0.19.0's own transports from a history of large read and write
rounds, at sizes from below to far above the window, through the engine as Hermes' middleware calls it: every
request Baton returns is one its provider accepts (``batontest.validators``: the providers' SDK types and pairing
rules) and fits (its size, counted again from the request sent by the route's own tokenizer, plus its cap, within
the window). The failures of issue 30 at 9dba563: an orphan ``tool_result`` / ``toolResult`` after the emergency
shortening, Baton's note as string content on Bedrock, a Responses request never shortened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from batontest.engines import started_engine
from batontest.hermes_requests import BUILDERS, anthropic, history, model_of
from batontest.validators import VALIDATORS

from baton_engine.shapes.cap import find_cap

pytestmark = pytest.mark.hermes
WINDOW = 64_000
SIZES = (0.5, 0.95, 1.2, 1.8, 2.2, 3.0)


def sent_size(engine: Any, api_mode: str, request: dict[str, Any]) -> int:
    """The request as sent, read afresh and counted exactly by the route's own tokenizer."""
    from baton_engine.hermes import request_view

    view = request_view.shape_for(api_mode).read(request)
    counted = engine.requests.counting().count_chat(view.count_request())
    assert counted.exact and counted.tokens is not None
    return counted.tokens


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_shape_is_valid_and_fits_at_every_size(qwen3_env: Path, project: Path, name: str, size: float) -> None:
    api_mode, build = BUILDERS[name]
    engine = started_engine(project, window=WINDOW)
    request = build(history(int(size * WINDOW)))
    assert VALIDATORS[api_mode](request) == []  # Hermes built a valid request
    rewritten = engine.on_request(request, api_mode=None if api_mode == "chat_completions" else api_mode,
                                  model=model_of(request))
    sent = rewritten if rewritten is not None else request
    assert VALIDATORS[api_mode](sent) == []
    cap = find_cap(sent)
    assert cap is not None
    assert sent_size(engine, api_mode, sent) + cap.value <= WINDOW
    if size >= 1.2:  # far over the window: only a shortened request can fit
        assert engine.requests.ledger.request_compactions == 1
        kept = {k: v for k, v in sent.items() if k not in ("messages", "input", "max_tokens", "max_output_tokens",
                                                           "inferenceConfig", "thinking")}
        assert kept == {k: v for k, v in request.items() if k in kept} and set(kept) | {"messages", "input"} >= (
            set(request) - {"max_tokens", "max_output_tokens", "inferenceConfig", "thinking"})


@pytest.mark.parametrize("window", (4096, 16_384))
@pytest.mark.parametrize("size", (0.5, 1.2, 3.0))
def test_extended_thinking_is_shortened_with_room_for_its_thinking(qwen3_env: Path, project: Path, window: int,
                                                                   size: float) -> None:
    """Hermes' extended thinking (budget 4,000 in 16,384) in a small window: the shortening leaves room for the
    answer AND Anthropic's smallest thinking budget beside it. At 1eb3d6b it left a plain reply's room only, the
    cap then had no room for 1,024 thinking tokens, and the request went out with Hermes' 16,384 cap over the
    window (benchmarks/budget/shapes_bench.py: 20 of 42 thinking requests at 4,096 and 16,384)."""
    engine = started_engine(project, window=window)
    request = anthropic(history(int(size * window), result_lines=max(2, window // 1000)), thinking=True)
    sent = engine.on_request(request, api_mode="anthropic_messages", model=model_of(request)) or request
    assert VALIDATORS["anthropic_messages"](sent) == []
    cap = find_cap(sent)
    assert cap is not None and 1024 <= sent["thinking"]["budget_tokens"] < cap.value
    assert sent_size(engine, "anthropic_messages", sent) + cap.value <= window
