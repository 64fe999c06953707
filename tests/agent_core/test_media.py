"""Images in a count (issue 30 item 4): an image is its own term of a count, an estimate by the published rule of
the route's provider, and a provider's usage of image requests never scales the text of the next request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.hosted_agents import BASE_URL, MESSAGES, MODEL, installed, new_agent, qwen3_tokens, route_runtime
from batontest.images import data_url, png

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime
from baton_engine.tokens.media import image_tokens

CONFIGURED = 131072
SMALL, LARGE = 65536, 200000


@pytest.fixture
def runtime() -> Iterator[BatonRuntime]:
    with installed(route_runtime(CONFIGURED)) as runtime:
        yield runtime


def sent_cap(agent: Agent, messages: list[dict[str, Any]], provider: str = "custom") -> int | None:
    request = {"model": MODEL, "messages": messages, "max_tokens": 250000}
    rewritten = agent.on_request(request, model=MODEL, base_url=BASE_URL, provider=provider)
    return None if rewritten is None else rewritten["max_tokens"]


@pytest.mark.parametrize(("detail", "per_image"), [("low", 85), (None, 5043)])
def test_after_image_requests_a_text_request_is_budgeted_on_its_text(
        project: Path, runtime: BatonRuntime, detail: str | None, per_image: int) -> None:
    """Image requests answered with a provider's usage (the route's own tokenizer for the text, its own rule for
    each image: OpenAI's 85 for ``detail: low``, Qwen2.5-VL's 5,043 for a large screenshot, against Baton's bound of
    1,640) never scale the text: the route stays confirmed and a text request's cap is within 2% of what the
    provider counts."""
    agent = new_agent(project, MODEL, LARGE, base_url=BASE_URL, provider="custom", session_id="s")
    image = {"url": data_url(png(1988, 1988)), **({"detail": detail} if detail else {})}
    history = list(MESSAGES[:-1])
    for turn in range(3):  # the history grows between the image requests, as a session's does
        question = [{"type": "text", "text": f"What do screenshots {turn} show?"}]
        with_images = [*history, {"role": "user", "content": [
            *question, *({"type": "image_url", "image_url": image} for _ in range(4))]}]
        assert sent_cap(agent, with_images) is not None
        text = qwen3_tokens(runtime, [*history, {"role": "user", "content": question}])
        agent.observe_response_usage({"prompt_tokens": text + 4 * per_image, "completion_tokens": 5,
                                      "total_tokens": 0})
        history += [{"role": "user", "content": question},
                    {"role": "assistant", "content": f"Set {turn}: the build page, worker 7 retried batch 41. " * 20}]
    text_only = [*history, {"role": "user", "content": "Summarise the release plan."}]
    real = qwen3_tokens(runtime, text_only)
    cap = sent_cap(agent, text_only)
    assert cap is not None and abs((LARGE - cap) - real) <= 0.02 * real, (LARGE - cap, real)
    assert agent.status()["verification"]["verdict"] == "confirmed"


@pytest.mark.parametrize(("provider", "rule", "figure"), [
    ("custom", "bound", 1049),  # a self-hosted server: the larger of the two rules (Anthropic's here)
    ("anthropic", "anthropic", 1049),  # ceil(1024 * 768 / 750)
    ("openai", "openai", 765),  # 768 x 576 after scaling: 2 x 2 tiles, 85 + 4 * 170
])
def test_status_names_the_media_share_of_the_last_count_as_an_estimate(
        project: Path, runtime: BatonRuntime, provider: str, rule: str, figure: int) -> None:
    """The route's provider's published rule when it is known, the larger of Anthropic's and OpenAI's otherwise."""
    agent = new_agent(project, MODEL, SMALL, base_url=BASE_URL, provider=provider, session_id="s")
    picture = {"type": "image_url", "image_url": {"url": data_url(png(1024, 768))}}
    with_image = [*MESSAGES[:-1], {"role": "user", "content": [{"type": "text", "text": "What is shown?"}, picture]}]
    assert sent_cap(agent, with_image, provider=provider) is not None
    tokenizer = agent.status()["tokenizer"]
    assert tokenizer["media_rule"] == rule
    assert tokenizer["media_tokens_estimated"] == image_tokens(1024, 768, rule) == figure
    assert sent_cap(agent, MESSAGES, provider=provider) is not None  # a text-only request: no media term
    assert agent.status()["tokenizer"]["media_tokens_estimated"] == 0
