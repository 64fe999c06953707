"""``status()["tokenizer"]["exact"]`` reports the last chat count's exactness, not "backend is not rough".

tiktoken counts chat requests by approximating the chat framing (``TokenCount.exact`` False), the real Qwen3 chat
template through hf is exact, and rough is never exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from batontest import assets
from batontest.fake_host import FakeHost
from batontest.hosted_agents import THRESHOLD_PERCENT, installed, start_session

from baton_engine.agent.agent import Agent
from baton_engine.agent.runtime import BatonRuntime, get_runtime
from baton_engine.settings import load_settings

MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Summarise the logs"},
            {"role": "assistant", "content": "The import job failed twice on row 812."},
            {"role": "user", "content": "Fix it"}]


@pytest.mark.parametrize(("backend", "options", "exact", "source"), [
    ("tiktoken", {"model": "gpt-4o"}, False, "tiktoken"),
    ("hf", {}, True, "hf:"),
    ("rough", {}, False, "rough"),
])
def test_status_exactness_follows_the_last_count(project: Path, backend: str, options: dict[str, Any], exact: bool,
                                                 source: str) -> None:
    tokenizer = {"backend": backend, **options}
    if backend == "hf":
        tokenizer["path"] = str(assets.qwen3_dir())
    with installed(BatonRuntime(load_settings({}, {"tokenizer": tokenizer}))):
        agent = Agent(FakeHost(project), project, threshold_percent=THRESHOLD_PERCENT, adapter_version="fake-1")
        start_session(agent, "exactness")
        before = agent.status()["tokenizer"]
        agent.compact(MESSAGES, None, None, False)
        after = agent.status()["tokenizer"]
        assert before["exact"] is None, "nothing counted yet: exactness unknown, not claimed"
        assert after["source"].startswith(source), after
        assert after["exact"] is exact
        assert get_runtime().count_chat({"messages": MESSAGES}).exact is exact  # status agrees with the counter
        assert after["fallbacks"] == 0
