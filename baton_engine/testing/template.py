'''``baton tokens new-backend NAME``: write a minimal, installable tokenizer-backend package.

Why a generator and not a cookiecutter: the package must match this core's contract, entry-point group and
kit exactly, offline, with no extra tool. The generated backend is a small working tokenizer (words and
punctuation) that passes the kit, so an author starts from green and replaces ``_tokenize``/``_render``. It is
no model's tokenizer, so its counts say ``exact=False`` until the author's replacement really is one.
'''

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from baton_engine import __version__
from baton_engine.errors import UserInputError
from baton_engine.tokens.plugins import AUTO, discover
from baton_engine.tokens.rough import ROUGH_SOURCE

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
MAX_NAME_LENGTH = 32

PYPROJECT = Template('''\
[build-system]
requires = ["hatchling>=1.24"]
build-backend = "hatchling.build"

[project]
name = "$distribution"
version = "0.1.0"
description = "$name: a tokenizer backend for Baton"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["baton-engine>=$core_version"]

[project.optional-dependencies]
test = ["pytest>=8"]

# Baton finds backends through this entry-point group; the name on the left is what users select.
[project.entry-points."baton_engine.tokenizers"]
$name = "$module.plugin"

[tool.hatch.build.targets.wheel]
packages = ["$module"]
# `pip install -e .` through a .pth file: works offline, without the `editables` package.
dev-mode-dirs = ["."]
''')

INIT = Template('''\
"""$name: a tokenizer backend for Baton (entry point ``baton_engine.tokenizers: $name``)."""
''')

PLUGIN = Template('''\
"""Registers the ``$name`` backend. Must stay cheap: Baton imports every plugin, builds only the selected one."""

from __future__ import annotations

from baton_engine.tokens.contract import BackendSpec, TokenizerBackend, TokenizerConfig
from baton_engine.tokens.hookspecs import hookimpl


def _create(config: TokenizerConfig) -> TokenizerBackend:
    from $module.backend import $cls  # heavy imports happen only when this backend is chosen

    return $cls.from_config(config)


@hookimpl
def baton_tokenizer_backends() -> list[BackendSpec]:
    return [BackendSpec("$name", _create, description="$name tokenizer (words and punctuation)")]
''')

BACKEND = Template('''\
"""The $name tokenizer backend.

Replace ``_tokenize`` with your model's tokenizer and ``_render`` with its chat format. Keep the rest:
failures raise CannotCount with a message that names what is wrong but never quotes the request, and the
backend holds no lock, client or thread that ``copy.deepcopy`` cannot copy (create those lazily).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from baton_engine.tokens.contract import CannotCount, ChatRequest, TokenCount, TokenizerBackend, TokenizerConfig

_TOKEN = re.compile(r"\\w+|[^\\w\\s]")
# exact=True promises a count is what the provider's own tokenizer and chat template give. The words-and-
# punctuation tokenizer below is no model's, so it says False; set True once _tokenize and _render are your
# model's (then `BATON_TOKENIZER_PATH=/your/model/dir baton tokens check $name --reference hf` compares the
# counts with its Hugging Face tokenizer, read from that directory).
EXACT = False
_UNSAFE_IN_SOURCE = re.compile(r"[^A-Za-z0-9._/-]")


class $cls(TokenizerBackend):
    """Stateless, hence thread-safe and copyable as it is."""

    def __init__(self, model: str | None = None) -> None:
        self._model = _UNSAFE_IN_SOURCE.sub("_", model or "default")[:64]

    @classmethod
    def from_config(cls, config: TokenizerConfig) -> $cls:
        """Settings arrive from BATON_TOKENIZER_* / config.yaml; raise BackendConfigError naming what to fix."""
        return cls(config.model)

    @property
    def source(self) -> str:
        return f"$name:{self._model}"

    def count_text(self, text: str) -> TokenCount:
        if not isinstance(text, str):
            raise CannotCount(f"text must be a str, got {type(text).__name__}")
        return TokenCount(len(_tokenize(text)), exact=EXACT, source=self.source)

    def count_chat(self, request: ChatRequest) -> TokenCount:
        return TokenCount(len(_tokenize(_render(request))), exact=EXACT, source=self.source)


def _tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _render(request: Any) -> str:
    """The prompt the provider sees: one line per message, tool calls and tool schemas as JSON."""
    messages = request.get("messages") if isinstance(request, Mapping) else None
    if not isinstance(messages, list):
        raise CannotCount("request.messages must be a list of message objects")
    lines = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise CannotCount(f"messages[{index}] must be an object with a string 'role'")
        lines.append(f"<{message['role']}> {_content(message.get('content'), index)}")
        lines += [_json(call, f"messages[{index}].tool_calls") for call in message.get("tool_calls") or ()]
    tools = request.get("tools") or []
    if not isinstance(tools, list):
        raise CannotCount("request.tools must be a list of tool schemas")
    lines += [_json(tool, "tools") for tool in tools]
    if request.get("add_generation_prompt", True):
        lines.append("<assistant>")
    return "\\n".join(lines)


def _content(content: Any, index: int) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "\\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    raise CannotCount(f"messages[{index}].content must be a string, a list of parts or null")


def _json(value: Any, where: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise CannotCount(f"{where} is not JSON ({type(exc).__name__})") from None
''')

TEST = Template('''\
"""Baton's conformance kit against this backend, offline: ``pytest -q``."""

from __future__ import annotations

from baton_engine.testing import assert_conformant
from baton_engine.tokens.contract import TokenizerConfig
from baton_engine.tokens.plugins import build_backend

from $module.backend import $cls


def test_backend_passes_the_conformance_kit() -> None:
    print(assert_conformant($cls()).text())  # pytest -s shows the speed figures


def test_installed_and_selected_by_name() -> None:
    backend, selection = build_backend(TokenizerConfig(backend="$name"))
    assert selection.name == "$name" and isinstance(backend, $cls)
''')

README = Template('''\
# $distribution

A tokenizer backend for [Baton](https://pypi.org/project/baton-engine/), registered as `$name` in the
entry-point group `baton_engine.tokenizers`. In the venv that has baton-engine, from this directory:

```
python -m pip install -e '.[test]'       # pip fetches hatchling (the build backend) and pytest
baton tokens backends                    # lists $name
BATON_TOKENIZER_BACKEND=$name baton tokens count chat.json
baton tokens check $name                 # Baton's conformance kit
python -m pytest -q                      # the same kit from tests/test_conformance.py, with this venv's pytest
```

Are your counts the model's? With the model's Hugging Face tokenizer in a directory and the hf backend installed
(`pip install 'baton-engine[hf]'`):

```
BATON_TOKENIZER_PATH=/your/model/dir baton tokens check $name --reference hf
```

`chat.json` is a sample request (`{"messages": [...], "tools": [...]}`); count your own the same way.
Offline, with hatchling and pytest already in the venv: `python -m pip install --no-build-isolation --no-index -e .`.

Select it for Hermes with `baton: {tokenizer: {backend: $name}}` in `config.yaml` (or
`BATON_TOKENIZER_BACKEND=$name`); `BATON_TOKENIZER_MODEL`, `_PATH`, `_URL` reach `from_config` as
`TokenizerConfig` fields.

Make it yours in `$module/backend.py`: `_tokenize` is the tokenizer, `_render` the chat format. Count
exactly what the provider sees, then set `EXACT = True` (the words-and-punctuation starter is no model's
tokenizer, so it says `exact=False`); raise `CannotCount` (never quoting the request) when you cannot count,
and keep the backend thread-safe and `copy.deepcopy`-able.
''')


CHAT = Template('''\
{"messages": [{"role": "system", "content": "You are a careful assistant."},
              {"role": "user", "content": "Count the tokens of this request with $name."}],
 "tools": [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]}
''')


def _check_name(name: str) -> None:
    if len(name) > MAX_NAME_LENGTH or not NAME_PATTERN.match(name):
        raise UserInputError(
            f"backend name {name!r} is not usable: use lower-case letters and digits, optionally joined by "
            f"'-' or '_', starting with a letter, at most {MAX_NAME_LENGTH} characters (e.g. 'mytok')"
        )
    if name in (AUTO, ROUGH_SOURCE):
        raise UserInputError(f"backend name {name!r} is reserved by baton-engine; choose another name")
    installed = discover().backends.get(name)
    if installed is not None:
        raise UserInputError(
            f"backend name {name!r} is already provided by {installed.distribution}; two distributions "
            "cannot share a name, choose another one"
        )


def _check_target(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise UserInputError(f"{target} exists and is not a directory; pass --dir with a new or empty directory")
    if target.is_dir() and any(target.iterdir()):
        raise UserInputError(f"{target} is not empty; pass --dir with a new or empty directory")


def new_backend(name: str, directory: str | None = None) -> dict[str, object]:
    """Write the package for backend ``name`` into ``directory`` (default ``./baton-backend-NAME``)."""
    _check_name(name)
    distribution = f"baton-backend-{name}"
    module = "baton_backend_" + name.replace("-", "_")
    cls = "".join(part.capitalize() for part in re.split(r"[-_]", name)) + "Backend"
    target = Path(directory) if directory else Path(distribution)
    _check_target(target)
    values = {"name": name, "distribution": distribution, "module": module, "cls": cls,
              "core_version": __version__}
    files = {
        "pyproject.toml": PYPROJECT, "README.md": README, "chat.json": CHAT, f"{module}/__init__.py": INIT,
        f"{module}/plugin.py": PLUGIN, f"{module}/backend.py": BACKEND, "tests/test_conformance.py": TEST,
    }
    for relative, template in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.substitute(values), encoding="utf-8")
    return {"ok": True, "name": name, "distribution": distribution, "directory": str(target),
            "files": sorted(files),
            "next": [f"python -m pip install -e '{target}[test]'", f"baton tokens check {name}",
                     f"cd {target} && python -m pytest -q"]}
