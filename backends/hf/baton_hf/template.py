"""Facts about a chat template that change how vLLM prepares messages for it.

Ported from vLLM 0.32.0 ``vllm/renderers/hf.py``: the content format (does the template loop
over ``message.content`` parts?) and which request kwargs reach the template.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Iterator
from functools import lru_cache

import jinja2.nodes

from baton_hf.normalize import ContentFormat

from baton_hf.jinja_env import parse

# Chat templates whose analysis is remembered (one per loaded tokenizer; each entry is a small frozenset or flag).
TEMPLATE_MEMO_ENTRIES = 32
# Never forwarded as template kwargs: they are fixed by the renderer itself.
RESERVED_KWARGS = frozenset({"conversation", "tools", "chat_template", "tokenize", "return_dict"})


@lru_cache(maxsize=TEMPLATE_MEMO_ENTRIES)
def detect_content_format(chat_template: str) -> ContentFormat:
    """``"openai"`` when the template iterates ``message['content']``, else ``"string"`` (vLLM's rule)."""
    ast = parse(chat_template)
    if ast is None:
        return "string"
    return "openai" if next(_content_loops(ast), None) is not None else "string"


@lru_cache(maxsize=TEMPLATE_MEMO_ENTRIES)
def template_variables(chat_template: str) -> frozenset[str]:
    """Undeclared variables of the template: the kwargs it can actually read."""
    import jinja2.meta

    ast = parse(chat_template)
    return frozenset(jinja2.meta.find_undeclared_variables(ast)) if ast is not None else frozenset()


def accepted_kwargs(chat_template: str, apply_chat_template: object) -> frozenset[str]:
    """vLLM forwards a kwarg only if the template reads it or ``apply_chat_template`` takes it."""
    params = {
        p.name
        for p in inspect.signature(apply_chat_template).parameters.values()  # type: ignore[arg-type]
        if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    }
    return frozenset((params | template_variables(chat_template)) - RESERVED_KWARGS)


def _is_var(node: jinja2.nodes.Node, name: str) -> bool:
    return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == name


def _is_attr(node: jinja2.nodes.Node, name: str, key: str) -> bool:
    if isinstance(node, jinja2.nodes.Getitem):
        return _is_var(node.node, name) and isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == key
    if isinstance(node, jinja2.nodes.Getattr):
        return _is_var(node.node, name) and node.attr == key
    return False


def _is_var_or_elems(node: jinja2.nodes.Node, name: str, key: str | None = None) -> bool:
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _is_var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Test):
        return _is_var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _is_var_or_elems(node.node, name, key)
    return _is_attr(node, name, key) if key else _is_var(node, name)


def _aliases(root: jinja2.nodes.Template, name: str) -> list[str]:
    names, queue = [name], deque([name])
    while queue:
        current = queue.popleft()
        for assign in root.find_all(jinja2.nodes.Assign):
            if _is_var_or_elems(assign.node, current) and isinstance(assign.target, jinja2.nodes.Name):
                target = assign.target.name
                if target not in names:
                    names.append(target)
                    queue.append(target)
    return names


def _loop_targets(root: jinja2.nodes.Template, names: list[str], key: str | None = None) -> Iterator[str]:
    for loop in root.find_all(jinja2.nodes.For):
        if isinstance(loop.target, jinja2.nodes.Name) and any(_is_var_or_elems(loop.iter, n, key) for n in names):
            yield loop.target.name


def _content_loops(root: jinja2.nodes.Template) -> Iterator[str]:
    message_names = list(_loop_targets(root, _aliases(root, "messages")))
    return _loop_targets(root, message_names, "content")
