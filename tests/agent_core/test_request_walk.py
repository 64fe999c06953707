"""One plan per request: the walk of a request from the budgeter goes down the rooms and never climbs back.

Why a walk: a request used to go back and forth between rooms (``budget.apply_output`` -> ``request.find_cap`` ->
back up to ``budget.decide`` -> ``request.find_thinking_budget`` -> ``budget.write_cap``; a request too long for the
window climbed back to the budgeter, which read the thinking budget from the raw request again). Now its shape reads
the cap and the thinking budget into the view once, ``budget.decide`` decides on the view's numbers alone (the cap,
whether to shorten, how far), and the shape writes the result. The walk is traced, not read: every call into
``baton_engine`` that takes the request (or the shortened request a shape wrote) as an argument, in order, each
named by its room; a climb is a step to a room higher in the import layers (``pyproject.toml``) than the room
before it.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from batontest.fake_host import FakeHost

from baton_engine.agent.project import Project
from baton_engine.agent.requests import AgentWindow, RequestBudgeter, ScanAhead

ROOT = Path(__file__).resolve().parents[2]


def layer_of_room() -> dict[str, int]:
    """Each room of ``baton_engine`` and its height (0 = the outermost edge), from the import contract."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c.get("containers") == ["baton_engine"])
    return {room.strip(): height for height, layer in enumerate(layers)
            for room in layer.replace("|", ":").split(":")}


HEIGHT = layer_of_room()


def walk(budgeter: RequestBudgeter, request: dict[str, Any], **kwargs: Any) -> tuple[list[str], Any]:
    """The rooms the request visits from ``on_request`` (consecutive visits to one room counted once), and the
    rewritten request."""
    tracked: list[Any] = [request]  # kept alive, so an id is never reused while traced
    rooms: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("baton_engine."):
            return
        room = module.split(".")[1]
        if event == "call":
            code = frame.f_code
            names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            if any(frame.f_locals.get(name) is item for name in names for item in tracked):
                if not rooms or rooms[-1] != room:
                    rooms.append(room)
        elif event == "return" and room == "shapes" and isinstance(arg, dict) and "messages" in arg:
            tracked.append(arg)  # a request a shape wrote (shortened) is the request from then on

    sys.setprofile(profile)
    try:
        rewritten = budgeter.on_request(request, **kwargs)
    finally:
        sys.setprofile(None)
    return rooms, rewritten


def climbs(rooms: list[str]) -> int:
    return sum(1 for before, after in zip(rooms, rooms[1:]) if HEIGHT[after] < HEIGHT[before])


def returns(rooms: list[str]) -> int:
    """Visits to a room the walk had already left."""
    return sum(1 for n, room in enumerate(rooms) if room in rooms[:n])


@pytest.fixture
def budgeter(tmp_path: Path) -> RequestBudgeter:
    host = FakeHost(tmp_path)
    return RequestBudgeter(host, AgentWindow(0.75), Project(host, tmp_path), ScanAhead())


def turns(count: int, words: int) -> list[dict[str, Any]]:
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " + "lorem ipsum " * words}
            for n in range(count)]


def test_a_request_whose_cap_is_lowered_walks_down_once(budgeter: RequestBudgeter) -> None:
    request = {"model": "fake-model", "messages": turns(4, 20), "max_tokens": 10**9}
    rooms, rewritten = walk(budgeter, request, model="fake-model")
    assert rewritten is not None and rewritten["max_tokens"] < 10**9
    assert rooms == ["agent", "shapes"], rooms
    assert climbs(rooms) == 0 and returns(rooms) == 0


def test_a_thinking_request_is_read_once_and_its_budget_written_beside_its_cap(budgeter: RequestBudgeter) -> None:
    budgeter.set_context_length(32_768)
    request = {"model": "fake-model", "system": "You are a test.", "max_tokens": 64_000,
               "thinking": {"type": "enabled", "budget_tokens": 40_000},
               "messages": [{"role": "user", "content": [{"type": "text", "text": "think about it"}]}]}
    rooms, rewritten = walk(budgeter, request, api_mode="anthropic", model="fake-model")
    assert rewritten is not None
    assert rewritten["thinking"]["budget_tokens"] < rewritten["max_tokens"] <= 32_768
    assert climbs(rooms) == 0 and returns(rooms) == 0, rooms


def test_a_request_too_long_for_the_window_is_shortened_without_climbing_back(budgeter: RequestBudgeter) -> None:
    budgeter.set_context_length(8_192)
    request = {"model": "fake-model", "messages": turns(60, 60), "max_tokens": 4_096}
    rooms, rewritten = walk(budgeter, request, model="fake-model")
    assert budgeter.ledger.request_compactions == 1 and budgeter.ledger.sent_requests == 1
    assert rewritten is not None and len(rewritten["messages"]) < len(request["messages"])
    read = budgeter.host.shape_for(None).read
    assert budgeter.count(read(rewritten)).tokens < budgeter.count(read(request)).tokens  # type: ignore[operator]
    assert climbs(rooms) <= 1 and returns(rooms) == 0, rooms
