"""``AgentMemos``: one agent's per-message memos (the stored messages' wire projection, the request key digests),
and the view of an estimator's arguments built through them.

Why per agent: a ``PrefixMemo`` remembers a few conversations; shared by every agent of a process (a gateway, a
parent and its subagents), ten agents taking turns pushed each other's history out, and every call projected and
hashed its agent's whole history again. On the agent's engine, each memo holds that agent's conversation only,
found through the engine whichever way the host reaches it (a direct hook call, or the caller's frames on 0.19).

Created on first use and never copied: a copy of the engine (Hermes' per-agent ``copy.deepcopy``, or
``clone_for_agent``) starts with empty memos, so copying stays cheap and never meets the memos' locks.

The projection is the host's: how its stored messages project to the neutral view, and each one's key digest
(``agent/host.Host.project``, passed in by the ``RequestBudgeter``; for Hermes, ``hermes/request_view.project``); a
copy keeps it. The rest of an estimate's view is the host's frame, not its code: so ``estimate`` is here, once, for
every host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from baton_engine.request import ProviderRequest
from baton_engine.shapes.parts import mappings
from baton_engine.tokens.prefix_memo import PrefixMemo
from baton_engine.tokens.request_key import message_digest

# The host's projection: one of its stored messages as sent, and that message's key digest (``message_digest``).
Projection = Callable[[Any], tuple[dict[str, Any], bytes | None]]


class AgentMemos:
    """The memos of one engine: ``projected`` (the host's ``project``) and ``digests`` (``message_digest``)."""

    def __init__(self, project: Projection) -> None:
        self._project = project
        self._projected: PrefixMemo[tuple[dict[str, Any], bytes | None]] | None = None
        self._digests: PrefixMemo[bytes | None] | None = None

    @property
    def projected(self) -> PrefixMemo[tuple[dict[str, Any], bytes | None]]:
        if self._projected is None:
            self._projected = PrefixMemo(self._project)
        return self._projected

    @property
    def digests(self) -> PrefixMemo[bytes | None]:
        if self._digests is None:
            self._digests = PrefixMemo(message_digest)
        return self._digests

    def estimate(self, messages: Any, *, system_prompt: str = "", tools: Any = None,
                 frame: ProviderRequest | None = None) -> ProviderRequest:
        """An estimator's arguments as the request the host's transport will send, each stored message projected
        once (``projected``: the estimators see the whole stored history on every request). ``frame`` is the
        agent's last sent request: its template kwargs and options (which the estimators are never given) complete
        the view, and its tools stand in when the caller passed none."""
        projected = self.projected.results(mappings(messages))
        sent, digests = zip(*projected) if projected else ((), ())  # tuples, as the view keeps them: no copy
        if system_prompt and not (sent and sent[0].get("role") == "system"):
            system = {"role": "system", "content": system_prompt}
            sent, digests = (system, *sent), (message_digest(system), *digests)
        schemas = mappings(tools) or (frame.tools if frame is not None else ())
        return ProviderRequest(
            messages=tuple(sent), tools=schemas,
            template_kwargs=dict(frame.template_kwargs) if frame is not None else {},
            options=dict(frame.options) if frame is not None else {},
            model=frame.model if frame is not None else None, digests=tuple(digests),
        )

    def keyed(self, view: ProviderRequest) -> ProviderRequest:
        """``view`` with its messages' key digests from this agent's memo (when its builder brought none), so
        its key hashes only the messages this agent has not sent before."""
        if view.digests is not None:
            return view
        return replace(view, digests=tuple(self.digests.results(view.count_request()["messages"])))

    def computed(self) -> int:
        """Messages computed so far by both memos (observability, tests); 0 before first use."""
        return sum(memo.computed for memo in (self._projected, self._digests) if memo is not None)

    def __deepcopy__(self, memo: dict[int, Any]) -> AgentMemos:
        return AgentMemos(self._project)
