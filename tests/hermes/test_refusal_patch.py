"""The refusal patch on Hermes' OWN error path: a real ``AIAgent`` (hermes-agent 0.19.0) sends its request to a
loopback llama.cpp stand-in that refuses it the way llama-server does, and Hermes' ``run_conversation`` hands the
OpenAI SDK's ``BadRequestError`` to the patched ``classify_api_error``, which tells the engine.

The engine here is Hermes' built-in compressor with an ``observe_refusal`` recorder (the patch finds the calling
agent's engine by type); wiring ``BatonContextEngine.observe_refusal`` is the engine's job, not this patch's.
"""

from __future__ import annotations

import importlib

import json
import threading
from typing import Any

import pytest
from batontest.loopback import JsonHandler, LoopbackServer

from baton_engine.hermes.refusal_patch import TARGETS, observing_refusals, refusal_patches
from baton_engine.refusal import PROMPT_TOO_LONG, Refusal

N_CTX, N_PROMPT = 32768, 33012
# llama.cpp's body for ERROR_TYPE_EXCEED_CONTEXT_SIZE (tools/server: format_error_response + the two fields
# server_task_result_error::to_json adds); the message of these builds states no numbers.
LLAMACPP_REFUSAL = {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                              "type": "exceed_context_size_error", "n_prompt_tokens": N_PROMPT, "n_ctx": N_CTX}}


class _Refuser(JsonHandler):
    owner: RefusingServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.owner.lock:
            self.owner.bodies.append(json.loads(body or b"{}"))
        self.send_json(400, LLAMACPP_REFUSAL)

    def do_GET(self) -> None:  # noqa: N802 - model metadata probes: nothing to tell
        self.send_json(404, {"error": {"message": "not found", "type": "not_found_error"}})


class RefusingServer(LoopbackServer):
    """Answers every chat request with llama.cpp's context-size refusal; keeps what it was sent."""

    handler = _Refuser
    thread_name = "refusing-server"

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()


@pytest.fixture
def installed() -> Any:
    from agent.context_compressor import ContextCompressor

    patches = refusal_patches(engine_type=ContextCompressor)
    for patch in patches:
        patch.install()
    yield patches
    for patch in reversed(patches):
        patch.restore()


def test_each_hermes_version_has_one_target_and_this_one_installs_its_own(installed: list[Any]) -> None:
    """0.19.0 classifies in agent.conversation_loop, 0.22 in agent.turn_api_error: exactly the one this Hermes
    has is wrapped; the other is skipped, saying why."""
    assert [(p.module, p.attr) for p in installed] == list(TARGETS)
    ours = [p for p in installed if p.installed]
    assert len(ours) == 1, [(p.module, p.skipped) for p in installed]
    assert importlib.import_module(ours[0].module).classify_api_error is ours[0].wrapper
    other = next(p for p in installed if not p.installed)
    assert other.module in (other.skipped or "")


def test_hermes_error_path_hands_the_engine_the_parsed_refusal(installed: list[Any], hermes_home: Any) -> None:
    from run_agent import AIAgent

    with RefusingServer() as server:
        agent = AIAgent(base_url=f"{server.url}/v1", api_key="sk-test", provider="custom", model="qwen3-local",
                        quiet_mode=True, skip_context_files=True, skip_memory=True, enabled_toolsets=["todo"],
                        max_iterations=2, tool_delay=0.0)
        seen: list[Refusal] = []
        agent.context_compressor.observe_refusal = seen.append  # the engine's side, recorded
        result = agent.run_conversation("Say hello.")

    chats = [b for b in server.bodies if "messages" in b]
    assert chats, "Hermes never reached the refusing server"
    assert result.get("failed") or not result.get("completed")  # every request was refused
    assert seen, "Hermes' error path never called the patched classify_api_error"
    assert seen[0] == Refusal(PROMPT_TOO_LONG, N_CTX, N_PROMPT, None, "llama.cpp")
    assert len(seen) <= len(chats)  # one observation per refused main request at most (aux calls not patched)


def test_the_wrapper_returns_the_original_result_and_survives_a_failing_engine() -> None:
    from agent.error_classifier import FailoverReason, classify_api_error

    class Broken:
        def observe_refusal(self, refusal: Refusal) -> None:
            raise RuntimeError("engine bug")

    class Agent:
        context_compressor = Broken()

    wrapped = observing_refusals(classify_api_error, engine_type=Broken)
    error = RuntimeError("prompt is too long: 215000 tokens > 200000 maximum")
    agent = Agent()  # noqa: F841 - the frame local the patch looks for, as in Hermes' loop
    classified = wrapped(error, provider="anthropic", model="claude")
    assert classified == classify_api_error(error, provider="anthropic", model="claude")
    assert classified.reason == FailoverReason.context_overflow


def test_no_engine_to_tell_is_fine() -> None:
    from agent.error_classifier import classify_api_error

    class NoSuchEngine:
        pass

    wrapped = observing_refusals(classify_api_error, engine_type=NoSuchEngine)
    error = RuntimeError("Rate limit reached for requests")
    assert wrapped(error) == classify_api_error(error)
