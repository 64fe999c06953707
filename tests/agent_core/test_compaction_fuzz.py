"""One agent's compaction (``Agent.compact``) under fuzzing, through a fake host: never raises; the result is always
a valid, pair-safe list that keeps the latest real user request; and the agent's status says why when it could not
make a handoff.

Transcripts come from the compaction suite's strategies (clean and corrupted: orphan results, missing
results, garbage items, earlier Baton blocks, huge tool outputs; hostile: duplicate ids, None / empty / giant /
multi-part / unicode contents). ``benchmarks/compaction/soak.py`` runs the same checks on 10,000 of them. Each
condition runs against a real git project and a real tokenizer: healthy, project not initialised, store read-only,
tokenizer down.

Why here: the cycle and its degradations are the core's. A raise out of ``compact`` would reach the host's guard
(Hermes: ``compact_degraded``, an ``internal_error``); on these inputs, all expected (bad transcripts, a missing
project, a read-only disk, a tokenizer down), it must degrade instead, so a raise fails the test here. What Hermes'
guard makes of a raised bug is ``tests/hermes/test_compress.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batontest.engine_kit import TIKTOKEN_ENV, installed_host_runtime, make_agent, read_only_tree
from batontest.faulty_servers import refused_url
from batontest.hermes_home import git_project
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton_engine.agent.agent import Agent
from compaction.conversations import assert_good_result, conversations, hostile_conversations, run_compact

DEGRADE_REASONS = {"validation_failed", "not_initialised", "disk_not_writable", "tokenizer_down", "internal_error"}


def fuzz(examples: int) -> Any:
    return settings(max_examples=examples, deadline=None, suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])


transcripts = st.one_of(conversations(), conversations(clean=True), hostile_conversations())
hostile_inputs = st.one_of(
    transcripts,
    st.just([]),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=5), st.dictionaries(st.text(max_size=3),
                                                                                     st.text(max_size=3))),
             max_size=4),
)
focus = st.one_of(st.none(), st.just(""), st.text(max_size=30))


def files_under(directory: Path) -> dict[str, bytes]:
    """Every file's bytes, outside ``.git`` (git's own bookkeeping is not ours to judge)."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(directory).parts}


def compacted(project: Path, messages: Any, focus_topic: str | None) -> tuple[Agent, dict[str, Any]]:
    """A new agent's compaction of ``messages``: it must not raise nor mutate them and must answer a good list;
    returns the agent and its status (which must not raise either)."""
    agent = make_agent(project)
    assert_good_result(messages, run_compact(agent, messages, focus_topic))
    return agent, agent.status()


@pytest.fixture
def bare_project(tmp_path: Path) -> Path:
    """A git repository where ``baton init`` was never run."""
    return git_project(tmp_path / "bare", {"README.md": "# demo\n"})


@pytest.fixture
def tiktoken_runtime() -> Iterator[Any]:
    with installed_host_runtime(TIKTOKEN_ENV) as runtime:
        yield runtime


@fuzz(150)
@given(messages=transcripts, focus_topic=focus)
def test_initialised_project_always_valid_and_each_handoff_counted(
    project: Path, tiktoken_runtime: Any, messages: list[Any], focus_topic: str | None
) -> None:
    agent, status = compacted(project, messages, focus_topic)
    reason = status["degradation"]["reason"]
    if reason is None:
        assert agent.compression_count == 1 and status["latest_handoff"] is not None
        assert (project / status["latest_handoff_path"]).is_file()
    else:
        assert reason in DEGRADE_REASONS and status["degradation"]["detail"]
        assert reason != "internal_error", status["degradation"]


@fuzz(800)
@given(messages=hostile_inputs, focus_topic=focus)
def test_uninitialised_project_degrades_and_writes_nothing(
    bare_project: Path, tiktoken_runtime: Any, messages: Any, focus_topic: str | None
) -> None:
    before = files_under(bare_project)
    agent, status = compacted(bare_project, messages, focus_topic)
    assert status["degradation"]["reason"] == "not_initialised"
    assert "baton init" in status["degradation"]["detail"]
    assert agent.compression_count == 0
    assert files_under(bare_project) == before
    assert not (bare_project / ".baton").exists()


@pytest.fixture
def read_only_store(project: Path) -> Iterator[Path]:
    try:
        with read_only_tree(project / ".baton"):
            yield project
    except RuntimeError as exc:
        pytest.skip(str(exc))


@fuzz(100)
@given(messages=transcripts, focus_topic=focus)
def test_read_only_store_degrades_and_changes_nothing(
    read_only_store: Path, tiktoken_runtime: Any, messages: list[Any], focus_topic: str | None
) -> None:
    before = files_under(read_only_store / ".baton")
    agent, status = compacted(read_only_store, messages, focus_topic)
    assert status["degradation"]["reason"] in {"disk_not_writable", "validation_failed"}, status["degradation"]
    assert agent.compression_count == 0 and status["latest_handoff"] is None
    assert files_under(read_only_store / ".baton") == before


@pytest.fixture
def tokenizer_down() -> Iterator[Any]:
    env = {"BATON_TOKENIZER_BACKEND": "vllm", "BATON_TOKENIZER_URL": refused_url(),
           "BATON_TOKENIZER_TIMEOUT_SECONDS": "0.5"}
    with installed_host_runtime(env) as runtime:
        yield runtime


@fuzz(100)
@given(messages=transcripts, focus_topic=focus)
def test_tokenizer_down_still_compacts_and_says_why(
    project: Path, tokenizer_down: Any, messages: list[Any], focus_topic: str | None
) -> None:
    agent, status = compacted(project, messages, focus_topic)
    assert status["tokenizer"]["fallbacks"] > 0
    assert "ConnectError" in (status["tokenizer"]["last_fallback_reason"] or "") or \
        "CannotCount" in (status["tokenizer"]["last_fallback_reason"] or "")
    assert status["degradation"]["reason"] in {"tokenizer_down", "validation_failed"}, status["degradation"]
    if status["degradation"]["reason"] == "tokenizer_down":
        assert agent.compression_count == 1, "the handoff is still made with rough budgets"


def test_an_emoji_transcript_on_tiktoken_still_gets_a_handoff(project: Path, tiktoken_runtime: Any) -> None:
    """Found by the soak: the request's exact/rough ratio (~12 for emoji) must not be used to count the brief."""
    assert tiktoken_runtime.counter().source.startswith("tiktoken")  # the ratio the soak found is tiktoken's
    giant = "🧪" * 300_000
    messages = [{"role": "user", "content": giant}, {"role": "assistant", "content": giant},
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": giant + " and then?"}]
    agent = make_agent(project)
    result = run_compact(agent, messages, None)
    assert_good_result(messages, result)
    assert agent.status()["degradation"]["reason"] is None and agent.compression_count == 1
