"""Checks of what the contract promises: a safe ``source``, well-formed and honest counts, agreement.

Each function returns one ``Check``; a backend exception inside a check fails that check, named by type.
"""

from __future__ import annotations

import copy
import re
import unicodedata

from baton_engine.testing import corpus
from baton_engine.testing.outcomes import Item, Outcome, count, items
from baton_engine.testing.report import FAIL, PASS, SKIPPED, Check
from baton_engine.tokens.contract import TokenCount, TokenizerBackend

MAX_SOURCE_LENGTH = 120
_URL_CREDENTIALS = re.compile(r"://[^/\s]*@")
_URL_QUERY = re.compile(r"://[^\s]*\?")


def source_problem(source: object) -> str | None:
    """Why ``source`` is unsafe to show in status output, or None."""
    if not isinstance(source, str) or not source:
        return f"source is {type(source).__name__} {'(empty)' if source == '' else ''}".strip()
    if len(source) > MAX_SOURCE_LENGTH:
        return f"source is {len(source)} characters long (at most {MAX_SOURCE_LENGTH})"
    if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in source):
        return "source contains whitespace or control characters"
    if _URL_CREDENTIALS.search(source):
        return "source contains a URL with credentials"
    if _URL_QUERY.search(source):
        return "source contains a URL with a query string"
    return None


def check_source(backend: TokenizerBackend) -> Check:
    fix = ("return a short, stable name such as 'mytok:model-name' from `source`: no URL credentials or query "
           f"strings, no whitespace or control characters, at most {MAX_SOURCE_LENGTH} characters")
    try:
        first, second = backend.source, backend.source
    except Exception as exc:  # noqa: BLE001 - the backend author's code: any failure is a finding
        return Check("source", FAIL, f"reading source raised {type(exc).__name__}", fix)
    problem = source_problem(first)
    if problem is None and first != second:
        problem = "source changes between reads"
    return Check("source", FAIL, problem, fix) if problem else Check("source", PASS, f"{first!r}")


def _result_problem(found: object, source: str) -> str | None:
    if not isinstance(found, TokenCount):
        return f"returned {type(found).__name__}, not a TokenCount"
    if isinstance(found.tokens, bool) or not isinstance(found.tokens, int) or found.tokens < 0:
        return f"returned tokens={type(found.tokens).__name__}, not an int >= 0"
    if not isinstance(found.exact, bool):
        return f"returned exact={type(found.exact).__name__}, not a bool"
    max_len = found.max_model_len
    if not (max_len is None or (type(max_len) is int and max_len > 0)):
        return "returned a max_model_len that is neither None nor an int > 0"
    if found.source != source:
        return "returned a TokenCount whose source differs from the backend's source"
    return None


def check_results(backend: TokenizerBackend, baseline: dict[str, Outcome]) -> Check:
    """Every corpus result is a well-formed TokenCount; failures are CannotCount; ``max_model_len`` is None or
    positive; requests are not mutated."""
    fix = ("return TokenCount(tokens=int >= 0, exact=bool, source=self.source) from count_chat and count_text, "
           "raise CannotCount (never another type) when a request cannot be counted, return None or an int > 0 "
           "from max_model_len, and never modify the request")
    source = backend.source
    counted = {"chat": 0, "text": 0}
    for key, outcome in baseline.items():
        kind, name = key.split(":", 1)
        method = f"count_{kind}"
        if outcome.error is not None:
            if not outcome.cannot_count:
                return Check("results", FAIL, f"{method} raised {outcome.error} on corpus item {name!r}", fix)
            continue
        problem = _result_problem(outcome.result, source)
        if problem:
            return Check("results", FAIL, f"{method} {problem} on corpus item {name!r}", fix)
        counted[kind] += 1
    totals = {kind: sum(key.startswith(kind + ":") for key in baseline) for kind in counted}
    if counted["chat"] == 0 or counted["text"] == 0:
        return Check("results", FAIL, f"counted {counted['chat']} of {totals['chat']} chat requests and "
                     f"{counted['text']} of {totals['text']} texts (all others raised CannotCount)", fix)
    empty = baseline.get("text:empty")
    if empty is not None and empty.count is not None and empty.count.tokens != 0:
        return Check("results", FAIL, f"count_text('') returned {empty.count.tokens}, expected 0 "
                     "(plain text is counted with no special tokens added)", fix)
    window = backend.max_model_len
    if not (window is None or (type(window) is int and window > 0)):
        return Check("results", FAIL, f"max_model_len is {type(window).__name__}, not None or an int > 0", fix)
    mutated = _mutated_request(backend)
    if mutated:
        return Check("results", FAIL, f"count_chat modified the request {mutated!r}", fix)
    skipped = [key.split(":", 1)[1] for key, outcome in baseline.items() if outcome.error is not None]
    detail = f"{counted['chat']}/{totals['chat']} chat requests and {counted['text']}/{totals['text']} texts counted"
    return Check("results", PASS, detail + (f"; CannotCount on {', '.join(skipped)}" if skipped else ""))


def _mutated_request(backend: TokenizerBackend) -> str | None:
    for item in items():
        if item.kind != "chat":
            continue
        before = copy.deepcopy(item.payload)
        count(backend, item)
        if item.payload != before:
            return item.name
    return None


def check_honest_exact(backend: TokenizerBackend) -> Check:
    """``exact=True`` must not label a length estimate: same-length texts of different make-up count differently."""
    fix = ("return exact=False unless the count is what the provider's own tokenizer and chat template give; "
           "a characters-per-token estimate is never exact")
    probes = corpus.length_probes()
    claims = []
    for kind, payloads in (("text", probes),
                           ("chat", [{"messages": [{"role": "user", "content": text}]} for text in probes])):
        outcomes = [count(backend, Item(kind, "length-probe", payload)) for payload in payloads]
        found = [outcome.count for outcome in outcomes]
        if any(item is None for item in found) or not all(item.exact for item in found):
            continue
        claims.append(kind)
        tokens = {item.tokens for item in found}
        if len(tokens) == 1:
            return Check("honest-exact", FAIL, f"count_{kind} says exact=True but gives {tokens.pop()} tokens for "
                         f"each of {len(probes)} different {len(probes[0])}-character texts: a length estimate", fix)
    if not claims:
        return Check("honest-exact", PASS, "no length probe got an exact count")
    return Check("honest-exact", PASS, f"exact {' and '.join(claims)} counts depend on the text, not its length")


def check_agreement(
    baseline: dict[str, Outcome], reference: dict[str, Outcome] | None, reference_source: str | None
) -> Check:
    """Where both say exact, the counts must be equal; inexact counts are reported, not judged."""
    fix = (f"count exactly as the reference {reference_source} does (same tokenizer, chat template, request "
           "normalisation, no special tokens added to plain text), or return exact=False")
    if reference is None:
        return Check("agreement", SKIPPED, "no reference backend given (--reference NAME)")
    compared, mismatches, deviations = 0, [], []
    for key, outcome in baseline.items():
        mine, theirs = outcome.count, reference[key].count
        if mine is None or theirs is None or not theirs.exact:
            continue
        compared += 1
        if mine.exact and mine.tokens != theirs.tokens:
            mismatches.append(f"{key} {mine.tokens} vs {theirs.tokens}")
        elif not mine.exact and theirs.tokens:
            deviations.append(abs(mine.tokens - theirs.tokens) / theirs.tokens)
    if compared == 0:
        return Check("agreement", SKIPPED, f"the reference {reference_source} gave no exact count to compare with")
    if mismatches:
        shown = "; ".join(mismatches[:3]) + ("; ..." if len(mismatches) > 3 else "")
        return Check("agreement", FAIL, f"exact counts differ from {reference_source} on {len(mismatches)} of "
                     f"{compared} corpus items ({shown})", fix)
    detail = f"equal to {reference_source} on {compared - len(deviations)} of {compared} corpus items"
    if deviations:
        detail += f"; {len(deviations)} inexact counts within {max(deviations):.0%} of it"
    return Check("agreement", PASS, detail)
