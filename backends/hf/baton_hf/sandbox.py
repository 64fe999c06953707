"""Same renders, less sandbox overhead: fast paths on transformers' compiled chat-template environment.

Why: a warm count re-renders the whole conversation, and most of that render was jinja's sandbox
re-deciding, for every message, that ``loop.index0`` or ``ns.flag`` may be read, and raising and catching an
AttributeError for every ``message.role`` before falling back to ``message['role']``. Both fast paths return
exactly what the sandbox returns (same values, same Undefined, same refusals); only the repeated work goes:

- attribute verdicts are cached per (type, name) for types whose verdict cannot depend on anything else
  (jinja decides with ``isinstance`` tests on the object and string tests on the name, never the value);
- ``dict`` lookups of names that are not dict attributes go straight to the item, which is where the
  sandbox ends up for them anyway (an exact ``dict`` has no instance attributes).

The compiled template is transformers' own, shared per template string, so every render of that template
in the process (ours and direct ``apply_chat_template`` calls) gets the same, unchanged output.
"""

from __future__ import annotations

from typing import Any

import jinja2.runtime
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from baton_hf.jinja_env import compiled_environment

# Types that do not fake ``__class__``, so ``isinstance`` on them is decided by ``type(obj)`` alone: plain
# JSON data plus jinja's loop object and namespaces (transformers' TemplateNamespace subclasses Namespace).
_PLAIN_TYPES = (str, dict, list, tuple, int, float, bool, type(None))
_JINJA_TYPES = (jinja2.runtime.LoopContext, jinja2.utils.Namespace)
_DICT_ATTRIBUTES = frozenset(dir(dict))
# Memory: at most _MAX_VERDICTS (type, attribute) verdicts and as many per-type flags; further ones are checked
# in full every time (a template reads a few dozen attributes, so the bound is never reached in practice).
_MAX_VERDICTS = 4096


def install_fast_paths(chat_template: str) -> bool:
    """Install both fast paths on the compiled environment of ``chat_template``; idempotent.

    Returns False (and changes nothing) when transformers' private compiler is gone, the template does not
    compile, or transformers/jinja customised the checks these fast paths stand in for.
    """
    env = compiled_environment(chat_template)
    if env is None:
        return False
    if (
        type(env).is_safe_attribute is not ImmutableSandboxedEnvironment.is_safe_attribute
        or type(env).getattr is not SandboxedEnvironment.getattr
    ):
        return False
    if "is_safe_attribute" not in vars(env):
        env.is_safe_attribute = _memoized_verdicts(env.is_safe_attribute)  # type: ignore[method-assign]
    if "getattr" not in vars(env):
        env.getattr = _dict_item_first(env, env.getattr)  # type: ignore[method-assign]
    return True


def _memoized_verdicts(full_check: Any) -> Any:
    verdicts: dict[tuple[type, str], bool] = {}
    memoizable: dict[type, bool] = {}

    def is_safe_attribute(obj: object, attr: str, value: object) -> bool:
        kind = type(obj)
        known = memoizable.get(kind)
        if known is None:
            known = kind in _PLAIN_TYPES or issubclass(kind, _JINJA_TYPES)
            if len(memoizable) < _MAX_VERDICTS:
                memoizable[kind] = known
        if not known:
            return bool(full_check(obj, attr, value))
        verdict = verdicts.get((kind, attr))
        if verdict is None:
            verdict = bool(full_check(obj, attr, value))
            if len(verdicts) < _MAX_VERDICTS:
                verdicts[(kind, attr)] = verdict
        return verdict

    return is_safe_attribute


def _dict_item_first(env: SandboxedEnvironment, sandbox_getattr: Any) -> Any:
    def getattr(obj: Any, attribute: str) -> Any:  # noqa: A001 - the environment method it stands in for
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except (TypeError, LookupError):
                return env.undefined(obj=obj, name=attribute)
        return sandbox_getattr(obj, attribute)

    return getattr
