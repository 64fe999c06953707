"""The counter's request key is computed incrementally over a growing conversation and still names exactly one
request: every key equals the key a fresh process computes for the same request, and any change to an earlier
message (in place or by replacement) changes it."""

from __future__ import annotations

import copy
import hashlib
import marshal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_engine.tokens.prefix_memo import MAX_CHAINS
from baton_engine.tokens.request_key import DIGESTS, request_key

TEXT = st.text(max_size=40)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": TEXT}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": TEXT, "tool_calls": st.lists(
        st.fixed_dictionaries({"id": TEXT, "type": st.just("function"), "function": st.fixed_dictionaries(
            {"name": TEXT, "arguments": TEXT})}), max_size=2)}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": TEXT,
                           "content": st.one_of(TEXT, st.lists(st.fixed_dictionaries(
                               {"type": st.just("text"), "text": TEXT}), max_size=2))}),
)


def cold_key(request: dict) -> str:
    """The definition: sha256 over the frame's marshal, then each message's own sha256."""
    digest = hashlib.sha256(marshal.dumps({k: v for k, v in request.items() if k != "messages"}, 2))
    for message in request["messages"]:
        digest.update(hashlib.sha256(marshal.dumps(message, 2)).digest())
    return "chat:" + digest.hexdigest()


@pytest.fixture(autouse=True)
def fresh_chains():
    DIGESTS.clear()
    yield
    DIGESTS.clear()


@settings(max_examples=150, deadline=None)
@given(st.lists(MESSAGE, min_size=1, max_size=12), st.lists(st.integers(0, 11), max_size=4), st.data())
def test_every_key_equals_the_cold_key_while_the_conversation_grows_and_changes(messages, edits, data):
    DIGESTS.clear()
    history: list[dict] = []
    seen: dict[str, str] = {}
    for message in messages:
        history.append(message)
        request = {"messages": history, "tools": [{"type": "function", "function": {"name": "t"}}]}
        key = request_key(request)
        assert key == cold_key(request)
        seen.setdefault(key, repr(request))
        assert seen[key] == repr(request)  # one key, one request
    for index in edits:
        if index < len(history):  # change an earlier message IN PLACE: the snapshot must see it
            history[index]["content"] = data.draw(TEXT) + "!"
            request = {"messages": history}
            assert request_key(request) == cold_key(request)


def test_an_in_place_edit_of_an_early_message_changes_the_key():
    history = [{"role": "user", "content": f"turn {i}"} for i in range(50)]
    before = request_key({"messages": history})
    history[3]["content"] = "edited"
    after = request_key({"messages": history})
    assert after != before and after == cold_key({"messages": history})
    history[3]["content"] = "turn 3"
    assert request_key({"messages": history}) == before


def test_only_the_new_messages_are_serialised(monkeypatch):
    history = [{"role": "user", "content": f"turn {i}"} for i in range(200)]
    request_key({"messages": history, "tools": []})
    serialised = []
    real = marshal.dumps
    monkeypatch.setattr(marshal, "dumps", lambda value, version: serialised.append(value) or real(value, version))
    grown = [*history, {"role": "assistant", "content": "new"}]
    key = request_key({"messages": grown, "tools": []})
    assert len(serialised) == 2  # the frame and the one new message, not the 200 before it
    serialised.clear()
    assert request_key({"messages": copy.deepcopy(grown), "tools": [{"name": "other"}]}) != key
    assert len(serialised) == 1  # an equal copy under another frame re-uses every message digest
    monkeypatch.undo()
    assert key == cold_key({"messages": grown, "tools": []})


def test_a_changed_frame_or_a_shorter_conversation_starts_over():
    history = [{"role": "user", "content": f"turn {i}"} for i in range(10)]
    first = request_key({"messages": history, "tools": []})
    assert request_key({"messages": history, "tools": [{"name": "x"}]}) != first
    compacted = [{"role": "user", "content": "summary"}, *history[-2:]]
    assert request_key({"messages": compacted, "tools": []}) == cold_key({"messages": compacted, "tools": []})


def test_not_plain_data_has_no_key_and_the_chains_stay_bounded():
    class Text(str):
        pass

    assert request_key({"messages": [{"role": "user", "content": object()}]}) is None
    assert request_key({"messages": [{"role": "user", "content": Text("x")}]}) is None
    assert DIGESTS.remembered() == []
    for n in range(MAX_CHAINS + 3):
        request_key({"messages": [{"role": "system", "content": f"agent {n}"}]})
    assert len(DIGESTS.remembered()) == MAX_CHAINS  # on probation: seen once each


def test_one_off_lists_never_push_a_growing_conversation_out():
    """A compaction counts a dozen candidate tails once each; the conversation that keeps growing stays."""
    history = [{"role": "user", "content": f"turn {i}"} for i in range(300)]
    request_key({"messages": history})
    request_key({"messages": [*history, {"role": "assistant", "content": "a"}]})  # extended: protected
    for start in range(20):
        request_key({"messages": history[start * 10:]})  # one-off suffixes
    grown = [*history, {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]
    before = DIGESTS.computed
    assert request_key({"messages": grown}) == cold_key({"messages": grown})
    assert DIGESTS.computed - before == 1
