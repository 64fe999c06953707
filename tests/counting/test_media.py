"""Images and documents cost what providers charge for their size, never their base64 as text; one cost in
every view (the estimator's chat messages, the Anthropic, Responses and Bedrock transports) and every count."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from batontest import assets
from batontest.images import data_url, gif, jpeg, png, webp_vp8x

from baton_engine.agent.memos import AgentMemos
from baton_engine.hermes import request_view
from baton_engine.shapes.anthropic import ANTHROPIC
from baton_engine.shapes.bedrock import BEDROCK
from baton_engine.shapes.chat import CHAT
from baton_engine.shapes.responses import RESPONSES
from baton_engine.tokens import media
from baton_engine.tokens.counter import TokenCounter
from baton_engine.tokens.rough import estimate_chat_request


@pytest.mark.parametrize(("data", "size"), [(png(1920, 1080), (1920, 1080)), (jpeg(640, 480, exif=40_000), (640, 480)),
                                            (gif(32, 16), (32, 16)), (webp_vp8x(800, 600), (800, 600)),
                                            (b"not an image", None)])
def test_sizes_are_read_from_the_headers(data: bytes, size: tuple[int, int] | None) -> None:
    assert media.image_size(data) == size


def test_an_image_costs_the_larger_of_the_published_formulas() -> None:
    assert media.image_tokens(1092, 1092) == 1590  # Anthropic's table: 1092 x 1092 ~ 1,590 tokens
    assert media.image_tokens(200, 200) == max(54, 85 + 170)  # OpenAI: one 512-px tile; Anthropic 200*200/750
    assert media.image_tokens(1024, 1024) == max(1399, 765)  # ceil(1024 * 1024 / 750)
    assert media.image_tokens(8000, 6000) <= media.UNKNOWN_IMAGE_TOKENS == 1640  # scaled down: never above the bound


def test_each_provider_is_priced_by_its_own_published_rule() -> None:
    assert media.image_tokens(1092, 1092, "anthropic") == 1590  # Anthropic's table
    assert media.image_tokens(1092, 1092, "openai") == 85 + 170 * 4  # 768 x 768 after scaling: 2 x 2 tiles
    assert media.image_tokens(2048, 4096, "openai") == 85 + 170 * 6  # 1,024 x 2,048 -> 768 x 1,536: 2 x 3 tiles
    assert media.image_tokens(200, 200, "anthropic") == 54
    for rule in ("anthropic", "openai"):  # the bound is never below a provider's own figure
        assert all(media.image_tokens(w, h, rule) <= media.image_tokens(w, h)
                   for w, h in [(200, 200), (1092, 1092), (1920, 1080), (768, 2048), (8000, 6000)])
    unreadable = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    assert media.part_tokens(unreadable, "openai") == 1445 and media.part_tokens(unreadable, "anthropic") == 1640


@pytest.mark.parametrize(("route", "rule"), [
    ({"api_mode": "anthropic_messages", "provider": "custom"}, "anthropic"),
    ({"provider": "anthropic"}, "anthropic"),
    ({"api_mode": "bedrock_converse", "model": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}, "anthropic"),
    ({"provider": "openrouter", "model": "anthropic/claude-opus-4.1"}, "anthropic"),
    ({"provider": "openai", "model": "gpt-5"}, "openai"),
    ({"base_url": "https://api.openai.com/v1", "provider": "custom"}, "openai"),
    ({"api_mode": "codex_responses", "base_url": "https://chatgpt.com/backend-api/codex"}, "openai"),
    ({"provider": "custom", "base_url": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen2.5-VL-7B"}, "bound"),
    ({"api_mode": "bedrock_converse", "model": "amazon.nova-pro-v1:0"}, "bound"),
    ({}, "bound"),
])
def test_the_route_says_whose_rule_prices_its_images(route: dict[str, str], rule: str) -> None:
    assert media.rule_of(**route) == rule


def test_low_detail_is_openai_s_flat_price_but_not_anthropic_s() -> None:
    part = {"type": "image_url", "image_url": {"url": data_url(png(1092, 1092)), "detail": "low"}}
    assert media.part_tokens(part) == media.part_tokens(part, "openai") == media.LOW_DETAIL_TOKENS
    assert media.part_tokens(part, "anthropic") == 1590  # Anthropic has no detail setting: priced by its size


def test_a_route_whose_provider_is_known_counts_its_images_by_that_rule() -> None:
    backend = Counting()
    counter = TokenCounter(backend)  # type: ignore[arg-type]
    view = CHAT.read({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "two words"}, {"type": "image_url", "image_url": {"url": data_url(IMAGE)}}]}]})
    request = view.count_request()
    assert media.priced(request, "bound") is request  # no copy under the bound
    assert media.priced({"messages": [{"role": "user", "content": "plain"}]}, "openai")["messages"][0]["content"] == \
        "plain"
    figures = {rule: counter.count_chat(media.priced(request, rule)).tokens for rule in ("bound", "anthropic", "openai")}
    assert figures == {"bound": 2 + COST, "anthropic": 2 + 1049, "openai": 2 + 765}
    assert request["messages"][0]["content"][1]["tokens"] == COST  # the view itself is never changed


def test_a_300_kb_base64_image_is_not_counted_as_text() -> None:
    """The finding: a ~300 KB PNG counted as JSON text was ~75,000 tokens; its provider cost is ~1,600."""
    url = data_url(png(1920, 1080, payload=220_000))
    assert len(url) > 290_000
    part = {"type": "image_url", "image_url": {"url": url}}
    assert media.part_tokens(part) == media.image_tokens(1920, 1080) < 1700
    request = {"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, part]}]}
    assert estimate_chat_request(request) < 1800


def test_documents_cost_per_pdf_page_and_text_by_its_bytes() -> None:
    pdf = b"%PDF-1.7\n1 0 obj << /Type /Pages /Count 2 >>\n2 0 obj << /Type /Page >>\n3 0 obj << /Type/Page >>\n"
    anthropic = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                "data": base64.b64encode(pdf).decode()}}
    assert media.part_tokens(anthropic) == 2 * media.PDF_PAGE_TOKENS
    text = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x" * 300}}
    assert media.part_tokens(text) == 100
    assert media.part_tokens({"document": {"format": "pdf", "name": "d", "source": {"bytes": pdf}}}) == \
        2 * media.PDF_PAGE_TOKENS
    assert media.part_tokens({"type": "text", "text": "hi"}) is None and media.part_tokens({"text": "hi"}) is None


IMAGE = png(1024, 768, payload=50_000)
COST = media.image_tokens(1024, 768)


def test_every_view_of_one_image_request_has_the_same_key() -> None:
    """The estimator's stored chat message and the transport's Anthropic, Responses and Bedrock blocks of the
    same request become the same placeholder: one key, one count."""
    url = data_url(IMAGE)
    stored = [{"role": "user", "content": [{"type": "text", "text": "Describe it."},
                                           {"type": "image_url", "image_url": {"url": url}}]}]
    estimate = AgentMemos(request_view.project).estimate(stored)
    chat = CHAT.read({"model": "m", "messages": stored})
    anthropic = ANTHROPIC.read({"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Describe it.", "cache_control": {"type": "ephemeral"}},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                  "data": url.partition(",")[2]}}]}]})
    responses = RESPONSES.read({"model": "m", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Describe it."},
                                     {"type": "input_image", "image_url": url}]}]})
    bedrock = BEDROCK.read({"modelId": "m", "messages": [
        {"role": "user", "content": [{"text": "Describe it."}, {"image": {"format": "png", "source": {"bytes": IMAGE}}}]}]})
    views = [estimate, chat, anthropic, responses, bedrock]
    assert all(view is not None for view in views)
    assert {view.key for view in views} == {estimate.key}
    assert estimate.count_request()["messages"][0]["content"][1] == media.placeholder(
        COST, {"openai": media.image_tokens(1024, 768, "openai")})
    assert "base64" not in str(anthropic.count_request())


class Counting:
    """A backend that records what it was asked to count (it counts words, exactly)."""

    source = "words"
    remote = False
    max_model_len = None

    def __init__(self) -> None:
        self.asked: list[Any] = []

    def count_chat(self, request: Any) -> Any:
        from baton_engine.tokens.contract import TokenCount
        self.asked.append(request)
        words = sum(len(str(part.get("text", part) if isinstance(part, dict) else part).split())
                    for m in request["messages"]
                    for part in (m["content"] if isinstance(m["content"], list) else [m["content"]]))
        return TokenCount(words, True, "words")

    def count_text(self, text: str) -> Any:
        raise NotImplementedError

    def clear_cache(self) -> None: ...

    def close(self) -> None: ...


def test_the_counter_gives_the_tokenizer_text_only_and_adds_the_media_cost() -> None:
    backend = Counting()
    counter = TokenCounter(backend)  # type: ignore[arg-type]
    view = CHAT.read({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "two words"}, {"type": "image_url", "image_url": {"url": data_url(IMAGE)}}]}]})
    counted = counter.count_chat(view.count_request())
    assert backend.asked == [{"messages": [{"role": "user", "content": [{"type": "text", "text": "two words"}]}]}]
    assert counted.tokens == 2 + COST and not counted.exact  # a bound on the image: an estimate, with the margin
    text_only = {"messages": [{"role": "user", "content": "plain"}]}
    assert counter.count_chat(text_only).exact and backend.asked[-1] is text_only  # no media: no copy


def test_a_real_tokenizer_counts_an_image_request_at_text_plus_the_image() -> None:
    qwen3 = assets.hf_backend(assets.qwen3_dir())
    counter = TokenCounter(qwen3)
    words = {"role": "user", "content": [{"type": "text", "text": "Describe it."}]}
    with_image = {"role": "user", "content": [*words["content"], {"type": "image_url",
                                                                   "image_url": {"url": data_url(IMAGE)}}]}
    text = qwen3.count_chat({"messages": [words]}).tokens
    estimate = AgentMemos(request_view.project).estimate([with_image])
    assert counter.count_chat(estimate.count_request()).tokens == text + COST


class Parts(list):  # type: ignore[type-arg]
    """A content list of another list type: still a list of parts."""


def test_only_messages_whose_content_is_a_list_are_looked_at_for_media() -> None:
    """A long history is read without a Python step per message: only content lists can hold media parts."""
    image = {"type": "image_url", "image_url": {"url": data_url(png(64, 64), "image/png")}}
    history = [{"role": "user", "content": f"turn {n}"} for n in range(50)]
    history[7] = {"role": "user", "content": [{"type": "text", "text": "look"}, image]}
    history[30] = {"role": "user", "content": Parts([image])}
    assert list(media.content_lists(history)) == [7, 30]
    assert list(media.content_lists([*history, "not a message"])) == list(range(51))
    text_only, cost = media.split_request({"messages": history})
    assert cost > 0 and text_only["messages"][7]["content"] == [{"type": "text", "text": "look"}]
    assert text_only["messages"][30]["content"] == [] and text_only["messages"][8] is history[8]
    view = CHAT.read({"messages": history})
    assert view is not None and view.messages[7]["content"][1]["type"] == media.MEDIA_PART
    assert view.messages[30]["content"][0]["type"] == media.MEDIA_PART and view.messages[8] is history[8]
