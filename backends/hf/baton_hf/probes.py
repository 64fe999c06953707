"""Probe inputs the hf backend checks its shortcuts on at start-up (piecewise counting, incremental rendering).

Why these: they exercise what makes templates and tokenizers differ: a system prompt and tools, parallel and
single tool calls with results, reasoning before and after the last user query, multi-part content, text that
starts or ends with spaces and newlines, non-Latin text and emoji, and special-token strings inside user text.
Tool-call ids have 9 characters because Mistral templates reject any other length. A second, plain conversation
(alternating user and assistant text, no tools) covers templates that reject tool messages altogether.
"""

from __future__ import annotations

from typing import Any

TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current local time in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
_CITIES = ("東京", "Paris", "São Paulo", "Zürich", "Reykjavík", "Kraków")
_TURNS = 6
_FIRST_PROBED = 13  # growth is probed from here on: earlier prefixes have too little history to extend


def growing_probe() -> list[dict[str, Any]]:
    """Requests for each probe conversation as it grows: one message at a time, then two at once."""
    requests = []
    for request in full_probes():
        messages = request["messages"]
        sizes = [*range(_FIRST_PROBED, len(messages) - 1), len(messages)]
        requests += [{**request, "messages": messages[:size]} for size in sizes]
    return requests


def full_probes() -> list[dict[str, Any]]:
    """The probe conversations, whole: the tool-using one (with its tool) and the plain one."""
    return [{"messages": tool_messages(), "tools": [TOOL]}, {"messages": plain_messages()}]


def plain_messages() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Answer in one line. Ünïcode is fine."}]
    for turn, city in enumerate(_CITIES * 2):
        messages.append({"role": "user", "content": f"Time in {city}? 🚀 " if turn % 2 else f"\n  {city}  "})
        messages.append({"role": "assistant", "content": f"1{turn % 10}:00 in {city}. ✓"})
    return messages


def tool_messages() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent. Ünïcode is fine."}]
    for turn in range(_TURNS):
        city = _CITIES[turn]
        call_id = f"call{turn:05d}"
        shape = turn % 3
        if shape == 0:
            user: Any = f"Wie spät ist es in {city}? 🚀  "
        elif shape == 1:
            user = [{"type": "text", "text": f"And  in {city}?"}, {"type": "text", "text": "Kurz bitte.\n"}]
        else:
            user = f"\n  {city}, then stop. <|im_start|>[INST]<s> are plain text here"
        messages.append({"role": "user", "content": user})
        messages.append({
            "role": "assistant",
            "content": "",
            "reasoning": f"The user wants the time in {city}; call the tool.",
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": "get_time", "arguments": f'{{"city": "{city}"}}'}}],
        })
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f'{{"time": "1{turn}:00", "city": "{city}"}}'})
        messages.append({"role": "assistant", "content": f"It is 1{turn}:00 in {city}. ✓", "reasoning": "Answer briefly."})
    return messages


# Words right after a special token: a SentencePiece Metaspace prefix makes several of them encode differently
# at the start of a piece ("Paris" -> "Par", "is" after a token, "▁Paris" on its own).
_STARTERS = ("Paris", "São Paulo", "Hello  wörld", "東京 🚀", " spaced", "\n\nnew", "{\"time\": 1}", "x")


def probe_texts(split_tokens: frozenset[str]) -> list[str]:
    """Plain texts around special-token strings: leading spaces, newlines and words right after each token."""
    tokens = sorted(split_tokens, key=lambda t: (len(t), t))[:12]
    joined = "".join(
        f"{token}{_STARTERS[index % len(_STARTERS)]} end{token}{token}" for index, token in enumerate(tokens)
    )
    return [f"  lead {joined}", "\n".join(tokens) + "\n  tail"]
