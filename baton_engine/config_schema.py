"""Each ``baton:`` key's type and default, read off the one settings definition (``settings.BatonSettings``).

Why generated: a host's plugin manifest declares the keys it passes on (Hermes 0.22's ``config_schema``), and a
setting added to ``BatonSettings`` must be declared by construction, never by a second list.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from baton_engine.settings import CONFIG_KEYS, BatonSettings


def _schema_type(hint: Any) -> str:
    """The schema type of a settings field's annotation (``int | None`` is ``int``)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        [hint] = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    if typing.get_origin(hint) in (tuple, list):
        return "list"
    if dataclasses.is_dataclass(hint) or typing.get_origin(hint) is dict:
        return "dict"
    names = {bool: "bool", int: "int", float: "float", str: "str"}
    if hint not in names:
        raise TypeError(f"settings field annotation {hint!r} has no config_schema type")
    return names[hint]


def config_schema() -> dict[str, dict[str, Any]]:
    """Every ``baton:`` key (``settings.CONFIG_KEYS``): its ``type``, and its ``default`` unless it has none."""
    hints = typing.get_type_hints(BatonSettings)
    fields = {field.name: field for field in dataclasses.fields(BatonSettings)}
    schema: dict[str, dict[str, Any]] = {}
    for key in CONFIG_KEYS:
        schema[key] = {"type": _schema_type(hints[key])}
        default = fields[key].default
        if default is not dataclasses.MISSING and default is not None:
            schema[key]["default"] = list(default) if isinstance(default, tuple) else default
    return schema
