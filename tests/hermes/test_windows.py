"""Per-agent budgets: each deep-copied engine budgets its own agent's requests (window, tools, counts, route);
building an engine changes nothing shared; ``/model`` and fallback providers move the route and window."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.agent_frames import LoopAgent, in_agent
from batontest.engines import active_runtime, unconfirmed_cap
from batontest.threads import run_in_threads

from baton_engine.agent.runtime import BatonRuntime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.hermes.patches import Activation
from baton_engine.tokens.rough import estimate_chat_request, request_margin

pytestmark = pytest.mark.hermes
MODEL, BASE_URL, CONFIGURED = "qwen3-test", "http://127.0.0.1:9/v1", 131072
SMALL, LARGE = 65536, 200000
ASKED = 250000  # more than any window: the answer is the window minus the prompt
MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Plan the release"},
            {"role": "assistant", "content": "Step one: tag the build. " * 30}, {"role": "user", "content": "Go on"}]


@pytest.fixture
def active(qwen3_env: Path) -> Iterator[tuple[Activation, BatonRuntime]]:
    with active_runtime(MODEL, BASE_URL, CONFIGURED) as both:
        yield both


def new_agent(registered: BatonContextEngine, model: str, window: int, session_id: str,
              tools: list[dict[str, Any]] | None = None, provider: str = "custom") -> LoopAgent:
    """What Hermes does per agent: deep-copy the registered engine, tell it the model, start the session."""
    engine = copy.deepcopy(registered)
    engine.update_model(model, window, base_url=BASE_URL, provider=provider)
    engine.on_session_start(session_id, platform="cli", model=model)
    return LoopAgent(engine, tools)


def exact(runtime: BatonRuntime, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    counted = runtime.counter().backend.count_chat({"messages": messages, **({"tools": tools} if tools else {})})
    assert counted.exact
    return counted.tokens


def sent_max_tokens(activation: Activation, agent: LoopAgent | None, messages: list[dict[str, Any]] = MESSAGES,
                    model: str = MODEL, provider: str = "custom", **context: Any) -> int | None:
    request = {"model": model, "messages": messages, "max_tokens": ASKED}
    if agent is not None and agent.tools:
        request["tools"] = agent.tools
    call = (lambda: in_agent(agent, activation.llm_request, request=request, model=model, base_url=BASE_URL,
                             provider=provider, **context)) if agent is not None else (
        lambda: activation.llm_request(request=request, model=model, base_url=BASE_URL, provider=provider, **context))
    answer = call()
    return None if answer is None else answer["request"]["max_tokens"]


def test_two_agents_with_different_windows_each_get_their_own_budget(
        project: Path, active: tuple[Activation, BatonRuntime]) -> None:
    activation, runtime = active
    prompt = exact(runtime, MESSAGES)
    registered = BatonContextEngine(project_dir=project)
    small = new_agent(registered, MODEL, SMALL, "session-small")
    large = new_agent(registered, MODEL, LARGE, "session-large")
    BatonContextEngine(project_dir=project)  # a later engine (another agent being built) changes nothing
    assert sent_max_tokens(activation, small) == unconfirmed_cap(SMALL, prompt)
    assert sent_max_tokens(activation, large) == unconfirmed_cap(LARGE, prompt)
    assert small.context_compressor.threshold_tokens < large.context_compressor.threshold_tokens
    # Without the calling frame, the session id finds the agent; it survives Hermes' rotation at compaction.
    small.context_compressor.on_session_start("session-small-2", boundary_reason="compression",
                                              old_session_id="session-small")
    assert sent_max_tokens(activation, None, session_id="session-small-2") == unconfirmed_cap(SMALL, prompt)
    assert sent_max_tokens(activation, None, session_id="no-such-session") is None  # nobody's: left alone


def test_constructing_or_copying_an_engine_has_no_side_effect(project: Path,
                                                              active: tuple[Activation, BatonRuntime]) -> None:
    activation, runtime = active
    prompt = exact(runtime, MESSAGES)
    agent = new_agent(BatonContextEngine(project_dir=project), MODEL, SMALL, "s1")
    assert sent_max_tokens(activation, agent) == unconfirmed_cap(SMALL, prompt)
    for _ in range(3):
        BatonContextEngine(project_dir=project)
    assert runtime.context_length == CONFIGURED
    assert sent_max_tokens(activation, agent) == unconfirmed_cap(SMALL, prompt), "a new engine reset the agent's window"
    clone = copy.deepcopy(agent.context_compressor)  # deepcopy-safe after use: plain data, own ledger
    assert (clone.context_length, clone.threshold_tokens) == (SMALL, agent.context_compressor.threshold_tokens)
    assert clone.requests.ledger is not agent.context_compressor.requests.ledger


def test_route_and_window_follow_the_model(project: Path, active: tuple[Activation, BatonRuntime]) -> None:
    """``/model`` (or a fallback provider) calls update_model: the budget follows; status says which route."""
    activation, runtime = active
    prompt = exact(runtime, MESSAGES)
    agent = new_agent(BatonContextEngine(project_dir=project), MODEL, LARGE, "s")
    assert sent_max_tokens(activation, agent) == unconfirmed_cap(LARGE, prompt)
    engine = agent.context_compressor
    engine.update_model("fallback-model", SMALL, base_url="http://127.0.0.1:10/v1", provider="vllm")
    assert engine.requests.ledger.counted == 0  # another model: its counts, anchor and verdict start over
    # The fallback model is not the configured one: its tokenizer is chosen for it (auto: no OpenAI-family name,
    # so rough + the fallback margin, until its provider's usage anchors it), not Qwen3's.
    cap = sent_max_tokens(activation, agent, model="fallback-model")
    status = engine.get_status()
    assert status["tokenizer"]["counting"] == "rough+margin" and "auto for model 'fallback-model'" in \
        status["tokenizer"]["chosen_by"]
    rough = estimate_chat_request({"messages": MESSAGES})
    assert cap == SMALL - rough - request_margin({"messages": MESSAGES}, rough, runtime.settings.fallback_margin_tokens)
    route = status["route"]
    assert route["model"] == "fallback-model" and route["provider"] == "custom"  # the request's own provider
    assert status["window"]["effective"] == SMALL
    engine.update_model(MODEL, LARGE, base_url=BASE_URL, provider="custom")
    assert sent_max_tokens(activation, agent) == unconfirmed_cap(LARGE, prompt)  # back: Qwen3 counts again


def real_history(tokens: int, runtime: BatonRuntime) -> list[dict[str, Any]]:
    """A coding session's history of about ``tokens`` Qwen3 tokens: this repository's benchmark report (tables of
    figures) and its own source files read one by one as tool results (real numbers, code, identifiers)."""
    repo = Path(__file__).resolve().parents[2]
    report = (repo / "benchmarks" / "results" / "REPORT.md").read_text()
    sources = [report[i:i + 6000] for i in range(0, len(report), 6000)][:3]
    sources += [path.read_text() for path in sorted((repo / "baton_engine").rglob("*.py"))]
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are Hermes, a coding agent."},
                                     {"role": "user", "content": "Read the engine's sources and review them."}]
    for number, text in enumerate(sources):
        if exact(runtime, history) >= tokens:
            break
        call = {"id": f"call_{number}", "type": "function",
                "function": {"name": "read_file", "arguments": f'{{"path": "file_{number}"}}'}}
        history += [{"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"call_{number}", "content": text[:6000]}]
    return history


@pytest.mark.parametrize("size", [18_900, 28_900])
def test_after_a_model_switch_to_an_unknown_tokenizer_the_rough_count_keeps_its_measured_margin(
        project: Path, active: tuple[Activation, BatonRuntime], size: int) -> None:
    """Issue 30: after ``/model`` to a 32,768 window on another server whose tokenizer Baton does not know, the
    route counted rough + a fixed 1,024: a real 18,908-token prompt was counted 14,518 and left with a cap of
    18,250 (37,158 > 32,768). The rough count's margin is now its measured error (``rough.ROUGH_MARGIN_SHARE``
    and a token per digit or non-ASCII character): the prompt the server counts plus the cap fits."""
    activation, runtime = active
    agent = new_agent(BatonContextEngine(project_dir=project), MODEL, LARGE, "s")
    agent.context_compressor.update_model("other-model", 32_768, base_url="http://127.0.0.1:10/v1", provider="custom")
    history = real_history(size, runtime)
    request = {"model": "other-model", "messages": history, "max_tokens": ASKED}
    answer = in_agent(agent, activation.llm_request, request=request, model="other-model",
                      base_url="http://127.0.0.1:10/v1", provider="custom")
    assert answer is not None and agent.context_compressor.get_status()["tokenizer"]["counting"] == "rough+margin"
    sent = answer["request"]
    assert exact(runtime, sent["messages"]) + sent["max_tokens"] <= 32_768


def test_a_move_to_a_route_without_base_url_forgets_the_old_server(
        project: Path, active: tuple[Activation, BatonRuntime]) -> None:
    """Hermes passes ``base_url=""`` for a provider without one (Bedrock): the old server's URL must not
    stay on the route, or auxiliary calls to that server would still be budgeted against this window."""
    engine = new_agent(BatonContextEngine(project_dir=project), MODEL, LARGE, "s").context_compressor
    assert engine.aux_matches_route(MODEL, "http://elsewhere:1/v1") is False
    engine.update_model("bedrock-model", SMALL, base_url="", provider="bedrock", api_mode="bedrock_converse")
    route = engine.get_status()["route"]
    assert route["base_url"] is None and route["model"] == "bedrock-model" and route["provider"] == "bedrock"
    engine.on_session_start("s2", model="bedrock-model")  # a call that does not name a base URL keeps it
    assert engine.route.base_url is None and engine.aux_matches_route("bedrock-model", None)
    engine.update_model(MODEL, LARGE, base_url=BASE_URL + "/", provider="custom")
    assert engine.route.base_url == BASE_URL
    engine.on_session_start("s3", model=MODEL)
    assert engine.route.base_url == BASE_URL


def test_eight_concurrent_agents_never_see_each_others_state(project: Path,
                                                             active: tuple[Activation, BatonRuntime]) -> None:
    """Threads, one agent each: different tools, windows and conversations; every budget is its own."""
    activation, runtime = active
    registered = BatonContextEngine(project_dir=project)
    agents, expected = [], []
    for i in range(8):
        tools = [{"type": "function", "function": {"name": f"tool_{i}_{j}", "description": "d" * (40 * i),
                                                   "parameters": {"type": "object", "properties": {}}}}
                 for j in range(i + 1)]
        messages = [*MESSAGES, {"role": "assistant", "content": f"agent {i} " * (50 * (i + 1))},
                    {"role": "user", "content": "next"}]
        window = 64_000 + 9_000 * i
        agents.append((new_agent(registered, MODEL, window, f"session-{i}", tools), messages))
        expected.append(unconfirmed_cap(window, exact(runtime, messages, tools)))
    assert len(set(expected)) == 8
    results: dict[int, list[int | None]] = {i: [] for i in range(8)}
    barrier = threading.Barrier(8)

    def run(i: int) -> None:
        agent, messages = agents[i]
        barrier.wait()
        for _ in range(5):
            results[i].append(sent_max_tokens(activation, agent, messages))

    run_in_threads(run, 8, timeout=120)
    assert {i: set(values) for i, values in results.items()} == {i: {expected[i]} for i in range(8)}
    frames = [agent.context_compressor.requests.ledger.frame for agent, _ in agents]
    assert [len(frame.tools) for frame in frames] == list(range(1, 9))


def test_a_refusal_states_the_window_and_the_next_request_fits(project: Path, active: tuple[Activation, BatonRuntime],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """config.yaml says LARGE, the server serves SMALL: its refusal's window becomes this route's, and a later
    update_model with Hermes' own (larger or no) number does not undo it; another route starts over. The terminal
    is told once (not only errors.log), and status lists the line."""
    from baton_engine.refusal import parse_refusal

    activation, runtime = active
    prompt = exact(runtime, MESSAGES)
    agent = new_agent(BatonContextEngine(project_dir=project), MODEL, LARGE, "s")
    engine = agent.context_compressor
    assert sent_max_tokens(activation, agent) == unconfirmed_cap(LARGE, prompt)
    refusal = parse_refusal(f"This model's maximum context length is {SMALL} tokens. However, you requested "
                            f"{LARGE} tokens ({prompt} in the messages, {LARGE - prompt} in the completion). "
                            "Please reduce the length of the messages or completion.")
    assert refusal is not None and refusal.window == SMALL
    engine.observe_refusal(refusal)
    engine.update_model(MODEL, LARGE, base_url=BASE_URL, provider="custom")  # Hermes' own retry path
    assert sent_max_tokens(activation, agent) == SMALL - prompt  # the refusal also confirmed the count
    status = engine.get_status()
    assert status["window"]["effective"] == SMALL and status["window"]["source"] == "provider refusal"
    assert status["verification"]["refusals"] == 1 and status["verification"]["verdict"] == "confirmed"
    assert engine.threshold_tokens <= SMALL
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("baton: Hermes' context_length")]
    assert said == [f"baton: Hermes' context_length {LARGE:,} is larger than the window the server has ({SMALL:,}, "
                    f"provider refusal); Baton budgets against {SMALL:,}. Set model.context_length: {SMALL} in "
                    "config.yaml (`baton doctor` compares them)"]
    assert status["notices"] == [said[0].removeprefix("baton: ")]
    engine.update_model("other-model", LARGE, base_url="http://127.0.0.1:11/v1", provider="custom")
    assert engine.get_status()["window"]["effective"] == LARGE  # another server: what it refused says nothing


def test_a_provider_that_counts_more_calibrates_the_route_and_status_says_so(
        project: Path, active: tuple[Activation, BatonRuntime], capsys: pytest.CaptureFixture[str]) -> None:
    """The response reports 30% more than Baton counted for the request it answers: the route is calibrated,
    status says so in ``tokenizer.counting`` and ``verification``, and the next cap is on the provider's scale."""
    activation, runtime = active
    prompt = exact(runtime, MESSAGES)
    agent = new_agent(BatonContextEngine(project_dir=project), MODEL, LARGE, "s")
    engine = agent.context_compressor
    first = sent_max_tokens(activation, agent)
    engine.update_from_response({"prompt_tokens": int(prompt * 1.3), "completion_tokens": 5, "total_tokens": 0})
    status = engine.get_status()
    assert status["tokenizer"]["counting"] == "calibrated" and status["tokenizer"]["exact"] is False
    assert status["verification"]["verdict"] == "calibrated" and status["verification"]["last_reported"] == int(
        prompt * 1.3)
    assert "undercounts this server by 30%" in status["verification"]["advice"]
    assert sent_max_tokens(activation, agent) < first
    engine.update_from_response({"prompt_tokens": int(prompt * 1.3), "completion_tokens": 5, "total_tokens": 0})
    said = [line for line in capsys.readouterr().err.splitlines() if "calibrated" in line]
    assert len(said) == 1 and said[0].startswith("baton: counts disagree with the provider") and \
        "undercounts this server by 30%" in said[0]  # on the terminal once, not only in errors.log
    assert engine.get_status()["notices"] == [said[0].removeprefix("baton: ")]


@pytest.mark.parametrize(("detail", "per_image"), [("low", 85), (None, 5043)])
def test_after_image_requests_a_text_request_is_budgeted_on_its_text(
        project: Path, active: tuple[Activation, BatonRuntime], detail: str | None, per_image: int) -> None:
    """Issue 30 item 4 through the engine as Hermes calls it: image requests answered with a provider's usage (the
    route's own tokenizer for the text, its own rule for each image: OpenAI's 85 for ``detail: low``, Qwen2.5-VL's
    5,043 for a large screenshot, against Baton's bound of 1,640) never scale the text: the route stays confirmed
    and a text request's cap is within 2% of what the provider counts."""
    from batontest.images import data_url, png

    activation, runtime = active
    agent = new_agent(BatonContextEngine(project_dir=project), MODEL, LARGE, "s")
    engine = agent.context_compressor
    image = {"url": data_url(png(1988, 1988)), **({"detail": detail} if detail else {})}
    history = list(MESSAGES[:-1])
    for turn in range(3):  # the history grows between the image requests, as a session's does
        question = [{"type": "text", "text": f"What do screenshots {turn} show?"}]
        with_images = [*history, {"role": "user", "content": [
            *question, *({"type": "image_url", "image_url": image} for _ in range(4))]}]
        assert sent_max_tokens(activation, agent, with_images) is not None
        text = exact(runtime, [*history, {"role": "user", "content": question}])
        engine.update_from_response({"prompt_tokens": text + 4 * per_image, "completion_tokens": 5,
                                     "total_tokens": 0})
        history += [{"role": "user", "content": question},
                    {"role": "assistant", "content": f"Set {turn}: the build page, worker 7 retried batch 41. " * 20}]
    text_only = [*history, {"role": "user", "content": "Summarise the release plan."}]
    real = exact(runtime, text_only)
    cap = sent_max_tokens(activation, agent, text_only)
    assert cap is not None and abs((LARGE - cap) - real) <= 0.02 * real, (LARGE - cap, real)
    assert engine.get_status()["verification"]["verdict"] == "confirmed"


@pytest.mark.parametrize(("provider", "rule", "figure"), [
    ("custom", "bound", 1049),  # a self-hosted server: the larger of the two rules (Anthropic's here)
    ("anthropic", "anthropic", 1049),  # ceil(1024 * 768 / 750)
    ("openai", "openai", 765),  # 768 x 576 after scaling: 2 x 2 tiles, 85 + 4 * 170
])
def test_status_names_the_media_share_of_the_last_count_as_an_estimate(
        project: Path, active: tuple[Activation, BatonRuntime], provider: str, rule: str, figure: int) -> None:
    """Issue 30 item 4: an image is its own term of a count, an estimate by the published rule of the route's
    provider when it is known (the larger of Anthropic's and OpenAI's otherwise)."""
    from baton_engine.tokens.media import image_tokens
    from batontest.images import data_url, png

    activation, runtime = active
    agent = new_agent(BatonContextEngine(project_dir=project), MODEL, SMALL, "s", provider=provider)
    picture = {"type": "image_url", "image_url": {"url": data_url(png(1024, 768))}}
    with_image = [*MESSAGES[:-1], {"role": "user", "content": [{"type": "text", "text": "What is shown?"}, picture]}]
    assert sent_max_tokens(activation, agent, with_image, provider=provider) is not None
    tokenizer = agent.context_compressor.get_status()["tokenizer"]
    assert tokenizer["media_rule"] == rule
    assert tokenizer["media_tokens_estimated"] == image_tokens(1024, 768, rule) == figure
    assert sent_max_tokens(activation, agent, provider=provider) is not None  # a text-only request: no media term
    assert agent.context_compressor.get_status()["tokenizer"]["media_tokens_estimated"] == 0
