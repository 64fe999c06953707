"""A long agent session in the user's words (issue 32): facts stated once, asked later in other words.

Why a corpus of our own: recall was measured asking for a fact in the words that stated it, which is not how a
person or a model asks ("which port did we settle on for the staging database?" about ``DB_PORT=6543``). Each
fact here is stated ONCE, by the user or inside a long tool result shaped like Hermes' tools (``read_file``,
``terminal``, ``search_files``), in one of three domains (code review, ops, data work); each question shares at
most one content word with its statement (``content_words``; a question marked ``shared`` shares exactly the one
word named, an identifier or a term both use). ``ABSENT`` are questions whose answer is nowhere in the session.

The session is generated (seeded, no downloads): filler turns of file reads, command output and searches in the
same domains surround the facts, and a fact stated in a tool result sits in the middle of a long output (not in its
first lines). ``answer`` is the exact text that must reach the model for the question to count as answered.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

Message = dict[str, Any]
Where = Literal["user", "read_file", "terminal", "search_files"]


@dataclass(frozen=True)
class Fact:
    domain: Literal["review", "ops", "data", "user"]
    where: Where
    statement: str  # the user's message, or the one line of a tool result that states the fact
    question: str
    answer: str
    tool_arg: str = ""  # read_file: the path; terminal: the command; search_files: the pattern
    shared: str = ""  # the one content word the question shares with the statement, if any


FACTS: tuple[Fact, ...] = (
    # ---- ops
    Fact("ops", "user", "Staging DB: DB_PORT=6543, that is pgbouncer, agreed with the infra folks last week.",
         "What number does the pre-production connection pooler listen on?", "DB_PORT=6543"),
    Fact("ops", "read_file", "  maxReplicas: 12   # capped: the payment gateway rate-limits us above 12 pods",
         "How many copies of the checkout service can autoscaling spin up at most?", "maxReplicas: 12",
         "deploy/checkout-api/hpa.yaml"),
    Fact("ops", "user", "Please never restart the ingest workers during business hours (9-18 CET); finance runs "
         "their reconciliation then.", "When are we forbidden to bounce the data loading processes?", "9-18 CET"),
    Fact("ops", "terminal", "    Expiry Date: 2027-01-14 08:00:00+00:00 (VALID: 42 days)",
         "When does the TLS cert for the public API lapse?", "2027-01-14", "certbot certificates"),
    Fact("ops", "read_file", "    client_max_body_size 25m;",
         "What is the largest upload the reverse proxy accepts?", "client_max_body_size 25m",
         "deploy/nginx/site.conf"),
    Fact("ops", "user", "Alerts should page Dana Okafor first, not the whole channel; she owns this rotation.",
         "Who gets woken up first when monitoring fires?", "Dana Okafor", shared="first"),
    Fact("ops", "terminal", "/dev/nvme1n1     1.8T  1.7T   96G  95% /var/lib/kafka",
         "How full is the volume holding the message broker's logs?", "95% /var/lib/kafka", "df -h"),
    Fact("ops", "read_file", "17 3 * * * /opt/backup/run.sh --target s3://acme-backups/nightly",
         "At what hour of the night does the snapshot job kick off?", "17 3 * * *", "deploy/crontab"),
    Fact("ops", "terminal", "psql: error: connection to server at \"10.0.4.17\", port 5432 failed: FATAL:  too many "
         "connections for role \"etl_user\"", "Why could the loader account not reach Postgres?",
         "too many connections", "psql -h 10.0.4.17 -U etl_user -c 'select 1'"),
    Fact("ops", "read_file", "    command: redis-server --maxmemory 512mb --maxmemory-policy allkeys-lru",
         "What eviction strategy does the in-memory store follow when it is full?", "allkeys-lru",
         "docker-compose.yml"),
    Fact("ops", "terminal", "  Latency 99%    412.33ms   Requests/sec:   2318.40",
         "What is the tail response time under load?", "412.33ms", "wrk -t4 -c64 -d30s https://staging/api/cart"),
    Fact("ops", "terminal", "a41f9c2 Revert \"enable HTTP/2 on the gateway\": broke websocket upgrades",
         "Why did we back out a41f9c2?", "websocket", "git log --oneline -n 40", shared="a41f9c2"),
    # ---- code review
    Fact("review", "user", "Decision: we keep the retry decorator but cap it at 4 attempts with exponential backoff, "
         "Marco worried about thundering herds.",
         "How many times will a failing call be tried again before giving up?", "4 attempts"),
    Fact("review", "read_file", "ROUNDING = decimal.ROUND_HALF_EVEN  # banker's rounding, required by the auditors",
         "Which rounding mode do monetary totals use?", "ROUND_HALF_EVEN", "src/billing/invoice.py",
         shared="rounding"),
    Fact("review", "terminal", "FAILED tests/test_orders.py::test_refund_partial - AssertionError: expected 19.99, "
         "got 20.0", "Which check broke on the money-back path, and what value came out?", "test_refund_partial",
         "pytest -q tests/"),
    Fact("review", "user", "For the review: we agreed to rename `fetch_all` to `iter_pages` since it streams, and "
         "deprecate the old name for one release.",
         "What is the new name of the function that used to load everything at once?", "iter_pages",
         shared="name"),
    Fact("review", "search_files", "src/auth/session.py:88:    SESSION_TTL_SECONDS = 1800  # security review: 30 min "
         "idle timeout", "How long can a logged-in user stay inactive before being signed out?", "SESSION_TTL_SECONDS = 1800",
         "SESSION_"),
    Fact("review", "user", "Style rule for this repo: no f-strings in logging calls, use %-style so formatting "
         "stays lazy.", "How should interpolation be written inside log statements?", "%-style"),
    Fact("review", "read_file", "requires-python = \">=3.10\"  # 3.9 dropped: we need match statements",
         "What is the minimum interpreter version the package supports?", ">=3.10", "pyproject.toml"),
    Fact("review", "terminal", "Found 37 errors in 9 files (checked 214 source files)",
         "How many type-checker complaints are left?", "37 errors", "mypy src/"),
    Fact("review", "user", "Do not touch the `legacy/` folder in this PR: it is frozen until the Q3 migration, Priya "
         "deletes it then.", "Which directory must stay unmodified in this change?", "legacy/"),
    Fact("review", "search_files", "src/api/limits.py:14:RATE_LIMIT_PER_MINUTE = 120  # per API key, agreed with "
         "partners", "How many calls may one client make each minute?", "RATE_LIMIT_PER_MINUTE = 120",
         "RATE_LIMIT", shared="minute"),
    # ---- data work
    Fact("data", "user", "The churn model uses a 90-day inactivity window to label a customer as churned.",
         "After how long without activity do we count someone as lost?", "90-day"),
    Fact("data", "terminal", "rows: 1,284,033   duplicates dropped: 12,417   nulls in amount: 0",
         "How many repeated records were removed during cleaning?", "12,417", "python etl/clean.py --stats"),
    Fact("data", "read_file", "partition_key: event_date  # not ingest_ts: late-arriving events must land in their "
         "real day", "Which column is partition_key set to?", "event_date", "etl/config.yaml",
         shared="partition_key"),
    Fact("data", "user", "Use the March 2024 snapshot as the holdout set; everything before it is training.",
         "Which period did we reserve for evaluation?", "March 2024"),
    Fact("data", "terminal", "AUC on validation: 0.847 (baseline logistic regression: 0.781)",
         "How well did the new classifier score on held-out data?", "0.847", "python train.py --eval"),
    Fact("data", "user", "Timestamps in the raw feed are in America/Chicago, not UTC: convert before joining.",
         "What zone are the source times recorded in?", "America/Chicago"),
    Fact("data", "read_file", "where order_status not in ('test', 'cancelled_by_fraud')",
         "Which purchase states are excluded from the revenue figures?", "cancelled_by_fraud",
         "models/marts/revenue.sql"),
    Fact("data", "terminal", "sampled 5% of sessions (seed=20240611)",
         "What random seed made the subsample reproducible?", "20240611", "python sample.py --frac 0.05",
         shared="seed"),
    Fact("data", "user", "Budget for the warehouse is $4,000 a month; anything above needs sign-off from Luis.",
         "Who must approve if cloud data spending goes over the limit?", "Luis"),
    Fact("data", "search_files", "notebooks/features.py:212:    # drop 'zip_code': leaks the label through the "
         "store assignment", "Which feature did we remove because it gives away the target?", "zip_code",
         "drop"),
    Fact("data", "user", "We chose ClickHouse over Druid for the event analytics: simpler to run, and the team "
         "already knows SQL.", "Which columnar engine won the comparison for product telemetry?", "ClickHouse"),
    Fact("data", "read_file", "S3_BUCKET=acme-ml-artifacts  # models and eval reports only, no raw PII",
         "Where do trained weights get uploaded?", "acme-ml-artifacts", ".env.example"),
    # ---- the user's own preferences
    Fact("user", "user", "My preference: answer in short bullet points, and always show the command before running "
         "it.", "How do I like responses formatted?", "bullet points"),
    Fact("user", "user", "The feature flag is called `checkout_v2_rollout` and it is at 15% of traffic right now.",
         "What share of visitors is checkout_v2_rollout enabled for?", "15%", shared="checkout_v2_rollout"),
)

ABSENT: tuple[str, ...] = (
    "What is the consumer group name for the billing topic?",
    "Which region hosts the disaster-recovery cluster?",
    "How many shards does the search index have?",
    "What is the password rotation period for service accounts?",
    "Which dashboard tracks queue depth?",
    "What learning rate did the gradient boosting run use?",
    "Who reviewed the pull request that added the caching layer?",
    "What is the uptime objective for the notifications service?",
    "Which vendor provides our SMS gateway?",
    "What was decided about the mobile app's minimum OS version?",
)

# What every paraphrase avoids: function words, and words any question uses ("what", "which", "we", "did").
STOP_WORDS = frozenset(
    "a about above after again all also am an and any are as at be been before being below between both but by "
    "can could did do does doing down during each few for from further had has have having he her here hers him "
    "his how i if in into is it its itself just me more most my no nor not now of off on once only or other our "
    "out over own same she should so some such than that the their them then there these they this those through "
    "to too under until up very was we were what when where which while who whom why will with would you your "
    "get gets got let may must one let's is it's".split())
_WORD_RE = re.compile(r"[A-Za-z0-9_]+(?:[./-][A-Za-z0-9_]+)*")


def _stem(word: str) -> str:
    """A crude suffix strip: enough to see that "rounding" and "round" share a word."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _tokens(text: str) -> list[str]:
    return [token.lower() for token in _WORD_RE.findall(text)]


def _parts(token: str) -> set[str]:
    return {part for part in re.split(r"[._/-]", token) if len(part) > 1 and part not in STOP_WORDS}


def content_words(text: str, stem: Any = _stem) -> set[str]:
    """The content words of ``text``: lower-cased, stemmed, stop words and single characters dropped; an
    identifier (``DB_PORT``) counts by its parts too (``db``, ``port``), as a tokenizer would split it."""
    return {stem(word) for token in _tokens(text) for word in {token, *_parts(token)}
            if len(word) > 1 and word not in STOP_WORDS}


def shared_words(statement: str, question: str, stem: Any = _stem) -> set[str]:
    """The content words both use, an identifier shared whole counted once (not again by its parts)."""
    shared = content_words(statement, stem) & content_words(question, stem)
    whole = {stem(token) for token in _tokens(question) if _parts(token) - {token} and stem(token) in shared}
    parts = {stem(part) for token in _tokens(question) if stem(token) in whole for part in _parts(token)}
    return shared - (parts - whole)


# ---- the generated session ------------------------------------------------------------------------------------

_NAMES = ("ledger", "orders", "billing", "ingest", "cart", "checkout", "catalog", "payments", "events", "reports",
          "auth", "search", "pricing", "inventory", "shipping", "notify")
_VERBS = ("load", "parse", "merge", "flush", "render", "validate", "resolve", "compute", "emit", "apply", "split")
_NOUNS = ("batch", "record", "row", "frame", "chunk", "payload", "window", "bucket", "cursor", "snapshot", "queue")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN")
_REQUESTS = {
    "review": ("Review {path} and tell me what looks risky.", "Look at the diff in {path}, anything off?",
               "Check how {path} handles errors.", "Go through {path} for the PR."),
    "ops": ("Run `{cmd}` and tell me what you see.", "Check the service health with `{cmd}`.",
            "What does `{cmd}` say now?", "Try `{cmd}` on the staging box."),
    "data": ("Open {path} and explain the transformation.", "Run `{cmd}` and summarise the output.",
             "Look for `{pattern}` in the notebooks.", "How does {path} build its features?"),
}


def _code_lines(rng: random.Random, count: int) -> list[str]:
    lines: list[str] = []
    while len(lines) < count:
        name, verb, noun = rng.choice(_NAMES), rng.choice(_VERBS), rng.choice(_NOUNS)
        lines += [f"def {verb}_{noun}_{name}(self, {noun}, limit={rng.randint(2, 500)}):",
                  f"    \"\"\"{verb.capitalize()} one {noun} of {name} and return the {rng.choice(_NOUNS)}.\"\"\"",
                  f"    items = self.{name}.{verb}({noun}, limit=limit)",
                  f"    if not items:",
                  f"        return None",
                  f"    return [{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}(item) for item in items]", ""]
    return lines[:count]


def _log_lines(rng: random.Random, count: int) -> list[str]:
    return [f"2026-11-{rng.randint(10, 28)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z "
            f"{rng.choice(_LEVELS)} {rng.choice(_NAMES)}.{rng.choice(_VERBS)} {rng.choice(_NOUNS)}="
            f"{rng.randint(1000, 99999)} took {rng.randint(2, 900)}ms" for _ in range(count)]


def _table_lines(rng: random.Random, count: int) -> list[str]:
    header = ",".join(rng.sample(_NOUNS, 5))
    return [header, *(",".join(str(rng.randint(0, 9999)) for _ in range(5)) for _ in range(count - 1))]


def _numbered(lines: list[str]) -> str:
    return "\n".join(f"{n:6d}|{line}" for n, line in enumerate(lines, 1))


def _filler(rng: random.Random, domain: str, count: int) -> list[str]:
    kind = {"review": _code_lines, "ops": _log_lines, "data": _table_lines}[domain]
    return kind(rng, count)


def _result(where: Where, lines: list[str], tool_arg: str) -> str:
    if where == "read_file":
        return json.dumps({"content": _numbered(lines), "total_lines": len(lines), "file_size": sum(map(len, lines)),
                           "truncated": False, "path": tool_arg})
    if where == "terminal":
        return json.dumps({"output": "\n".join(lines), "exit_code": 0, "error": None})
    matches = [{"path": line.split(":", 2)[0], "line": int(line.split(":", 2)[1]), "content": line.split(":", 2)[2]}
               if line.count(":") >= 2 and line.split(":", 2)[1].isdigit() else
               {"path": "src/misc.py", "line": 1, "content": line} for line in lines]
    return json.dumps({"total_count": len(matches), "matches": matches})


def _search_lines(rng: random.Random, count: int) -> list[str]:
    return [f"src/{rng.choice(_NAMES)}/{rng.choice(_NOUNS)}.py:{rng.randint(1, 400)}:    "
            f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}({rng.choice(_NOUNS)})" for _ in range(count)]


@dataclass(frozen=True)
class Session:
    messages: tuple[Message, ...]
    turns: tuple[tuple[int, int], ...]  # (start, end) of each turn in ``messages``: the user message opens it


def _turn(rng: random.Random, index: int, user: str, where: Where, tool_arg: str, lines: list[str]) -> list[Message]:
    call_id = f"call_{index:04d}"
    name, key = {"read_file": ("read_file", "path"), "terminal": ("terminal", "command"),
                 "search_files": ("search_files", "pattern")}[where]
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({key: tool_arg})}}
    reply = rng.choice(("Done; nothing blocking there.", "Noted. Ready for the next step.",
                        "Looked through it; the details are above.", "OK, that part is clear now."))
    return [{"role": "user", "content": user},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": _result(where, lines, tool_arg)},
            {"role": "assistant", "content": reply}]


def build_session(filler_turns: int = 80, seed: int = 32) -> Session:
    """Facts spread evenly among ``filler_turns`` turns of the same domains; every tool result 60-160 lines."""
    rng = random.Random(seed)
    slots = sorted(rng.sample(range(filler_turns + len(FACTS)), len(FACTS)))
    facts = iter(FACTS)
    messages: list[Message] = []
    turns: list[tuple[int, int]] = []
    for index in range(filler_turns + len(FACTS)):
        domain = rng.choice(("review", "ops", "data"))
        fact = next(facts) if index in slots else None
        where: Where = fact.where if fact is not None and fact.where != "user" else \
            rng.choice(("read_file", "terminal", "search_files"))
        fact_domain = fact.domain if fact is not None and fact.domain != "user" else domain
        count = rng.randint(60, 160)
        lines = _search_lines(rng, count) if where == "search_files" else _filler(rng, fact_domain, count)
        path = f"src/{rng.choice(_NAMES)}/{rng.choice(_NOUNS)}.py"
        cmd = rng.choice(("make test", "kubectl get pods -n shop", "tail -n 200 /var/log/app.log", "python etl/run.py"))
        tool_arg = {"read_file": path, "terminal": cmd, "search_files": rng.choice(_VERBS)}[where]
        user = rng.choice(_REQUESTS[domain]).format(path=path, cmd=cmd, pattern=tool_arg)
        if fact is not None and fact.where == "user":
            user = fact.statement
        elif fact is not None:
            tool_arg = fact.tool_arg
            lines.insert(rng.randint(len(lines) // 3, 2 * len(lines) // 3), fact.statement)
            user = rng.choice(_REQUESTS[fact_domain]).format(path=tool_arg, cmd=tool_arg, pattern=tool_arg)
        start = len(messages)
        messages += _turn(rng, index, user, where, tool_arg, lines)
        turns.append((start, len(messages)))
    return Session(tuple(messages), tuple(turns))
