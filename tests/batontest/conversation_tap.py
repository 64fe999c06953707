"""Tags every HTTP request a Hermes process sends with the conversation Hermes itself says it belongs to.

Why: a gateway serves several conversations at once, and Hermes runs some calls in the background (0.22 titles a
session on its own thread after the first answer), so a request reaches the model server whenever it is ready; a
test that gives a request to whichever user's turn was running when it ARRIVED reads a late title call of user 1 as
a leak into user 2. A custom provider's requests carry no session id, but Hermes publishes one for every call of a
turn and for its title thread: ``agent.portal_tags`` (the lineage root id it tags Nous Portal calls with, set at
turn entry, inherited by auxiliary calls, set again by the title thread). Hermes sends the HTTP request from a
worker thread it starts bare (the interruptible API call), where that context variable is unset, so each thread
also remembers the conversation of the thread that created it. ``install()`` wraps httpx's ``send`` so each
request carries that id in ``CONVERSATION_HEADER`` (``UNTAGGED`` where none is known); the model server records it
(``RecordedRequest.conversation``). It changes nothing else: no context variable of Hermes is set or copied.

Run inside the Hermes process (``hermes_gateway.GATEWAY_MAIN`` installs it before the gateway starts).
"""

from __future__ import annotations

import threading
from typing import Any

CONVERSATION_HEADER = "X-Baton-Test-Conversation"
UNTAGGED = "-"


SPAWNED_FOR = "_baton_test_conversation"  # the attribute a thread keeps its creator's conversation in


def current_conversation() -> str:
    """The conversation Hermes has published for the calling thread, else the one its creator had, or
    ``UNTAGGED``."""
    from agent.portal_tags import get_conversation_context

    return get_conversation_context() or getattr(threading.current_thread(), SPAWNED_FOR, None) or UNTAGGED


def install() -> None:
    """Every ``httpx.Client``/``AsyncClient`` request from now on carries ``CONVERSATION_HEADER``; every thread
    started from now on remembers its creator's conversation."""
    import httpx

    thread_init = threading.Thread.__init__

    def init(self: threading.Thread, *args: Any, **kwargs: Any) -> None:
        thread_init(self, *args, **kwargs)
        setattr(self, SPAWNED_FOR, current_conversation())

    threading.Thread.__init__ = init  # type: ignore[method-assign]

    sync_send, async_send = httpx.Client.send, httpx.AsyncClient.send

    def send(self: httpx.Client, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
        request.headers[CONVERSATION_HEADER] = current_conversation()
        return sync_send(self, request, *args, **kwargs)

    async def asend(self: httpx.AsyncClient, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
        request.headers[CONVERSATION_HEADER] = current_conversation()
        return await async_send(self, request, *args, **kwargs)

    httpx.Client.send = send  # type: ignore[method-assign]
    httpx.AsyncClient.send = asend  # type: ignore[method-assign]
