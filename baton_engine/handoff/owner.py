"""Who a handoff belongs to, and which handoffs a session may see (its ``Scope``).

Why: one Hermes gateway serves many people from one working directory, so one project store holds the
handoffs of every conversation. A record names its owner in ``origin.owner`` (the reference schema allows
extra fields there): the platform and the conversation's gateway session key, hashed (never the key, never
user text; not named "conversation": validation refuses transcript-like field names). On a multi-user
platform a session sees only the records of its own conversation; on a local one (the CLI: one person, one project) it sees the whole project, as before.
Records without an owner (written before owners existed) belong to no conversation: only a project-wide
scope sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baton_engine.handoff.capture import hash_session_id
from baton_engine.handoff.model import HandoffRecord, Owner

# Hermes' platforms where one person works in one project (``agent.platform``; Hermes defaults to "cli").
# Every other platform (telegram, discord, slack, api_server, cron, ...) may serve many people: fail closed.
LOCAL_PLATFORMS = frozenset({"cli", "tui", "acp", "local"})
DEFAULT_PLATFORM = "cli"


def is_multi_user(platform: str | None) -> bool:
    return (platform or DEFAULT_PLATFORM).strip().lower() not in LOCAL_PLATFORMS


def session_owner(platform: Any, conversation_id: Any, session_id: Any) -> Owner:
    """The owner of a session's handoffs from what the host says: ``platform`` and the gateway session key
    (``conversation_id``). A multi-user platform without a key falls back to the session id, as Hermes
    itself does (``gateway_session_key or session_id``); a local session has no session key."""
    name = platform.strip().lower() if isinstance(platform, str) and platform.strip() else DEFAULT_PLATFORM
    key = next((str(v) for v in (conversation_id, session_id) if isinstance(v, str) and v.strip()), None)
    if not is_multi_user(name):
        key = conversation_id if isinstance(conversation_id, str) and conversation_id.strip() else None
    return Owner(platform=name, conversation_id=hash_session_id(key))


def owner_of(record: HandoffRecord) -> Owner | None:
    return record.origin.owner


NOBODY = ""  # a session key no stored record has (stored ones are "sha256:..." or null)


@dataclass(frozen=True)
class Scope:
    """The handoffs a session (or a CLI filter) may see: the whole project (both fields None), or the records
    whose owner has this ``platform`` and/or this (hashed) ``conversation_id``. A record without an owner is
    seen only by the project-wide scope."""

    platform: str | None = None
    conversation_id: str | None = None

    @classmethod
    def project(cls) -> Scope:
        return cls()

    @classmethod
    def for_session(cls, owner: Owner | None, *, share: bool) -> Scope:
        """A multi-user platform sees only its conversation unless sharing is set; a local one the project."""
        if owner is None or share or not is_multi_user(owner.platform):
            return cls()
        return cls(platform=owner.platform, conversation_id=owner.conversation_id or NOBODY)

    @classmethod
    def filter(cls, platform: str | None, conversation_id: str | None) -> Scope:
        """The CLI's ``--platform`` / ``--session-key`` filter (the raw key or its stored hash)."""
        key = conversation_id.strip() if conversation_id else ""
        return cls(platform=platform.strip().lower() if platform and platform.strip() else None,
                   conversation_id=hash_session_id(key) if key else None)

    @property
    def project_wide(self) -> bool:
        return self.platform is None and self.conversation_id is None

    def admits(self, record: HandoffRecord) -> bool:
        return self.admits_owner(owner_of(record))

    def admits_owner(self, theirs: Owner | None) -> bool:
        """Whether this scope sees what ``theirs`` owns (a handoff, a session's metrics log)."""
        if self.project_wide:
            return True
        return theirs is not None and self.platform in (None, theirs.platform) \
            and self.conversation_id in (None, theirs.conversation_id)

    def to_dict(self) -> dict[str, Any]:
        """How the scope is shown (status): ``{"kind": "project"}`` or the owner fields it is limited to."""
        if self.project_wide:
            return {"kind": "project"}
        return {"kind": "owner", "platform": self.platform, "conversation_id": self.conversation_id}
