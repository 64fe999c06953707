"""Media apart from text in a route's verification (issue 30, "images"): an image's cost is an estimate, so the
provider's usage of a request with images never scales the text; the difference is the media term's.

The provider here is a server counting with the route's own tokenizer (real Qwen3) plus its own image rule:
OpenAI's 85 tokens for a ``detail: low`` image, or Qwen2.5-VL's 28-pixel patches (5,043 tokens for the large
screenshot below; Baton's conservative bound for it is 1,445-1,640)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from batontest import assets
from batontest.images import data_url, png

from baton_engine.agent.memos import AgentMemos
from baton_engine.hermes import request_view
from baton_engine.tokens import media
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.verify import RouteCheck

SCREENSHOT = png(1988, 1988)  # a large screenshot
QWEN_VL_TOKENS = 5043  # the figure for each of its large images on a Qwen2.5-VL server
LOW = 85


@pytest.fixture(scope="module")
def qwen3() -> Any:
    return assets.hf_backend(assets.qwen3_dir())


def text_turns(words: int) -> list[dict[str, Any]]:
    sentence = "the build log shows worker 7 retried batch 41 after a timeout of 30 seconds; "
    body = (sentence * (words // 14 + 1))
    return [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": body}]


def image_turn(count: int, detail: str | None) -> dict[str, Any]:
    image: dict[str, Any] = {"url": data_url(SCREENSHOT)}
    if detail:
        image["detail"] = detail
    return {"role": "user", "content": [{"type": "text", "text": "What do these screenshots show?"},
                                        *({"type": "image_url", "image_url": image} for _ in range(count))]}


def provider(qwen3: Any, messages: list[dict[str, Any]], per_image: int) -> int:
    """The server's ``prompt_tokens``: the text with the route's own tokenizer, each image by its own rule."""
    text, images = media.split_request({"messages": messages})
    count = sum(1 for m in messages if isinstance(m.get("content"), list)
                for p in m["content"] if p.get("type") == "image_url")
    return qwen3.count_chat(text).tokens + count * per_image


def count(counter: TokenCounter, check: RouteCheck, messages: list[dict[str, Any]]) -> Any:
    """What the engine's ledger does: the view's count, then the route's scale."""
    raw = counter.count_chat(AgentMemos(request_view.project).estimate(messages).count_request())
    return raw, check.adjust(raw)


def test_low_detail_is_honoured() -> None:
    part = {"type": "image_url", "image_url": {"url": data_url(SCREENSHOT), "detail": "low"}}
    assert media.part_tokens(part) == LOW
    assert media.part_tokens({"type": "input_image", "image_url": data_url(SCREENSHOT), "detail": "low"}) == LOW
    assert media.part_tokens({"type": "image_url", "image_url": {"url": data_url(SCREENSHOT)}}) > LOW


@pytest.mark.parametrize(("detail", "per_image"), [("low", LOW), (None, QWEN_VL_TOKENS), ("high", 40)])
def test_image_requests_never_scale_the_text(qwen3: Any, detail: str | None, per_image: int) -> None:
    """Issue 30: after 12 ``detail: low`` images a 104,379-token text request was counted 14,082 (-86.5%); after
    12 large Qwen2.5-VL images a 12,008-token text request was counted 36,519 (+204%), still +204% after a
    text-only request whose usage was exact. Now the text is counted within 2% either way, and the route is
    confirmed."""
    counter, check = TokenCounter(qwen3), RouteCheck()
    history = text_turns(400)
    for turn in range(3):  # three image requests, the history growing between them
        messages = [*history, image_turn(12, detail)]
        raw, _ = count(counter, check, messages)
        assert raw.media_tokens > 0 and not raw.exact  # the media term is named: an estimate
        check.observe(raw, provider(qwen3, messages, per_image))
        history = [*history, {"role": "assistant", "content": f"Screenshot set {turn} shows the build page."},
                   {"role": "user", "content": "And the next ones? " * 30}]
    with_images = [*history, image_turn(12, detail)]
    _, adjusted = count(counter, check, with_images)
    real = provider(qwen3, with_images, per_image)
    assert abs(adjusted.tokens - real) <= 0.02 * real  # the media term learned from the provider
    text_only = text_turns(20_000)
    raw, adjusted = count(counter, check, text_only)
    real = provider(qwen3, text_only, per_image)
    assert abs(adjusted.tokens - real) <= 0.02 * real, (adjusted.tokens, real)
    check.observe(raw, real)
    assert check.verdict == "confirmed"  # the right tokenizer is confirmed
    assert check.adjust(raw).tokens == real and check.output_margin(raw) == 0


def test_a_conversation_that_keeps_its_images_is_confirmed_from_the_growth_between_requests(qwen3: Any) -> None:
    """Every request carries the same images: the text's scale comes from the difference of two requests (the
    images cancel), so the route leaves ``unconfirmed`` without a text-only request."""
    counter, check = TokenCounter(qwen3), RouteCheck()
    history = [*text_turns(200), image_turn(4, None)]
    for turn in range(3):
        raw, _ = count(counter, check, history)
        check.observe(raw, provider(qwen3, history, QWEN_VL_TOKENS))
        history = [*history, {"role": "assistant", "content": "The screenshots show the login page. " * 20},
                   {"role": "user", "content": f"Now check step {turn}: " + "open the next page and read it. " * 20}]
    assert check.verdict == "confirmed"
    raw, adjusted = count(counter, check, history)
    real = provider(qwen3, history, QWEN_VL_TOKENS)
    assert abs(adjusted.tokens - real) <= 0.02 * real
    assert check.output_margin(raw) == 0


def test_a_wrong_tokenizer_is_still_calibrated_with_images_in_every_request(qwen3: Any) -> None:
    """The same growth measures a wrong scale: a server counting 25% more text calibrates the route."""
    counter, check = TokenCounter(qwen3), RouteCheck()
    history = [*text_turns(200), image_turn(2, None)]
    for _ in range(3):
        raw, _ = count(counter, check, history)
        text, _ = media.split_request({"messages": history})
        check.observe(raw, math.ceil(1.25 * qwen3.count_chat(text).tokens) + 2 * 1000)
        history = [*history, {"role": "user", "content": "Read the next page and tell me what it says. " * 40}]
    assert check.verdict == "calibrated" and 1.2 < check.ratio < 1.3
