"""The compared engines behind one interface: Baton's engine and Hermes' built-in ``ContextCompressor``.

Why direct driving and not ``AIAgent``: Hermes' agent init refuses ``context_length < 64000``, and the
600-turn runs need a 16K window; an agent run also spends most of its time in the HTTP round trips of
the scripted model. So each arm is the real engine object, driven the way Hermes' loop drives it:
``update_from_response`` with the real prompt count, ``should_compress`` before every request,
``compress`` on the transcript WITHOUT the system prompt, then the host's post-compaction bookkeeping
(``last_prompt_tokens = -1``). Hermes' summary call goes to a loopback stub (``ModelServer``); its
calls and time are measured separately from the compressor's own local time.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from baton_engine.agent.runtime import BatonRuntime
from baton_engine.settings import BatonSettings
from baton_engine.tokens.contract import TokenizerConfig

Message = dict[str, Any]
MODEL = "qwen3-local"
STUB_SUMMARY = ("## Goal\nContinue the ledger work.\n## Progress\nSteps were run; see the recent turns.\n"
                "## Next Steps\nCarry on with the latest request.")  # the loopback stub's answer to Hermes' summary call


@dataclass
class CompressStats:
    """What one arm spent in compress(): wall time, and the auxiliary LLM share of it."""

    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this thread's CPU: robust to other load on a shared machine
    llm_calls: int = 0
    llm_seconds: float = 0.0


def baton_runtime(tokenizer: TokenizerConfig, fresh_tail_tokens: int | None) -> BatonRuntime:
    """One runtime per Baton variant, reused across engines so the tokenizer loads once (as in Hermes)."""
    runtime = BatonRuntime(BatonSettings(tokenizer=tokenizer, fresh_tail_tokens=fresh_tail_tokens))
    runtime.counter()
    return runtime


class BatonArm:
    """``BatonContextEngine`` with its own runtime (settings + shared counter) and Baton project."""

    def __init__(self, label: str, project_dir: Path, runtime: BatonRuntime, context_length: int) -> None:
        from baton_engine.hermes.engine import BatonContextEngine

        self.label = label
        self.project_dir = project_dir
        self.runtime = runtime
        self.activate()
        self.engine = BatonContextEngine(project_dir=project_dir)
        self.engine.update_model("qwen3-local", context_length)
        self.sent_prompt_tokens: int | None = None  # the real size of the last request sent

    def activate(self) -> None:
        """Make this arm's runtime the process runtime (arms take turns in one process)."""
        from baton_engine.agent.runtime import set_runtime

        set_runtime(self.runtime)

    @property
    def threshold_tokens(self) -> int:
        return int(self.engine.threshold_tokens)

    @property
    def trigger_tokens(self) -> int:
        """The size at which this arm compacts now: the lower of the threshold and ``fallback_token_threshold``,
        raised to the floor once a request frame is known (``policy.Limits.trigger``)."""
        return int(self.engine.limits().trigger)

    def set_fallback(self, tokens: int) -> None:
        """``fallback_token_threshold`` for this arm's runtime (the arm runs alone while it is set)."""
        self.runtime.settings = replace(self.runtime.settings, fallback_token_threshold=tokens)

    def capture(self, captures: tuple[dict[str, Any], ...], messages: list[Message]) -> list[dict[str, Any]]:
        """Replay the turn's ``baton_capture`` calls through the engine's own tool (as Hermes would)."""
        return [json.loads(self.engine.handle_tool_call("baton_capture", args, messages=messages))
                for args in captures]

    def observe(self, prompt_tokens: int) -> bool:
        """The last request's response (its usage: the real size of the request SENT, as Hermes reports it),
        then ``should_compress`` with the size of the request about to go out."""
        reported = self.sent_prompt_tokens if self.sent_prompt_tokens is not None else prompt_tokens
        self.engine.update_from_response({"prompt_tokens": reported, "completion_tokens": 64,
                                          "total_tokens": reported + 64})
        return bool(self.engine.should_compress(prompt_tokens))

    def send(self, request: dict[str, Any], prompt_tokens: int | None = None) -> None:
        """The request as Hermes' loop sends each one: its pre-API estimate of the api messages (Baton's patched
        estimator: the count, and the scan ahead of the messages it has not seen), then the middleware (the
        engine learns its frame: system prompt, tool schemas, so a compaction budgets with them).
        ``prompt_tokens``: the request's real size, which the next ``observe`` reports as its usage."""
        self.activate()
        self.engine.count_estimate(request["messages"], tools=request.get("tools"))
        self.engine.prepare_compaction(request["messages"])
        self.engine.on_request(request)
        self.sent_prompt_tokens = prompt_tokens

    def compress(self, messages: list[Message], current_tokens: int) -> tuple[list[Message], CompressStats]:
        self.activate()
        given = copy.deepcopy(messages)  # the host's own copy, outside the engine's time
        started, cpu = time.perf_counter(), time.thread_time()
        result = self.engine.compress(given, current_tokens=current_tokens)
        elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
        self.engine.last_prompt_tokens = -1  # the host's "awaiting real usage" sentinel
        self.engine.last_completion_tokens = 0
        return result, CompressStats(seconds=elapsed, cpu_seconds=cpu)

    def resume_text(self) -> str:
        """What ``baton_resume`` gives the agent back (the latest ready handoff's brief, large budget)."""
        return str(self.engine.handle_tool_call("baton_resume", {"max_tokens": 20000}, messages=[]))


@dataclass
class AuxiliaryMeter:
    """Counts and times Hermes' auxiliary ``call_llm`` (patched where the compressor imported it)."""

    calls: int = 0
    seconds: float = 0.0
    installed: bool = field(default=False, repr=False)

    def install(self) -> None:
        if self.installed:
            return
        from agent import context_compressor

        original = context_compressor.call_llm

        def metered_call_llm(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.calls += 1
                self.seconds += time.perf_counter() - started

        context_compressor.call_llm = metered_call_llm
        self.installed = True


class HermesArm:
    """Hermes 0.19.0's real ``ContextCompressor``, summary call answered by the loopback stub."""

    def __init__(self, base_url: str, model: str, context_length: int, meter: AuxiliaryMeter) -> None:
        from agent.context_compressor import ContextCompressor

        self.label = "hermes-builtin"
        self.meter = meter
        meter.install()
        self.engine = ContextCompressor(model=model, threshold_percent=0.75, base_url=base_url, api_key="sk-test",
                                        config_context_length=context_length, provider="custom", quiet_mode=True)

    @property
    def threshold_tokens(self) -> int:
        return int(self.engine.threshold_tokens)

    @property
    def trigger_tokens(self) -> int:
        return self.threshold_tokens  # the built-in compacts at its threshold only

    def capture(self, captures: tuple[dict[str, Any], ...], messages: list[Message]) -> list[dict[str, Any]]:
        return []  # the built-in compressor has no capture tool: the calls stay plain transcript

    def observe(self, prompt_tokens: int) -> bool:
        self.engine.update_from_response({"prompt_tokens": prompt_tokens, "completion_tokens": 64,
                                          "total_tokens": prompt_tokens + 64})
        return bool(self.engine.should_compress(prompt_tokens))

    def send(self, request: dict[str, Any], prompt_tokens: int | None = None) -> None:
        """Nothing: the built-in compressor has no request middleware."""

    def compress(self, messages: list[Message], current_tokens: int) -> tuple[list[Message], CompressStats]:
        calls, llm_seconds = self.meter.calls, self.meter.seconds
        given = copy.deepcopy(messages)
        started, cpu = time.perf_counter(), time.thread_time()
        result = self.engine.compress(given, current_tokens=current_tokens)
        elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
        self.engine.last_prompt_tokens = -1
        self.engine.last_completion_tokens = 0
        return result, CompressStats(seconds=elapsed, cpu_seconds=cpu, llm_calls=self.meter.calls - calls,
                                     llm_seconds=self.meter.seconds - llm_seconds)
