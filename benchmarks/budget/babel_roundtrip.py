"""Is pydantic's ``llm-babel`` faithful on Hermes' real requests? (issue 30, item 1: use it where it is)

Builds requests with hermes-agent 0.19.0's own transports (Anthropic with and without thinking, Responses,
Bedrock Converse, chat completions with ``extra_body``) from a session of read and write rounds, decodes each into
llm-babel's canonical IR and encodes it back in the same format, and prints, per shape, how many fields changed
and which kinds. Baton keeps a shape's items verbatim (``baton_engine/shapes/``); a shape llm-babel round-trips
byte for byte could be read through it instead.

    .tox/hermes/bin/pip install llm-babel==0.3.0
    PYTHONPATH=tests .tox/hermes/bin/python benchmarks/budget/babel_roundtrip.py
"""

from __future__ import annotations

import json
import re
from typing import Any

from llm_transform import registry
from batontest.hermes_requests import anthropic, bedrock, chat, history, responses

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": "llm-babel 0.3.0 faithful on none of Hermes' request shapes",
    "target": "a shape read and written back unchanged (refuted: Baton's shape adapters keep items verbatim)",
    "findings": 17,
    "test": None,
}

FORMATS = {"anthropic_messages": "anthropic-messages", "anthropic_thinking": "anthropic-messages",
           "codex_responses": "openai-responses", "bedrock_converse": "bedrock-converse",
           "chat_completions": "openai-chat"}


def changes(before: Any, after: Any, path: str = "$") -> list[str]:
    """Every field that differs, as a path with list indexes folded (``$.messages[i].content: str -> list``)."""
    if type(before) is not type(after):
        return [f"{path}: {type(before).__name__} -> {type(after).__name__}"]
    if isinstance(before, dict):
        found = []
        for key in sorted(set(before) | set(after), key=str):
            if key not in after:
                found.append(f"{path}.{key}: dropped")
            elif key not in before:
                found.append(f"{path}.{key}: added")
            else:
                found += changes(before[key], after[key], f"{path}.{key}")
        return found
    if isinstance(before, list):
        found = [f"{path}: length {len(before)} -> {len(after)}"] if len(before) != len(after) else []
        for index, (a, b) in enumerate(zip(before, after)):
            found += changes(a, b, f"{path}[{index}]")
        return found
    return [] if before == after else [f"{path}: value changed"]


def main() -> None:
    builders = {"anthropic_messages": anthropic, "anthropic_thinking": lambda m: anthropic(m, thinking=True),
                "codex_responses": responses, "bedrock_converse": bedrock,
                "chat_completions": lambda m: {**chat(m), "extra_body": {"chat_template_kwargs": {
                    "enable_thinking": False}}}}
    for tokens in (6_400, 32_000):
        messages = history(tokens)
        for name, build in builders.items():
            request = json.loads(json.dumps({k: v for k, v in build(messages).items() if not k.startswith("__")}))
            back = registry.encode(FORMATS[name], registry.decode(FORMATS[name], request))
            found = changes(request, json.loads(json.dumps(back, default=str)))
            kinds = sorted({re.sub(r"\[\d+\]", "[i]", change) for change in found})
            print(f"{name:20} {tokens:>6} tokens: {'faithful' if not found else f'{len(found)} fields changed'}"
                  f"{'' if not found else ': ' + '; '.join(kinds[:6])}")


if __name__ == "__main__":
    main()
