"""Runs the REAL Hermes agent loop in its own process (``python driver.py SPEC OUT``).

Why a subprocess: Hermes reads ``HERMES_HOME`` and discovers plugins into module-level state
at import time, so every scenario needs a fresh interpreter whose environment is set before the
first Hermes import. The spec (JSON) names the endpoint, the model and the user turns; the
output (JSON) carries what the test cannot see from the model server: which context engine the
agent really used, whether Hermes' built-in compressor ever ran, the engine's status and the
final responses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _count_calls(cls: type, names: tuple[str, ...]) -> dict[str, int]:
    """Wrap ``cls``'s methods ``names`` (class level) to count every call of each."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        original = getattr(cls, name)

        def counted(self: Any, *args: Any, __name: str = name, __original: Any = original, **kwargs: Any) -> Any:
            calls[__name] += 1
            return __original(self, *args, **kwargs)

        setattr(cls, name, counted)
    return calls


def _count_builtin_compressor_calls() -> dict[str, int]:
    """The built-in ContextCompressor's entry points, each call counted."""
    from agent import context_compressor

    return _count_calls(context_compressor.ContextCompressor, ("compress", "_generate_summary", "__init__"))


def _count_resolutions() -> dict[str, int]:
    """The runtime's settings and counting resolutions, each counted per session: a request's hooks share one of
    each (``baton_engine.agent.project.Resolved``)."""
    from baton_engine.agent.runtime import BatonRuntime

    return _count_calls(BatonRuntime, ("settings_for", "for_route"))


def configured_max_tokens() -> int | None:
    """``model.max_tokens`` of ``$HERMES_HOME/config.yaml``: the hermes CLI passes it to ``AIAgent`` (0.22 reads
    it nowhere else; 0.19 also read it itself)."""
    import os

    import yaml

    config = yaml.safe_load((Path(os.environ["HERMES_HOME"]) / "config.yaml").read_text(encoding="utf-8")) or {}
    value = (config.get("model") or {}).get("max_tokens")
    return value if isinstance(value, int) else None


def run(spec: dict[str, Any]) -> dict[str, Any]:
    calls = _count_builtin_compressor_calls()
    resolutions = _count_resolutions()
    if spec.get("fail_core"):  # every hook's way into Baton's core raises (batontest.failing_core)
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from batontest.failing_core import fail_core

        fail_core()
    from run_agent import AIAgent

    statuses: list[str] = []  # the status lines Hermes shows the user (the CLI prints them, a gateway sends them)
    extra: dict[str, Any] = {"status_callback": lambda _kind, message, *_: statuses.append(str(message))}
    if spec.get("session_db"):  # what the hermes CLI does: the agent gets $HERMES_HOME/state.db
        from hermes_state import SessionDB

        extra["session_db"] = SessionDB()
    agent = AIAgent(
        base_url=spec["base_url"], api_key="sk-test", provider="custom", model=spec["model"],
        api_mode=spec.get("api_mode"),  # None: Hermes picks it from the provider and URL (chat completions here)
        quiet_mode=True, skip_context_files=True, skip_memory=True,
        enabled_toolsets=spec.get("toolsets", ["todo", "context_engine"]),
        max_iterations=spec.get("max_iterations", 60), tool_delay=0.0, max_tokens=configured_max_tokens(),
        ephemeral_system_prompt=spec.get("system_prompt"), **extra,  # padding to a measured prompt size
    )
    engine = agent.context_compressor
    history: list[dict[str, Any]] | None = None
    turns = []
    # /model between two turns: {"before_turn", "model", "base_url", "provider"} each; the status after each turn
    switches = {switch["before_turn"]: switch for switch in spec.get("switches") or []}
    for number, user_message in enumerate(spec["turns"]):
        if number in switches:
            switch = switches[number]
            agent.switch_model(switch["model"], switch["provider"], api_key="sk-test", base_url=switch["base_url"])
        result = agent.run_conversation(user_message, conversation_history=history)
        history = result.get("messages")
        turns.append({"final_response": result.get("final_response"), "api_calls": result.get("api_calls"),
                      "completed": result.get("completed"), "messages": len(history or []),
                      "status": engine.get_status() if switches and hasattr(engine, "get_status") else None})
    status = engine.get_status() if hasattr(engine, "get_status") else {}
    scraped = _scrape(spec["scrape"]) if spec.get("scrape") else None  # Baton's Prometheus endpoint, still up
    compression_count = engine.compression_count
    # None: Hermes' own compressor, or a core made to fail (its recall cannot be asked)
    binding = getattr(engine, "recall_binding", None) if not spec.get("fail_core") else None
    recall_source = type(binding.source(engine.compaction.session_id)).__name__ if binding is not None else None
    agent.shutdown_memory_provider(history or [])
    return {
        "engine_class": f"{type(engine).__module__}.{type(engine).__qualname__}",
        "engine_name": getattr(engine, "name", None),
        "compression_count": compression_count,
        "recall_source": recall_source,
        "context_length": engine.context_length,
        "threshold_tokens": engine.threshold_tokens,
        "builtin_compressor_calls": calls,
        "resolutions": resolutions,
        "status": status,
        "turns": turns,
        "final_messages": history or [],
        "statuses": statuses,
        "host_asks_compaction_line": _host_asks_compaction_line(),
        "scraped": scraped,
    }


def _scrape(url: str) -> str:
    """The page a Prometheus scrape of ``url`` gets, while this Hermes process runs (once Baton's telemetry worker
    measured every event so far)."""
    import urllib.request

    from baton_engine.metrics import telemetry

    telemetry.flush()

    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.read().decode("utf-8")


def _host_asks_compaction_line() -> bool:
    """Whether this Hermes asks the engine for its compaction status line (0.22+)."""
    from agent import context_engine

    return hasattr(context_engine.ContextEngine, "get_automatic_compaction_status_message")


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    result = run(spec)
    Path(sys.argv[2]).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return 0


def leave(code: int) -> None:
    """Exit past the interpreter's finalization, as Hermes' own one-shot mode does (hermes-agent PR #67905): on
    Hermes 0.22 a NeMo Relay native thread can fault while ``Py_FinalizeEx`` runs (SIGSEGV after the work is done
    and the output written; a core dump showed it, and it failed a driver run of the load series). Everything this
    process owes is written before; Baton registers no ``atexit`` work."""
    import logging
    import os

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    leave(main())
