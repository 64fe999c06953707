"""A deterministic chat-only session (no tools) with facts stated in the early user turns.

Why: tool-heavy sessions test anchors and recall; a long plain conversation tests whether the
user's own words survive compaction. The 12 facts are what a user says once, early, and expects
the assistant to remember 200 turns later: names, hosts, rules, dates, ids. Each fact carries a
``needle``, the verbatim substring a benchmark checks after compaction. The rest is ordinary chat:
questions, follow-ups, opinions, acknowledgements, and a few later remarks with numbers in them,
so facts compete with other specific statements, not only with noise.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from benchmarks.harness.workload import WORDS, Message

FACTS: tuple[tuple[str, str], ...] = (
    ("My name is Dana Whitfield and I lead the payments team.", "Dana Whitfield"),
    ("Our production database is PostgreSQL 15.4 on host db-prod-7.", "db-prod-7"),
    ("Never deploy on Fridays; that is a hard rule here.", "Never deploy on Fridays"),
    ("The release deadline is March 14, no later.", "March 14"),
    ("Always use the httpx client, never requests.", "httpx"),
    ("The staging API lives at staging.ledger.example.org/v2.", "staging.ledger.example.org/v2"),
    ("Our cloud budget is 4800 EUR per month.", "4800 EUR"),
    ("The main repository is ledger-core on the internal GitLab.", "ledger-core"),
    ("Remember that on-call goes Priya, then Marco, then Lin.", "Priya, then Marco, then Lin"),
    ("We indent with 4 spaces and keep lines under 100 characters.", "under 100 characters"),
    ("The pilot customer id is CUST-88217.", "CUST-88217"),
    ("Do not touch the legacy module billing_v1; it is frozen until Q3.", "billing_v1"),
)
FACT_TURNS = tuple(range(1, 2 * len(FACTS), 2))  # turns 1, 3, ..., 23: early, between ordinary chat

_QUESTIONS = (
    "How does the {a} {b} work when the {c} is busy?",
    "Can you explain the {a} again, in simpler terms?",
    "What happens to the {a} if the {b} {c} fails?",
    "Why would we pick a {a} over a {b} here?",
    "Could you show an example of a {a} {b}?",
    "Is the {a} related to the {b} {c} somehow?",
)
_REMARKS = (
    "I see, that makes the {a} part clearer.",
    "Hmm, I'm not sure I follow the bit about the {a}.",
    "That sounds reasonable to me, let's keep the {a} simple.",
    "I think the second option reads better.",
    "Interesting, I had not thought about the {a} that way.",
)
_ACKS = ("ok", "thanks!", "makes sense", "go on", "great, thanks", "cool")
_LATER_SPECIFICS = (
    "I tried the {a} example 3 times and it worked.",
    "The {a} took about 40 seconds on my laptop.",
    "We had 2 incidents with the {a} last year.",
    "My old team used {a} version 2 for this.",
)


@dataclass(frozen=True)
class ChatSession:
    messages: tuple[Message, ...]
    facts: tuple[tuple[str, str], ...]  # (the user's sentence, the needle to look for)


def _fill(rng: random.Random, template: str) -> str:
    return template.format(a=rng.choice(WORDS), b=rng.choice(WORDS), c=rng.choice(WORDS))


def _user_turn(rng: random.Random, turn: int) -> str:
    if turn in FACT_TURNS:
        return FACTS[FACT_TURNS.index(turn)][0]
    if turn % 50 == 25:
        return _fill(rng, _LATER_SPECIFICS[(turn // 50) % len(_LATER_SPECIFICS)])
    kind = rng.random()
    if kind < 0.55:
        return _fill(rng, rng.choice(_QUESTIONS))
    if kind < 0.8:
        return _fill(rng, rng.choice(_REMARKS))
    return rng.choice(_ACKS)


def _assistant_turn(rng: random.Random) -> str:
    sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + "."
                 for _ in range(rng.randint(3, 9))]
    return " ".join(sentences)


def chat_session(turns: int = 200, *, seed: int = 5) -> ChatSession:
    """``turns`` user/assistant exchanges; the same arguments give the same messages."""
    rng = random.Random(seed)
    messages: list[Message] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": _user_turn(rng, turn)})
        messages.append({"role": "assistant", "content": _assistant_turn(rng)})
    return ChatSession(tuple(messages), tuple(fact for fact, turn in zip(FACTS, FACT_TURNS, strict=True) if turn < turns))
