"""Every backend's count is bounded in time: a chat template that loops degrades within the deadline, and its
runaway render is stopped (it would otherwise keep a core and the GIL busy for hours)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from baton_engine.tokens.breaker import LOCAL_COUNT_DEADLINE_SECONDS, count_deadline
from baton_engine.tokens.counter import TokenCounter, counting_mode
from baton_engine.tokens.deadline import CountTimedOut, run_within
from batontest.assets import LOOP_TRIGGER, hf_backend, looping_template_dir

DEADLINE = 1.0
SLACK = 2.0  # a loaded 2-core machine: thread start and the stop's delivery


def _request(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": "You are Hermes Agent."}, {"role": "user", "content": text}]}


def _count_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "baton-count"]


@pytest.fixture(scope="module")
def looping(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return hf_backend(looping_template_dir(tmp_path_factory.mktemp("looping-template")))


def test_a_looping_chat_template_degrades_within_the_deadline_and_the_render_is_stopped(looping: Any) -> None:
    counter = TokenCounter(looping, fallback_margin_tokens=1024, deadline_seconds=DEADLINE)
    assert counter.count_chat(_request("Fix the failing test.")).exact  # the template renders when not looping

    started = time.monotonic()
    counted = counter.count_chat(_request(f"Fix the failing test. {LOOP_TRIGGER}"))
    took = time.monotonic() - started

    assert took < DEADLINE + SLACK
    assert counting_mode(counted) == "rough+margin" and counted.margin_tokens == 1024
    assert "CountTimedOut" in (counted.fallback_reason or "")
    deadline = time.monotonic() + 10
    while _count_threads() and time.monotonic() < deadline:  # the runaway render is stopped, not left spinning
        time.sleep(0.05)
    assert _count_threads() == []
    started = time.monotonic()
    again = counter.count_chat(_request(f"Another {LOOP_TRIGGER}"))  # the breaker is open: no second wait
    assert time.monotonic() - started < 0.5 and "CircuitOpen" in (again.fallback_reason or "")
    assert counter.breaker_state().last_error_type == "CountTimedOut"


def test_a_stopped_count_leaves_the_backend_counting_exactly(looping: Any) -> None:
    """The stop lands anywhere inside the backend: its memos are dropped, so later counts stay exact and right."""
    request = _request("Read README.md and run the tests, then report.")
    before = looping.count_chat(request).tokens
    looping.clear_cache()
    counter = TokenCounter(looping, fallback_margin_tokens=1024, deadline_seconds=DEADLINE)
    assert not counter.count_chat(_request(f"Loop {LOOP_TRIGGER}")).exact
    healthy = TokenCounter(looping, fallback_margin_tokens=1024, deadline_seconds=DEADLINE)
    after = healthy.count_chat(request)
    assert after.exact and after.tokens == before


def test_a_server_keeps_its_own_timeout_first_and_the_breaker_backs_it_up() -> None:
    assert count_deadline(remote=True, timeout_seconds=0.5) == 1.0
    assert count_deadline(remote=False, timeout_seconds=0.5) == LOCAL_COUNT_DEADLINE_SECONDS


def test_run_within_hands_back_the_answer_or_the_error_of_a_call_in_time() -> None:
    assert run_within(lambda: 7, 5.0, stop=True) == 7
    with pytest.raises(KeyError):
        run_within(lambda: {}["missing"], 5.0, stop=True)
    released = threading.Event()
    with pytest.raises(CountTimedOut, match="within 0.2 s"):
        run_within(lambda: released.wait(30), 0.2, stop=False)  # blocked in native code: left to finish
    released.set()
