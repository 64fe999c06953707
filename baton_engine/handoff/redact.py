"""Secret redaction applied to every handoff record before anything is written.

Library choice: Yelp's ``detect-secrets`` supplies the known-provider detectors (AWS, GitHub,
GitLab, Slack, Stripe, Twilio, SendGrid, Discord, JWT, npm, PyPI, Azure storage, Mailchimp,
Telegram, ...) and the Shannon-entropy measure. Its plugins are called directly through
``analyze_string``: no global settings, no baseline, no ``verify``, so nothing ever touches the
network. Not used: its ``KeywordDetector`` (its regexes are super-linear on long identifier
runs, minutes on a 20 kB field, unacceptable inside the agent loop) and its high-entropy
plugins (they flag every quoted hex string: git SHAs, sha256 digests). Baton adds what the
library lacks: newer provider prefixes (``sk-proj-``, ``sk-ant-``, ``AIza``, ``hf_``, ``gsk_``,
``github_pat_``, ...), whole PEM blocks (the library only sees the header line), bearer/basic
auth headers, passwords in URLs (user and host kept), bounded ``.env`` / JSON / YAML
assignments of secret-named variables (quoted or not), and an unquoted high-entropy scan
guarded against hex digests, UUIDs, paths and identifiers.

Every removed span becomes ``[REDACTED:<reason>]`` and is recorded as a ``Redaction`` with
the field path and the detector name, never the value. Redaction is deterministic and
idempotent: markers are never matched again.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from cachetools import LRUCache

from baton_engine.handoff.model import Redaction

MARKER_RE = re.compile(r"\[REDACTED(?::[a-z0-9-]+)?\](?:#\d+)?")
REDACTIONS_KEY = "redactions"


@dataclass(frozen=True, order=True)
class SecretHit:
    """Where a secret sits in a text, and which detector found it. Holds no secret text."""

    start: int
    end: int
    reason: str


def marker(reason: str) -> str:
    return f"[REDACTED:{reason}]"


# --- secret-named variables -------------------------------------------------------------

_SECRET_WORDS = frozenset(
    {"password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "credential", "credentials", "dsn"}
)
_SECRET_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("auth", "key"), ("secret", "key"),
     ("signing", "key"), ("encryption", "key"), ("session", "key"), ("client", "key"), ("account", "key"),
     ("master", "key"), ("service", "key"), ("auth", "token"), ("access", "token"), ("db", "pass")}
)
# A name with one of these parts describes a secret (its length, file, name), it does not hold one.
_DESCRIPTIVE_PARTS = frozenset(
    {"count", "counts", "file", "path", "name", "names", "type", "kind", "id", "ids", "length", "limit",
     "budget", "env", "var", "hint", "policy", "source", "backend", "usage", "url", "expires", "expiry", "ttl",
     "cost", "size", "max", "min", "words", "pairs", "re", "regex", "pattern", "patterns", "format", "prefix"}
)
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _name_parts(name: str) -> list[str]:
    return [part for part in re.split(r"[^a-z0-9]+", _CAMEL_RE.sub("_", name).lower()) if part]


def is_secret_name(name: str) -> bool:
    """True for variable/field names that hold a credential (``DB_PASSWORD``, ``apiKey``, ``client_secret``)."""
    parts = _name_parts(MARKER_RE.sub(" ", name))
    if not parts or _DESCRIPTIVE_PARTS.intersection(parts):
        return False
    if _SECRET_WORDS.intersection(parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(parts, parts[1:], strict=False))


_PLACEHOLDER_RE = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^<>]*>|\{\{[^{}]*\}\}|\*+|x{3,}|X{3,}|\.\.\.|null|none|nil|true|false"
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|os\.environ.*|process\.env.*|getenv\(.*)$",
    re.IGNORECASE,
)


def _is_placeholder(value: str) -> bool:
    stripped = value.strip()
    return not stripped or bool(_PLACEHOLDER_RE.match(stripped)) or bool(MARKER_RE.fullmatch(stripped))


# --- Baton's own patterns (what detect-secrets lacks) --------------------------------------

@dataclass(frozen=True)
class _Pattern:
    reason: str
    regex: re.Pattern[str]
    group: int | str = 0


def _p(reason: str, pattern: str, group: int | str = 0, flags: int = 0) -> _Pattern:
    return _Pattern(reason, re.compile(pattern, flags), group)


_B = r"(?<![A-Za-z0-9_-])"  # token start: not inside a longer word
_PATTERNS: tuple[_Pattern, ...] = (
    _p("private-key",
       r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
       r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)", flags=re.DOTALL),
    _p("anthropic-api-key", _B + r"sk-ant-[a-z]+\d{2}-[A-Za-z0-9_-]{20,}"),
    _p("openai-api-key", _B + r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"),
    _p("openai-api-key", _B + r"sk-[A-Za-z0-9][A-Za-z0-9_-]{30,}"),
    _p("google-api-key", _B + r"AIza[0-9A-Za-z_-]{35}"),
    _p("huggingface-token", _B + r"hf_[A-Za-z0-9]{30,}"),
    _p("groq-api-key", _B + r"gsk_[A-Za-z0-9]{40,}"),
    _p("xai-api-key", _B + r"xai-[A-Za-z0-9]{60,}"),
    _p("perplexity-api-key", _B + r"pplx-[A-Za-z0-9]{40,}"),
    _p("replicate-token", _B + r"r8_[A-Za-z0-9]{30,}"),
    _p("github-token", _B + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}"),
    _p("github-token", _B + r"github_pat_[A-Za-z0-9_]{50,}"),
    _p("gitlab-token", _B + r"gl(?:pat|dt|ft|rt|oas|cbt|imt|ptt)-[A-Za-z0-9_-]{20,}"),
    _p("slack-token", _B + r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    _p("slack-token", _B + r"xapp-\d-[A-Za-z0-9-]{10,}"),
    _p("stripe-key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _p("stripe-key", _B + r"whsec_[A-Za-z0-9]{24,}"),
    _p("npm-token", _B + r"npm_[A-Za-z0-9]{36}"),
    _p("pypi-token", _B + r"pypi-[A-Za-z0-9_-]{50,}"),
    _p("discord-webhook", r"discord(?:app)?\.com/api/webhooks/\d+/([A-Za-z0-9_-]{20,})", 1),
    _p("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    _p("databricks-token", _B + r"dapi[a-f0-9]{32}(?:-\d)?"),
    _p("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    _p("json-web-token", _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    _p("auth-header",
       r"(?i)\b(?:proxy-)?authorization\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|apikey|bot)\s+)?"
       r"(?!(?:bearer|basic|token|digest|apikey|bot)\b)(?P<cred>[A-Za-z0-9._~+/=-]{6,})", "cred"),
    _p("bearer-token", r"(?i)\bbearer\s+(?P<cred>[A-Za-z0-9._~+/=-]{16,})", "cred"),
    _p("url-password",
       r"(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s:/?#@\[\]]*:(?P<pw>[^\s@/?#\[\]]+)@", "pw"),
    _p("url-credential", r"(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,30}://(?P<cred>[^\s:/?#@\[\]]{20,})@", "cred"),
    _p("connection-string-secret",
       r"(?i)(?:(?<![A-Za-z])(?:AccountKey|SharedAccessKey|SharedAccessSignature)|(?<=;)\s*(?:Password|Pwd))="
       r"(?P<v>[^;\s\"']+)", "v"),
)

# Wrapped in a lookahead so every name is tried, even inside another match's value ("see: API_KEY=...");
# never the reason inside a redaction marker ("[REDACTED:openai-api-key] =0" is not an assignment of "key").
_ASSIGNMENT_RE = re.compile(
    r"(?<![A-Za-z0-9_.-])(?<!\[REDACTED:)(?=(?P<name>[A-Za-z_][A-Za-z0-9_.-]{1,80})[\"']?\]?[ \t]*(?P<sep>:=|!?={1,3}|:)[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`,;&}\])(\[]++)(?![(\[])))"
)


def assignment_hits(text: str) -> Iterator[SecretHit]:
    """``API_KEY=...``, ``export DB_PASSWORD="..."``, ``password: ...``: the value of a secret-named name."""
    for match in _ASSIGNMENT_RE.finditer(text):
        if match.group("sep") not in ("=", ":", ":=") or not is_secret_name(match.group("name")):
            continue
        group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
        value = match.group(group)
        if _is_placeholder(value):
            continue
        if group == "bare" and not _credential_like(value, match.group("name"), match.group("sep")):
            continue  # prose ("token: expired") or code ("secret = tmp_path / name")
        yield SecretHit(match.start(group), match.end(group), "secret-assignment")


_CODE_NAME_RE = re.compile(r"^(?:[a-z_]+|[A-Z_][A-Z0-9_]*)(?:\.[A-Za-z_]+)*$")


def _credential_like(value: str, name: str, sep: str) -> bool:
    """Unquoted values of lower-case names are often code (``secret = tmp_path``) or prose."""
    if name.isupper():
        return True
    if _CODE_NAME_RE.match(value):
        return False
    return sep != ":" or (len(value) >= 8 and not value.isalpha())


# --- detect-secrets -----------------------------------------------------------------------

@cache
def _library_plugins() -> tuple[tuple[str, Any], ...]:
    """Instantiated detect-secrets plugins, imported lazily (the library pulls in ``requests``)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    classes = (
        AWSKeyDetector, AzureStorageKeyDetector, BasicAuthDetector, CloudantDetector, DiscordBotTokenDetector,
        GitHubTokenDetector, GitLabTokenDetector, IbmCloudIamDetector, IbmCosHmacDetector, JwtTokenDetector,
        MailchimpDetector, NpmDetector, OpenAIDetector, PrivateKeyDetector, PypiTokenDetector,
        SendGridDetector, SlackDetector, SoftlayerDetector, SquareOAuthDetector, StripeDetector,
        TelegramBotTokenDetector, TwilioKeyDetector,
    )
    return tuple((_reason_from_type(cls.secret_type), cls()) for cls in classes)


def _reason_from_type(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


# Some library regexes backtrack quadratically on long lines; scanning overlapping windows keeps
# the cost linear. Any secret shorter than the overlap lies wholly inside some window.
_WINDOW = 1536
_OVERLAP = 512


def _windows(line: str) -> Iterator[tuple[int, str]]:
    if len(line) <= _WINDOW:
        yield 0, line
        return
    for start in range(0, len(line) - _OVERLAP, _WINDOW - _OVERLAP):
        yield start, line[start : start + _WINDOW]


def _library_hits(text: str) -> Iterator[SecretHit]:
    offset = 0
    for line in text.splitlines(keepends=True):
        for base, window in _windows(line):
            for reason, plugin in _library_plugins():
                if reason == "private-key":
                    continue  # header-only match; the whole block is handled by Baton's PEM pattern
                for value in set(plugin.analyze_string(window)):
                    value = value.strip()
                    if len(value) < 4 or _is_placeholder(value):
                        continue
                    start = window.find(value)
                    while start != -1:
                        yield SecretHit(offset + base + start, offset + base + start + len(value), reason)
                        start = window.find(value, start + len(value))
        offset += len(line)


# --- high entropy -------------------------------------------------------------------------

_ENTROPY_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/_=-])")
_HEX_RE = re.compile(r"^[0-9a-fA-F-]+$")
_WORD_RUN_RE = re.compile(r"[A-Z]?[a-z]{3,}")


def shannon_entropy(value: str) -> float:
    """Bits per character (the same measure detect-secrets uses)."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def looks_random(token: str) -> bool:
    """True for credential-like noise; False for hex digests, git SHAs, UUIDs, paths and identifiers."""
    core = token.rstrip("=")
    if len(core) < 20 or _HEX_RE.match(core):
        return False
    if not (any(ch.isdigit() for ch in core) and any(ch.isupper() for ch in core) and any(ch.islower() for ch in core)):
        return False
    if sum(len(run) for run in _WORD_RUN_RE.findall(core)) / len(core) >= 0.45:
        return False  # mostly words: a path, identifier or file name
    return shannon_entropy(core) >= math.log2(len(core)) * 0.85


# Published digests in base64 (npm/SRI integrity ``sha512-...``, Go sums ``h1:...``) are not secrets.
_DIGEST_PREFIX_RE = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[-:]$|\bh1:$", re.IGNORECASE)


def _entropy_hits(text: str) -> Iterator[SecretHit]:
    for match in _ENTROPY_TOKEN_RE.finditer(text):
        token = match.group()
        digest_prefixed = _DIGEST_PREFIX_RE.search(text[max(0, match.start() - 8) : match.start()])
        if re.match(r"(?i)(?:sha(?:1|224|256|384|512)|md5)-", token) or digest_prefixed:
            continue
        if looks_random(token):
            yield SecretHit(match.start(), match.end(), "high-entropy-string")


def _pattern_hits(text: str) -> Iterator[SecretHit]:
    for pattern in _PATTERNS:
        for match in pattern.regex.finditer(text):
            start, end = match.span(pattern.group)
            if end > start:
                yield SecretHit(start, end, pattern.reason)


# Most specific first: when spans overlap, the earlier detector's reason names the redaction.
_DETECTORS: tuple[Callable[[str], Iterator[SecretHit]], ...] = (
    _pattern_hits, _library_hits, assignment_hits, _entropy_hits,
)


# --- public API ---------------------------------------------------------------------------

_SCAN_CACHE_ENTRIES = 4096
_SCAN_CACHE: LRUCache[bytes, tuple[SecretHit, ...]] = LRUCache(maxsize=_SCAN_CACHE_ENTRIES)
_SCAN_CACHE_LOCK = threading.Lock()


def find_secrets(text: str) -> list[SecretHit]:
    """Non-overlapping secret spans in ``text``, in order. Existing redaction markers are ignored.

    Memoised by the text's sha256 (offsets and reasons only; no text is kept): one compaction
    redacts the same record fields about five times (capture, fold, save, transition, validate).
    """
    if not text:
        return []
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    with _SCAN_CACHE_LOCK:
        cached = _SCAN_CACHE.get(key)
        if cached is not None:
            return list(cached)
    hits = tuple(_scan(text))
    with _SCAN_CACHE_LOCK:
        _SCAN_CACHE[key] = hits
    return list(hits)


def _scan(text: str) -> list[SecretHit]:
    markers = [m.span() for m in MARKER_RE.finditer(text)]
    candidates: list[tuple[int, int, int, str]] = []
    for priority, detector in enumerate(_DETECTORS):
        for hit in detector(text):
            if any(hit.start < m_end and m_start < hit.end for m_start, m_end in markers):
                continue
            candidates.append((hit.start, -hit.end, priority, hit.reason))
    merged: list[SecretHit] = []
    best_priority: list[int] = []
    for start, neg_end, priority, reason in sorted(candidates):
        end = -neg_end
        if merged and start < merged[-1].end:
            last = merged[-1]
            keep_reason = reason if priority < best_priority[-1] else last.reason
            merged[-1] = SecretHit(last.start, max(last.end, end), keep_reason)
            best_priority[-1] = min(best_priority[-1], priority)
        else:
            merged.append(SecretHit(start, end, reason))
            best_priority.append(priority)
    return merged


def redact_text(text: str) -> tuple[str, list[str]]:
    """``text`` with every secret replaced by ``[REDACTED:<reason>]``, and the reasons in order."""
    hits = find_secrets(text)
    if not hits:
        return text, []
    pieces: list[str] = []
    cursor = 0
    for hit in hits:
        pieces.append(text[cursor : hit.start])
        pieces.append(marker(hit.reason))
        cursor = hit.end
    pieces.append(text[cursor:])
    return "".join(pieces), [hit.reason for hit in hits]


_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _child_path(parent: str, key: str) -> str:
    if _IDENTIFIER_RE.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{key!r}]"


class _Walker:
    def __init__(self) -> None:
        self.redactions: list[Redaction] = []
        self._seen: set[tuple[str, str]] = set()

    def record(self, field: str, reasons: list[str]) -> None:
        for reason in reasons:
            if (field, reason) not in self._seen:
                self._seen.add((field, reason))
                self.redactions.append(Redaction(field=field or "$", reason=reason, replacement=marker(reason)))

    def value(self, value: Any, path: str) -> Any:
        if isinstance(value, str):
            new, reasons = redact_text(value)
            self.record(path, reasons)
            return new
        if isinstance(value, dict):
            return self.mapping(value, path)
        if isinstance(value, (list, tuple)):
            return [self.value(item, f"{path}[{index}]") for index, item in enumerate(value)]
        return value

    def mapping(self, data: dict[Any, Any], path: str, *, top: bool = False) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, item in data.items():
            if top and key == REDACTIONS_KEY:
                out[key] = item
                continue
            new_key = key
            if isinstance(key, str):
                base, reasons = redact_text(key)
                self.record(path, reasons)
                new_key, suffix = base, 2
                while new_key in out:  # two keys redacted to the same marker
                    new_key, suffix = f"{base}#{suffix}", suffix + 1
            child = _child_path(path, new_key) if isinstance(new_key, str) else f"{path}[{new_key!r}]"
            if isinstance(key, str) and isinstance(item, str) and is_secret_name(key) and not _is_placeholder(item):
                out[new_key] = marker("secret-field")
                self.record(child, ["secret-field"])
            else:
                out[new_key] = self.value(item, child)
        return out


def redact_record(data: dict[str, Any]) -> tuple[dict[str, Any], list[Redaction]]:
    """A NEW record dict with every secret redacted, and the redactions made by this call.

    Walks every string value and mapping key (the top-level ``redactions`` list excepted). A
    string under a secret-named key (``api_key``, ``password``, ...) is replaced whole. The new
    dict's ``redactions`` list keeps the earlier entries and appends this call's, so running it
    again changes nothing and returns no new redactions.
    """
    walker = _Walker()
    new_data = walker.mapping(data, "", top=True)
    if walker.redactions:
        previous = list(data.get(REDACTIONS_KEY) or [])
        new_data[REDACTIONS_KEY] = previous + [r.model_dump(mode="json") for r in walker.redactions]
    return new_data, walker.redactions


def contains_secret(data: Any) -> list[str]:
    """Field paths that still hold a secret (the validator's ``policy.secrets`` check); no values."""
    probe = data if isinstance(data, dict) else {"value": data}
    _, redactions = redact_record(probe)
    return sorted({r.field for r in redactions})
