"""Hook specifications for tokenizer-backend plugins (entry-point group ``baton_engine.tokenizers``).

A plugin is a module with a function named like the hookspec, decorated with ``hookimpl``::

    from baton_engine.tokens.hookspecs import hookimpl
    from baton_engine.tokens.contract import BackendSpec

    @hookimpl
    def baton_tokenizer_backends():
        return [BackendSpec("mytok", factory=MyBackend.from_config)]

First-party backends register exactly the same way.
"""

from __future__ import annotations

import pluggy

PROJECT = "baton_engine"
ENTRY_POINT_GROUP = "baton_engine.tokenizers"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def baton_tokenizer_backends():
    """Return a list of ``BackendSpec`` this plugin provides. Must be cheap: construct nothing."""
