"""``get_status()["tokenizer"]["exact"]`` reports the last chat count's exactness, not "backend is not rough".

tiktoken counts chat requests by approximating the chat framing (``TokenCount.exact`` False), the real
Qwen3 chat template through hf is exact, and rough is never exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_engine.agent.runtime import BatonRuntime, get_runtime, set_runtime
from baton_engine.hermes.engine import BatonContextEngine
from baton_engine.settings import load_settings

pytestmark = pytest.mark.hermes
MESSAGES = [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Summarise the logs"},
            {"role": "assistant", "content": "The import job failed twice on row 812."},
            {"role": "user", "content": "Fix it"}]


def status_after_one_compaction(project: Path) -> tuple[dict, dict]:
    set_runtime(BatonRuntime(load_settings()))
    engine = BatonContextEngine(project_dir=project)
    engine.on_session_start("exactness")
    before = engine.get_status()["tokenizer"]
    engine.compress(MESSAGES)
    return before, engine.get_status()["tokenizer"]


@pytest.mark.parametrize(("backend", "env", "exact", "source"), [
    ("tiktoken", {"BATON_TOKENIZER_BACKEND": "tiktoken", "BATON_TOKENIZER_MODEL": "gpt-4o"}, False, "tiktoken"),
    ("hf", {"BATON_TOKENIZER_BACKEND": "hf"}, True, "hf:"),
    ("rough", {"BATON_TOKENIZER_BACKEND": "rough"}, False, "rough"),
])
def test_status_exactness_follows_the_last_count(project: Path, monkeypatch: pytest.MonkeyPatch, qwen3_env: Path,
                                                 backend: str, env: dict[str, str], exact: bool, source: str) -> None:
    monkeypatch.delenv("BATON_TOKENIZER_PATH")
    monkeypatch.delenv("BATON_TOKENIZER_BACKEND")
    if backend == "hf":
        monkeypatch.setenv("BATON_TOKENIZER_PATH", str(qwen3_env))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before, after = status_after_one_compaction(project)
    assert before["exact"] is None, "nothing counted yet: exactness unknown, not claimed"
    assert after["source"].startswith(source), after
    assert after["exact"] is exact
    assert get_runtime().count_chat({"messages": MESSAGES}).exact is exact  # the status agrees with the counter's own answer
    assert after["fallbacks"] == 0
