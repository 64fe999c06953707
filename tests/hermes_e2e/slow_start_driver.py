"""Two REAL Hermes agents in one process, in threads (``python slow_start_driver.py SPEC OUT``): agent S on a route
whose tokenizer takes as long to start as the driver likes, agent F on the configured route.

The slow start is Baton's real backend factory held (``runtime.build_backend`` wrapped) until F's turn is over, or
60 s: if F's counting waited for S's tokenizer (a start under the process lock), F's turn would last the 60 s and
S's start would be done before it. The output: F's turn's seconds, whether S's start was still running when F's
turn ended, both agents' final answers, how often S's tokenizer was built, the engines' counting status.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

HOLD_SECONDS = 60.0


def run(spec: dict[str, Any]) -> dict[str, Any]:
    import baton_engine.agent.runtime as runtime_module
    from baton_engine.agent import startup
    from run_agent import AIAgent

    building, release, built = threading.Event(), threading.Event(), threading.Event()
    builds: list[str | None] = []
    real_build = runtime_module.build_backend

    def held_build(config: Any, registry: Any = None) -> Any:
        builds.append(config.model)
        if config.model != spec["slow_model"]:
            return real_build(config, registry)
        building.set()
        release.wait(HOLD_SECONDS)
        try:
            return real_build(config, registry)
        finally:
            built.set()

    runtime_module.build_backend = held_build

    def agent(model: str) -> Any:
        return AIAgent(base_url=spec["base_url"], api_key="sk-test", provider="custom", model=model, quiet_mode=True,
                       skip_context_files=True, skip_memory=True, enabled_toolsets=["context_engine"],
                       max_iterations=5, tool_delay=0.0)

    fast, slow = agent(spec["model"]), agent(spec["slow_model"])
    if not startup.started(HOLD_SECONDS):  # F's own tokenizer (the configured one) is up: its turn times only counts
        raise RuntimeError("the configured tokenizer did not start")
    results: dict[str, Any] = {}

    def slow_turn() -> None:
        results["S"] = slow.run_conversation("[agent S] Say hello.")

    slow_thread = threading.Thread(target=slow_turn)
    slow_thread.start()
    if not building.wait(HOLD_SECONDS):
        raise RuntimeError("agent S never started its route's tokenizer")
    started = time.monotonic()
    results["F"] = fast.run_conversation("[agent F] Say hello.")
    fast_seconds = time.monotonic() - started
    slow_still_starting = not built.is_set()
    fast_status = fast.context_compressor.get_status()["tokenizer"]
    release.set()
    slow_thread.join(HOLD_SECONDS)
    slow_status = slow.context_compressor.get_status()["tokenizer"]
    out = {
        "fast_seconds": fast_seconds, "slow_still_starting": slow_still_starting,
        "finals": {name: result.get("final_response") for name, result in results.items()},
        "slow_builds": builds.count(spec["slow_model"]),
        "fast_tokenizer": {key: fast_status.get(key) for key in ("source", "counting", "counter")},
        "slow_tokenizer": {key: slow_status.get(key) for key in ("source", "counting", "counter")},
    }
    for name, instance in (("F", fast), ("S", slow)):
        instance.shutdown_memory_provider((results.get(name) or {}).get("messages") or [])
    return out


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    Path(sys.argv[2]).write_text(json.dumps(run(spec), indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    from driver import leave  # this directory is the script's: past finalization, as driver.py leaves

    leave(main())
