"""What the shapes' readers share: a request's mappings, template kwargs and prompt options, media parts as the
placeholders every view counts, tools as the function schemas tokenizers render."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from baton_engine.request import PROMPT_OPTIONS
from baton_engine.tokens.media import as_placeholder


def mappings(items: Any) -> tuple[Mapping[str, Any], ...]:
    """The mappings of a list (the list's own dicts, in order); () when it is no list."""
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        return ()
    if set(map(type, items)) <= {dict}:  # the usual list of plain dicts, checked at C speed
        return tuple(items)
    return tuple(item for item in items if type(item) is dict or isinstance(item, Mapping))


def template_kwargs(request: Mapping[str, Any]) -> dict[str, Any]:
    """``chat_template_kwargs`` of the body as sent (``extra_body``'s merged under the top level's)."""
    extra = request.get("extra_body")
    merged: dict[str, Any] = {}
    for source in (extra if isinstance(extra, Mapping) else {}, request):
        kwargs = source.get("chat_template_kwargs")
        if isinstance(kwargs, Mapping):
            merged.update(kwargs)
    return merged


def options(request: Mapping[str, Any]) -> dict[str, Any]:
    """The prompt options of the body as sent (top level first, then ``extra_body``)."""
    extra = request.get("extra_body")
    found: dict[str, Any] = {}
    for name in PROMPT_OPTIONS:
        value = request.get(name)
        if value is None and isinstance(extra, Mapping):
            value = extra.get(name)
        if value is not None:
            found[name] = value
    return found


def chat_tool_choice(kind: Any, name: Any = None) -> Any:
    """Another API's tool choice as chat completions says it (what every tokenizer backend renders): ``auto``,
    ``none``, ``required`` (Anthropic's and Bedrock's ``any``) or a named function; None for one it has no
    equivalent of (then not counted)."""
    if kind in ("auto", "none", "required"):
        return kind
    if kind == "any":
        return "required"
    if kind in ("tool", "function") and isinstance(name, str) and name:
        return {"type": "function", "function": {"name": name}}
    return None


def text_or_media(block: Any, text: Any) -> dict[str, Any] | None:
    """One content part: a placeholder for a media block, else a text part (None: nothing to send)."""
    placeholder = as_placeholder(block)
    if placeholder is not block:
        return placeholder
    return {"type": "text", "text": text} if isinstance(text, str) and text else None


def parts_content(parts: list[dict[str, Any] | None]) -> Any:
    """Text parts joined (a string) when there is no media, else the parts themselves."""
    kept = [part for part in parts if part is not None]
    if all(part.get("type") == "text" for part in kept):
        return "\n".join(part["text"] for part in kept)
    return kept


def function_tool(name: Any, description: Any, parameters: Any) -> Mapping[str, Any]:
    """A tool of another API as the function schema tokenizers render (a description or schema it lacks is left
    out, as chat completions leaves it out, not sent as null)."""
    function = {"name": name, "description": description, "parameters": parameters}
    return {"type": "function", "function": {key: value for key, value in function.items() if value is not None}}


def model_name(request: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        if request.get(key):
            return str(request[key])
    return None
