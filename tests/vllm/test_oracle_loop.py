"""The REAL Hermes loop judged by a REAL vLLM server: vLLM renders, counts and refuses, never Baton's renderer.

The real ``AIAgent`` (``driver.py`` in a subprocess) reads 14 design files of ~12k Qwen3 tokens each with its own
``read_file`` tool through a 72,000-token window (``max_tokens`` in config.yaml asks for the whole window, so
every request must be clamped), several compactions deep. The model server is ``VllmOracle``: every request
Hermes sends is also sent to a real vLLM 0.32 CPU server (tiny random-weight Qwen3, the real Qwen3 tokenizer),
whose ``usage.prompt_tokens`` is what Hermes is told and whose refusals are the answer; the strict rule
(prompt + cap above the window is refused, as vLLM 0.20, OpenAI and SGLang do) is on. Baton's own count of
each main request comes from its ``baton output budget`` log line in Hermes' ``agent.log``.

Scenarios (one session each, one vLLM server for the module):
- healthy, Baton counting with the vllm backend against the same server's /tokenize;
- healthy, the hf backend on the bundled Qwen3 tokenizer;
- wrong tokenizer: tiktoken o200k for this Qwen3 model (counts must be calibrated on vLLM's usage);
- wrong window: config.yaml says 100,000, the server serves 72,000, the hf backend has no max_model_len to
  read (at most one refusal, the one that reveals the window).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from batontest.assets import qwen3_dir, tiktoken_encoding_file
from batontest.hermes_run import MODEL, require_hermes
from batontest.model_server import ScriptedPolicy
from batontest.reading import FINAL_ANSWER, TURNS, files_never_seen, reading_script, request_map, run_reading
from batontest.real_vllm import real_vllm_server
from batontest.vllm_oracle import EOS_FIRST, VllmOracle, baton_budget_lines

pytestmark = pytest.mark.vllm_real

WINDOW = 72_000  # the server's max_model_len; Hermes needs >= 64,000
WRONG_WINDOW = 100_000
FILES = 14  # ~172k tokens of file content through a 72k window: several compactions
SESSION_TIMEOUT_SECONDS = 900


@dataclass
class OracleSession:
    """One finished reading session judged by vLLM: the driver's output, the oracle, Baton's logged counts."""

    label: str
    result: dict[str, Any]
    server: VllmOracle
    baton_main: list[tuple[str, int | None, str]]  # (action, prompt tokens, source) per main request, in order
    wall_seconds: float

    @property
    def status(self) -> dict[str, Any]:
        return self.result["status"]

    def count_pairs(self) -> list[tuple[int, int | None, int | None]]:
        """(request index, Baton's count, vLLM's prompt_tokens) per main request; vLLM's is None when it refused."""
        main = self.server.main_requests
        assert len(self.baton_main) == len(main), (
            f"[{self.label}] {len(self.baton_main)} 'baton output budget' main lines for {len(main)} main requests")
        return [(r.index, baton[1], r.prompt_tokens) for r, baton in zip(main, self.baton_main, strict=True)]

    def figures(self) -> str:
        diffs = [b - v for _, b, v in self.count_pairs() if b is not None and v is not None]
        server = self.server
        read = FILES - len(files_never_seen(server.main_requests, FILES))
        return (f"[{self.label}] main={len(server.main_requests)} aux={len(server.auxiliary_requests)} "
                f"compactions={self.result['compression_count']} files_read={read}/{FILES} "
                f"refusals vllm={len(server.vllm_refusals)} strict={len(server.strict_refusals)} "
                f"protocol={len(server.protocol_refusals)} baton-vllm diff min={min(diffs, default=None)} "
                f"max={max(diffs, default=None)} counting={self.status['tokenizer']['counting']} "
                f"window={self.status['window']} wall={self.wall_seconds:.1f}s\n"
                f"  turns (api_calls, completed, final response): "
                f"{[(t['api_calls'], t['completed'], (t['final_response'] or '')[:100]) for t in self.result['turns']]}\n"
                f"  (request, Baton, vLLM): {self.count_pairs()}\n"
                + "".join(f"  refused #{index} by {self.server.judged_by[id(r)]} ({status}): {text}\n"
                          for r, (index, status, text) in zip(server.rejections, refusal_lines(self), strict=True)))


@pytest.fixture(scope="module")
def vllm_url(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One real vLLM server for the whole module, served under Hermes' model name; stopped at module end.

    ``BATON_VLLM_ORACLE_URL`` points at an already running one instead (same flags: served as ``MODEL``,
    ``--max-model-len 72000``, ``batontest.real_vllm.AGENT_FLAGS``)."""
    require_hermes()  # before the ~60 s start-up
    running = os.environ.get("BATON_VLLM_ORACLE_URL")
    if running:
        yield running.rstrip("/")
        return
    with real_vllm_server(tmp_path_factory.mktemp("oracle-vllm"), max_model_len=WINDOW, served_model_name=MODEL,
                          agent_flags=True) as url:
        yield url


def oracle_session(label: str, workdir: Path, vllm_url: str, *, tokenizer: dict[str, Any],
                   context_length: int = WINDOW) -> OracleSession:
    project = workdir / "project"
    with VllmOracle(reading_script(project, FILES), vllm_url=vllm_url, strict=True) as server:
        assert server.context_window == WINDOW
        result, home, wall = run_reading(workdir, server, files=FILES, context_length=context_length,
                                         max_tokens=context_length, timeout=SESSION_TIMEOUT_SECONDS,
                                         baton={"tokenizer": tokenizer, "auto_checkpoint_on_end": False})
    main = [(action, prompt, source) for action, prompt, source, aux in baton_budget_lines(home) if not aux]
    session = OracleSession(label, result, server, main, wall)
    print("\n" + session.figures(), file=sys.stderr)
    return session


@pytest.fixture(scope="module")
def healthy_vllm(tmp_path_factory: pytest.TempPathFactory, vllm_url: str) -> OracleSession:
    return oracle_session("healthy-vllm", tmp_path_factory.mktemp("healthy-vllm"), vllm_url,
                          tokenizer={"backend": "vllm", "url": vllm_url, "model": MODEL})


@pytest.fixture(scope="module")
def healthy_hf(tmp_path_factory: pytest.TempPathFactory, vllm_url: str) -> OracleSession:
    return oracle_session("healthy-hf", tmp_path_factory.mktemp("healthy-hf"), vllm_url,
                          tokenizer={"backend": "hf", "path": str(qwen3_dir())})


@pytest.fixture(scope="module")
def wrong_tokenizer(tmp_path_factory: pytest.TempPathFactory, vllm_url: str) -> OracleSession:
    return oracle_session("wrong-tokenizer", tmp_path_factory.mktemp("wrong-tokenizer"), vllm_url,
                          tokenizer={"backend": "tiktoken", "model": "o200k_base",
                                     "path": str(tiktoken_encoding_file("o200k_base"))})


@pytest.fixture(scope="module")
def wrong_window(tmp_path_factory: pytest.TempPathFactory, vllm_url: str) -> OracleSession:
    return oracle_session("wrong-window", tmp_path_factory.mktemp("wrong-window"), vllm_url,
                          tokenizer={"backend": "hf", "path": str(qwen3_dir())}, context_length=WRONG_WINDOW)


def assert_session_completed(session: OracleSession) -> None:
    """Every design file reached the model, both turns ended with the final answer, Baton was the engine."""
    missing = files_never_seen(session.server.main_requests, FILES)
    assert not missing, (f"[{session.label}] design files whose read_file result never reached the model: "
                         f"{missing}\n{request_map(session.server.main_requests, FILES)}")
    turns = session.result["turns"]
    assert [t["final_response"] for t in turns] == [FINAL_ANSWER] * len(TURNS), turns
    assert session.result["engine_class"] == "baton_engine.hermes.engine.BatonContextEngine"


def refusal_lines(session: OracleSession) -> list[tuple[int, int, str | None]]:
    """(request index, status, first 160 characters of the refusal) per refused request."""
    return [(r.index, r.status, (r.rejection or "")[:160]) for r in session.server.rejections]


# ---- (a) healthy: Baton's exact count is vLLM's count, request by request ---------------------------


@pytest.mark.parametrize("run", ["healthy_vllm", "healthy_hf"])
def test_healthy_session_is_never_refused_and_counts_equal_vllm(run: str, request: pytest.FixtureRequest) -> None:
    """14/14 files read over >= 2 compactions, no refusal by vLLM or by the strict rule, and every main
    request's count by Baton (vllm backend: the same server's /tokenize; hf: the bundled tokenizer and
    baton_hf's renderer) equals the prompt_tokens vLLM's chat completions reports for it."""
    session: OracleSession = request.getfixturevalue(run)
    assert not session.server.rejections, refusal_lines(session)
    assert_session_completed(session)
    assert session.result["compression_count"] >= 2, session.status.get("last_decision")
    tokenizer = session.status["tokenizer"]
    assert tokenizer["exact"] is True and tokenizer["fallbacks"] == 0, tokenizer
    pairs = session.count_pairs()
    differing = [(index, baton, vllm) for index, baton, vllm in pairs if baton != vllm]
    assert not differing, f"[{session.label}] (request, Baton, vLLM) where the counts differ: {differing}"


# ---- (b) wrong tokenizer: counts calibrated on vLLM's usage ------------------------------------------


def test_wrong_tokenizer_is_calibrated_and_never_refused(wrong_tokenizer: OracleSession) -> None:
    """tiktoken o200k counts a Qwen3 prompt wrong; the provider's usage must put Baton's counts on vLLM's
    scale: 14/14 files read, no refusal (the strict rule on), and status says counting is ``calibrated``."""
    session = wrong_tokenizer
    assert not session.server.rejections, refusal_lines(session)
    assert_session_completed(session)
    assert session.status["tokenizer"]["counting"] == "calibrated", session.status["tokenizer"]


# ---- (c) wrong window: learned from the one refusal that can reveal it --------------------------------


def test_wrong_window_is_learned_from_one_refusal(wrong_window: OracleSession) -> None:
    """config.yaml says 100,000 but the server serves 72,000 and the hf backend cannot know: at most one
    refusal (only a refusal reveals the window), 14/14 files read, and status says the effective window is
    the server's, learned from the refusal (neither Hermes' context_length nor a max_model_len Baton read)."""
    session = wrong_window
    assert len(session.server.rejections) <= 1, refusal_lines(session)
    assert_session_completed(session)
    window = session.status["window"]
    assert window["effective"] == WINDOW, window
    assert window["source"] not in ("hermes context_length", "server max_model_len"), window


# ---- the oracle itself: vLLM's answers, passed through ----------------------------------------------


def test_oracle_reports_vllms_count_and_passes_its_refusals_through(vllm_url: str) -> None:
    """The oracle's usage is vLLM's own, a vLLM refusal reaches the client verbatim, and the strict rule
    refuses prompt + cap above the window (which vLLM 0.32 itself accepts) with vLLM 0.20's wording."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there!"}]
    direct = httpx.post(f"{vllm_url}/v1/chat/completions", timeout=60, json={
        "model": MODEL, "messages": messages, "logit_bias": EOS_FIRST, "temperature": 0})
    prompt = direct.json()["usage"]["prompt_tokens"]
    over_max_model_len = {"model": MODEL, "messages": messages, "max_tokens": WINDOW + 1}
    refused_directly = httpx.post(f"{vllm_url}/v1/chat/completions", json=over_max_model_len, timeout=60)
    with VllmOracle(ScriptedPolicy([]), vllm_url=vllm_url, strict=True) as server, httpx.Client(timeout=60) as client:
        url = f"{server.base_url}/chat/completions"
        fits = client.post(url, json={"model": MODEL, "messages": messages, "max_tokens": WINDOW - prompt})
        over_window = client.post(url, json={"model": MODEL, "messages": messages, "max_tokens": WINDOW - prompt + 1})
        refused = client.post(url, json=over_max_model_len)
    assert direct.status_code == 200 and fits.status_code == 200
    assert fits.json()["usage"]["prompt_tokens"] == prompt
    assert (refused.status_code, refused.json()) == (refused_directly.status_code, refused_directly.json())
    assert refused.status_code == 400 and "max_model_len" in refused.json()["error"]["message"]
    assert over_window.status_code == 400
    assert over_window.json()["error"]["message"] == (
        f"This model's maximum context length is {WINDOW} tokens. However, you requested {WINDOW - prompt + 1} "
        f"output tokens and your prompt contains at least {prompt} input tokens, for a total of at least "
        f"{WINDOW + 1} tokens. Please reduce the length of the input prompt or the number of requested output tokens.")
    assert [server.judged_by.get(id(r)) for r in server.requests] == [None, "strict", "vllm"]
