"""The one door to transformers' private chat-template compiler, with public stand-ins when it is gone.

Why: ``_compile_jinja_template`` is private and may move or vanish in any transformers release. Two things use
it: the sandbox fast paths (an optional speed-up on the environment transformers renders with; without it the
public ``apply_chat_template`` renders exactly the same, only slower) and template parsing for vLLM's
content-format and kwarg rules (vLLM parses with transformers' environment; the stand-in parses with the same
syntax settings and the ``{% generation %}`` tag transformers adds, so the same templates parse the same way).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

PRIVATE_COMPILER = "transformers.utils.chat_template_utils._compile_jinja_template"


def private_compiler() -> Callable[[str], Any] | None:
    """transformers' cached compiler (``template string -> jinja2.Template``), or None if this version has none."""
    module, _, name = PRIVATE_COMPILER.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def compiled_environment(chat_template: str) -> jinja2.Environment | None:
    """The environment transformers renders ``chat_template`` with; None without the private compiler or when
    the template does not compile (it then fails later, in render, as CannotCount)."""
    compile_template = private_compiler()
    if compile_template is None:
        return None
    try:
        return compile_template(chat_template).environment
    except Exception:  # noqa: BLE001 - any compile error means: no environment to speed up
        return None


def parse(chat_template: str) -> jinja2.nodes.Template | None:
    """The template's AST, parsed like transformers parses it; None when it does not parse."""
    environment = compiled_environment(chat_template) or _parse_only_environment()
    try:
        return environment.parse(chat_template)
    except Exception:  # noqa: BLE001 - vLLM treats an unparsable template as "string" content
        return None


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` as transformers' AssistantTracker parses it (body kept as-is)."""

    tags = {"generation"}

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


@lru_cache(maxsize=1)
def _parse_only_environment() -> jinja2.Environment:
    return ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols]
    )
