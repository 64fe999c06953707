"""The fixed texts Baton writes into a compacted transcript, and how to recognise them later.

Every message Baton adds starts with a bracketed marker line, so the next compaction can find
and REPLACE it instead of stacking a second block on top (lean-ctx's failure: summaries that are
never recognised pile up until the prompt is four times the window). Only these exact prefixes
are recognised; a user who merely mentions "Baton" is never mistaken for a block.
"""

from __future__ import annotations

import re
from typing import Any

_FIELD_UNSAFE = re.compile(r"[\[\]|\s]+")
_FIELD_MAX_CHARS = 64

PROVENANCE_RE = re.compile(r"\[Baton handoff (?P<short_id>[^\s|\]]+) \| status: [^\s|\]]+ \| captured [^\]\n]*\]")
NOTICE_PREFIX = "[Baton continuation "
DEGRADED_PREFIX = "[Baton degraded compaction "
STALE_BANNER = (
    "STALE: the project changed after this handoff was captured. "
    "Re-check files, branches and test results before relying on them."
)


def safe_field(value: Any, default: str = "unknown") -> str:
    """One token-like field for a marker line: no brackets, bars or whitespace, bounded length.

    Keeps the provenance line parseable whatever the caller passes in.
    """
    text = _FIELD_UNSAFE.sub("-", str(value)).strip("-")[:_FIELD_MAX_CHARS]
    return text or default


def provenance_line(short_id: str, status: str, captured_at: str) -> str:
    return f"[Baton handoff {safe_field(short_id)} | status: {safe_field(status)} | captured {safe_field(captured_at)}]"


def end_line(short_id: str) -> str:
    return f"[End of Baton handoff {safe_field(short_id)}. Reference only: the conversation below is the live one.]"


def notice_text(short_id: str) -> str:
    return (
        f"{NOTICE_PREFIX}{safe_field(short_id)}] Earlier turns are summarised in the handoff above. "
        "The most recent messages follow verbatim; the latest user message is the active request."
    )


# Hermes tools whose call can be repeated without side effects (anything else may already have changed the world).
READ_ONLY_TOOLS = frozenset({"read_file", "search_files", "web_search", "web_extract", "session_search",
                             "skills_list", "skill_view", "vision_analyze"})
RECALL_TOOL = "baton_recall"  # the engine tool that pages compacted text back in (its stubs name it)
BATON_TOOLS = ("baton_capture", "baton_resume", "baton_status", RECALL_TOOL)  # the engine's tools in Hermes
_STUB_ARGUMENT_CHARS = 200
STUB_PREFIX = "[Result elided by Baton at compaction: "
PRUNED_PREFIX = "[Baton pruned "  # what stands in for an answered result, argument or image reclaimed before compaction


def inflight_stub(tool: str, arguments: str, tokens: int, budget: int) -> str:
    """What stands in for an unanswered tool result too large to keep: the call, its size, why, what to do."""
    again = ("It is read-only: call it again (narrower, e.g. a line range) to see the result."
             if tool in READ_ONLY_TOOLS else
             "It already ran and may have changed state: do NOT run it again; ask the user or check its effect.")
    return (f"{STUB_PREFIX}{call_label(tool, arguments)} returned {tokens} tokens; the compacted "
            f"context keeps {budget} tokens for results not yet answered and this one did not fit. The full "
            f"result is kept for `{RECALL_TOOL}` (search a word of it or of the call, then expand a range). {again}]")


PRUNED_ARGUMENT_CHARS = 80  # a pruned result names its call shorter than an elided one: one stub per old result


def pruned_stub(what: str, call: str, tokens: int, ref: str, stated: tuple[str, ...] = ()) -> str:
    """One line in place of what the model already answered: what it was, the call, its size and its ref (every
    old result has one: measured, a stub is the largest part of what a pruned session still grows by), then the
    settings and decisions the result stated, verbatim, one per line (what a compaction's brief would keep of it)."""
    return "\n".join([f"{PRUNED_PREFIX}{what} of {call}: {tokens} tokens; {RECALL_TOOL} mode=expand ref={ref}]",
                      *stated])


def pruned_stated(text: str) -> tuple[str, ...]:
    """The stated lines a pruned stub carries (``pruned_stub``), else ()."""
    return tuple(text.split("\n")[1:]) if text.startswith(PRUNED_PREFIX) else ()


def pruned_image(tokens: int) -> str:
    """In place of an image or document the model already answered: it has no text for recall to keep."""
    return f"{PRUNED_PREFIX}image: {tokens} tokens, already answered; not kept as text: ask for it again if needed]"


def call_label(name: str, arguments: str, chars: int = _STUB_ARGUMENT_CHARS) -> str:
    """A tool call as a stub names it: ``name(arguments)``, the arguments cut at ``chars``."""
    shown = arguments if len(arguments) <= chars else arguments[:chars] + "..."
    return f"{name}({shown})"


def degraded_notice_text() -> str:
    return (
        f"{NOTICE_PREFIX}degraded] Earlier turns were dropped without a new handoff. "
        "The most recent messages follow verbatim; the latest user message is the active request."
    )


def degraded_note(reason: str, explanation: str) -> str:
    return (
        f"{DEGRADED_PREFIX}| reason: {safe_field(reason)}] Earlier turns were dropped because {explanation}. "
        "Only the most recent messages are kept."
    )


def message_text(message: dict[str, Any]) -> str:
    """The text of a message's content: the string itself or its text parts joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def is_baton_message(message: dict[str, Any]) -> bool:
    """A block, continuation notice or degradation note that an earlier Baton compaction wrote.

    Tool results are never ours: a ``baton_resume`` tool may print a block, and dropping its
    result would orphan the call.
    """
    return is_baton_role_text(message.get("role"), message_text(message))


def is_baton_role_text(role: Any, text: str) -> bool:
    """``is_baton_message`` of a message with this role and text (tool results are never ours)."""
    return role != "tool" and is_baton_text(text)


def is_baton_text(text: str) -> bool:
    """Text that starts with one of Baton's own markers (block provenance, continuation or degradation note)."""
    text = text.lstrip()
    return PROVENANCE_RE.match(text) is not None or text.startswith((NOTICE_PREFIX, DEGRADED_PREFIX))


def is_own_text(text: str) -> bool:
    """Text Baton wrote into a transcript, wherever it sits: a block, notice or degradation note
    (``is_baton_text``) or a stub that stands in for an elided or pruned result. Never the user's or the tools' words:
    the brief and the anchors leave it out (with the answers of Baton's own tools, ``BATON_TOOLS``)."""
    return is_baton_text(text) or text.lstrip().startswith((STUB_PREFIX, PRUNED_PREFIX))


def embedded_block(message: dict[str, Any]) -> str | None:
    """The handoff block (provenance line .. end line) inside an earlier Baton message, if any."""
    text = message_text(message)
    found = PROVENANCE_RE.search(text)
    if found is None:
        return None
    closing = end_line(found.group("short_id"))
    stop = text.find(closing, found.start())
    return text[found.start() : stop + len(closing)] if stop >= 0 else text[found.start() :].rstrip()
