"""Render a handoff record as a bounded resume brief (and as full Markdown for ``show``).

Why a budget in tokens: the brief is injected into the model's context after a compaction, so its
size must be known exactly. ``count_tokens`` is the caller's text counter (the counting layer passes
an exact one); without it the rough ``ceil(chars / 4)`` estimate of ``tokens.rough`` is used.

Budget policy (deterministic, no clocks):

1. Render every section in the spec's order (plus, for a compaction's record, what its ``continuity`` field
   holds: the user's words and the anchors of the compacted part). The title line, the objective, the STALE section, the
   first next action and the final "Verify freshness" section are never dropped.
2. While over budget, cut the low-value sections first (``LOW_VALUE_ORDER``: compacted detail, completed steps,
   artifacts, risks, lineage); a section whose removal alone would fit is shortened instead.
3. Captured records (decisions, evidence, failed attempts, further open items) outlive those: they
   are first rendered one line each (id + the decision / claim / attempt / description), then the
   current state and status line give way (``CONTEXT_ORDER``), then each line is clipped to fewer
   words (``WORD_CAPS``), and only then are records left out, lowest value last in ``CAPTURED_ORDER``
   first, keeping as many as fit; the marker says how many of each were left out.
4. Then the constraints give way; then the longest remaining section (by tokens; ties: the later
   one) is shortened at a word boundary, as little as needed.
5. Last resort (only with tiny budgets): cut the text itself.

Whenever content is cut, a marker just before the freshness section lists what was omitted or
shortened and names the command that shows the full record. ``Brief.tokens`` is the count of the
final text, always ``<= max_tokens``.

The brief renders only record content, which is redacted before it is stored; it adds no other data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from baton_engine.errors import UserInputError
from baton_engine.handoff.model import HandoffRecord, OpenItem
from baton_engine.tokens.rough import estimate_tokens_rough

DEFAULT_MAX_TOKENS = 1200  # the ``brief_max_tokens`` setting's default (``settings.BatonSettings``)
RAISE_BUDGET = ("raise --max-tokens or the brief_max_tokens setting (brief.max_tokens in .baton/config.json, "
                "baton.brief_max_tokens in Hermes' config.yaml; `baton doctor` shows which one applies)")
# Below this the protected sections plus the truncation marker cannot be shown meaningfully.
MIN_MAX_TOKENS = 128
ROUGH_COUNTER_SOURCE = "rough:chars/4"
ELLIPSIS = " …"
TITLE_PREFIX = "# Resume brief: "  # kept when the title is shortened: the brief always says what it is
STALE_HEADING = "## STALE: the repository changed since capture; reconcile before acting"

PRIORITY_RANK = {"high": 0, "medium": 1, "low": 2}

# Sections cut before any captured record is touched, lowest value first. Absent keys are skipped.
LOW_VALUE_ORDER = ("continuity", "completed", "artifacts", "risks", "lineage")
# Sections cut after captured records are compacted but before any record is clipped or left out.
CONTEXT_ORDER = ("current_state", "meta")
# Sections cut only when even the fewest captured records do not fit.
LAST_ORDER = ("constraints",)
# Captured-record sections, highest value first: records are left out from the end of this order.
CAPTURED_ORDER = ("decisions", "do_not_retry", "further_open_items", "evidence")
# Word limits tried, in order, for each captured record's one-line text before records are left out.
WORD_CAPS = (24, 16, 10)


class DriftLike(Protocol):
    """One drifted artifact (``freshness.ArtifactDrift``)."""

    path: str
    reason: str


class FreshnessLike(Protocol):
    """What the brief reads from ``freshness.FreshnessReport``."""

    stale: bool
    git_head_at_capture: str | None
    git_head_now: str | None
    drifted_artifacts: Sequence[DriftLike]
    reasons: Sequence[str]


@dataclass(frozen=True)
class Brief:
    """A rendered resume brief and the exact size of ``text`` under the counter that measured it."""

    text: str
    tokens: int
    truncated: bool
    counter_source: str
    omitted: tuple[str, ...] = ()
    shortened: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Entry:
    """One captured record: its full bullet text and the one-line gist (id + main text) kept under pressure."""

    ident: str
    full: str
    gist: str


@dataclass
class _Section:
    key: str
    label: str
    heading: str | None
    body: str
    truncated: bool = False
    entries: tuple[_Entry, ...] = ()
    compact: bool = False
    word_cap: int | None = None
    shown: int | None = None

    def text(self) -> str:
        return self.body if self.heading is None else f"{self.heading}\n{self.body}"

    def left_out(self) -> int:
        return 0 if self.shown is None else len(self.entries) - self.shown

    def render_entries(self) -> None:
        """Re-render ``body`` from the entries at the current detail level (compact, word cap, count)."""
        chosen = self.entries if self.shown is None else self.entries[: self.shown]
        lines = [_clip(e.ident, e.gist, self.word_cap) if self.compact else e.full for e in chosen]
        if self.left_out():
            lines.append(f"… {self.left_out()} more not shown")
        self.body = _bullets(lines)


def _clip(ident: str, gist: str, word_cap: int | None) -> str:
    """``ident: gist`` with the gist cut to ``word_cap`` words (deterministic; the full text is in the record)."""
    words = gist.split()
    if word_cap is not None and len(words) > word_cap:
        return f"{ident}: {' '.join(words[:word_cap])}{ELLIPSIS}"
    return f"{ident}: {' '.join(words)}"


def short_ref(record_id: str) -> str:
    """Short id as ``HandoffRecord.short_id`` computes it, for ids held as plain strings (parents)."""
    return record_id.replace("-", "")[-8:]


def _inline(text: str) -> str:
    """One line: list items and table-like lines must not be split by embedded newlines."""
    return " ".join(text.split())


def _block(text: str) -> str:
    """A paragraph: line structure kept, blank lines and trailing spaces removed, and a line that
    would read as a Markdown heading escaped, so record text can never fake a brief section."""
    out = []
    for line in text.strip().splitlines():
        line = line.rstrip()
        if line.lstrip().startswith("#"):
            line = "\\" + line.lstrip()
        if line:
            out.append(line)
    return "\n".join(out)


def _bullets(items: Iterable[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def order_open_items(record: HandoffRecord) -> list[OpenItem]:
    """Open items in action order: unblocked before blocked, then priority, then id.

    An item blocked by another *open* item cannot be the first next action, so it sorts after
    every unblocked one; blockers that are not open items (already done, or external) do not count.
    """
    open_ids = {item.id for item in record.open_items}

    def key(item: OpenItem) -> tuple[int, int, str]:
        blocked = any(ref in open_ids and ref != item.id for ref in item.blocked_by)
        return (1 if blocked else 0, PRIORITY_RANK[item.priority], item.id)

    return sorted(record.open_items, key=key)


def _drift_line(entry: DriftLike) -> str:
    return _inline(f"{entry.path}: {entry.reason}")


def _head(sha: str | None) -> str:
    return sha[:12] if sha else "unknown"


def _item_line(item: OpenItem) -> str:
    text = f"{item.id} [{item.priority}] {_inline(item.description)}"
    if item.suggested_action:
        text += f" -> {_inline(item.suggested_action)}"
    if item.blocked_by:
        text += f" (blocked by {', '.join(sorted(item.blocked_by))})"
    return text


def _continuity_lines(state: object) -> list[str]:
    """The stored ``continuity`` state (user words, anchors) as brief lines; only what the record holds."""
    if not isinstance(state, dict):
        return []
    words = (state.get("user_words") or {}).get("items") or []
    lines = [f'User said: "{_inline(str(w.get("text", "")))}"' + ("…" if w.get("clipped") else "")
             for w in words if isinstance(w, dict) and w.get("text")]
    anchors = state.get("anchors") or {}
    for f in anchors.get("files") or []:
        if isinstance(f, dict) and f.get("path"):
            ranges = ", ".join(f"{a}-{b}" for a, b in f.get("lines") or [])
            lines.append(f"{str(f.get('action', 'read')).capitalize()}: {_inline(str(f['path']))}"
                         + (f" lines {ranges}" if ranges else ""))
    for c in anchors.get("commands") or []:
        if isinstance(c, dict) and c.get("command"):
            code = c.get("exit_code")
            lines.append(f"Ran: {_inline(str(c['command']))}" + ("" if code is None else f" (exit {code})"))
    lines += [f"Error seen: {_inline(str(e))}" for e in anchors.get("errors") or [] if e]
    lines += [f"Stated in {_inline(str(s.get('source', 'a tool result')))}: {_inline(str(s['text']))}"
              for s in anchors.get("stated") or [] if isinstance(s, dict) and s.get("text")]
    return lines


def _build_sections(
    record: HandoffRecord, freshness: FreshnessLike | None, verbose: bool, continuity: bool = True
) -> list[_Section]:
    sections: list[_Section] = []

    def add(key: str, label: str, heading: str | None, body: str) -> None:
        if body.strip():
            sections.append(_Section(key, label, heading, body))

    def add_entries(key: str, label: str, heading: str, entries: Sequence[_Entry]) -> None:
        if entries:
            section = _Section(key, label, heading, "", entries=tuple(entries))
            section.render_entries()
            sections.append(section)

    add("title", "title", None, f"{TITLE_PREFIX}{_inline(record.work.title) or '(untitled)'}")
    add(
        "meta",
        "status",
        None,
        f"Status: {record.status} | captured {record.created_at} | id {record.short_id}",
    )
    stale = freshness is not None and freshness.stale
    if stale:
        assert freshness is not None
        lines = [f"- {_inline(reason)}" for reason in freshness.reasons]
        if not lines:  # a report that says stale without saying why: show what it holds
            at_capture, now = _head(freshness.git_head_at_capture), _head(freshness.git_head_now)
            lines.append(f"- git head {at_capture} at capture, {now} now")
            lines += [f"- changed: {_drift_line(d)}" for d in sorted(freshness.drifted_artifacts, key=_drift_line)]
        add("stale", "STALE", STALE_HEADING, "\n".join(lines))

    lineage = record.lineage
    if lineage.parents or lineage.relation != "root":
        text = f"{lineage.relation} of {', '.join(short_ref(p) for p in lineage.parents) or 'no recorded parent'}"
        if lineage.branch_label:
            text += f"; branch label: {_inline(lineage.branch_label)}"
        if lineage.merge_basis:
            text += f"; merge basis: {', '.join(_inline(b) for b in lineage.merge_basis)}"
        add("lineage", "lineage", "## Lineage", text)

    add("objective", "objective", "## Objective", _block(record.work.objective) or "(not recorded)")
    state = _block(record.summary.current_state)
    if record.summary.why_it_matters:
        state += f"\nWhy it matters: {_inline(record.summary.why_it_matters)}"
    add("current_state", "current state", "## Current state", state)
    add("completed", "completed", "## Completed", _bullets(_inline(c) for c in record.summary.completed))
    add(
        "constraints",
        "constraints",
        "## Non-negotiable constraints",
        _bullets(_inline(c) for c in record.work.constraints),
    )

    decisions = []
    for d in sorted(record.decisions, key=lambda d: d.id):
        text = f"{d.id}: {_inline(d.decision)}"
        if d.rationale:
            text += f" (why: {_inline(d.rationale)})"
        if d.evidence_ids:
            text += f" [evidence {', '.join(sorted(d.evidence_ids))}]"
        decisions.append(_Entry(d.id, text, _inline(d.decision)))
    add_entries("decisions", "decisions", "## Decisions", decisions)

    artifacts = []
    for a in record.artifacts:
        role = f"{a.role}, sensitive" if a.sensitive else a.role
        text = f"{_inline(a.path)} ({role})"
        if a.description:
            text += f": {_inline(a.description)}"
        artifacts.append(text)
    add("artifacts", "artifacts", "## Key artifacts", _bullets(artifacts))

    if verbose:
        evidence = []
        for e in sorted(record.evidence, key=lambda e: e.id):
            details = [f"{name}: {_inline(value)}" for name, value in (("result", e.result), ("ref", e.ref)) if value]
            text = f"{e.id} ({e.type}): {_inline(e.claim)}"
            if details:
                text += f" ({'; '.join(details)})"
            evidence.append(_Entry(e.id, text, _inline(e.claim)))
        add_entries("evidence", "evidence", "## Evidence", evidence)

    risks = []
    for r in record.risks:
        text = f"[{r.severity}] {_inline(r.description)}"
        if r.mitigation:
            text += f" (mitigation: {_inline(r.mitigation)})"
        risks.append(text)
    add("risks", "risks", "## Risks", _bullets(risks))

    failed = []
    for f in sorted(record.failed_attempts, key=lambda f: f.id):
        text = f"{f.id}: {_inline(f.attempt)}"
        if f.outcome:
            text += f" (outcome: {_inline(f.outcome)})"
        failed.append(_Entry(f.id, text, _inline(f.attempt)))
    add_entries("do_not_retry", "do-not-retry", "## Do not retry", failed)

    ordered = order_open_items(record)
    if ordered:
        first = ordered[0]
        lines = []
        if stale:
            lines.append("(Only after reconciling STALE above.)")
        lines.append(f"{first.id} [{first.priority}]: {_inline(first.suggested_action or first.description)}")
        if first.suggested_action:
            lines.append(f"Item: {_inline(first.description)}")
        if first.blocked_by:
            lines.append(f"Blocked by: {', '.join(sorted(first.blocked_by))}")
        if first.acceptance_check:
            lines.append(f"Done when: {_inline(first.acceptance_check)}")
        next_body = "\n".join(lines)
    else:
        next_body = "No open item recorded: confirm the objective is met (see current state) before more work."
    add("first_next_action", "next action", "## First next action", next_body)
    add_entries(
        "further_open_items",
        "open items",
        "## Further open items",
        [_Entry(i.id, _item_line(i), f"[{i.priority}] {_inline(i.description)}") for i in ordered[1:]],
    )
    if continuity:
        add("continuity", "compacted detail", "## From the compacted conversation",
            _bullets(_continuity_lines((record.model_extra or {}).get("continuity"))))
    add("freshness", "freshness", "## Verify freshness", _freshness_body(record, freshness))
    return sections


def _freshness_body(record: HandoffRecord, freshness: FreshnessLike | None) -> str:
    repo = record.project.repository
    recorded = repo.head if repo else None
    if freshness is None:
        return (
            f"Not checked at render time. Recorded git head: {_head(recorded)}. Before acting, compare it with "
            f"`git rev-parse HEAD` and run `baton handoff validate {record.short_id}`."
        )
    if freshness.stale:
        moved = []
        if freshness.git_head_at_capture != freshness.git_head_now:
            moved.append(f"git head {_head(freshness.git_head_at_capture)} -> {_head(freshness.git_head_now)}")
        if freshness.drifted_artifacts:
            moved.append(f"{len(freshness.drifted_artifacts)} artifact(s) changed")
        if not moved:
            moved.append(f"{len(freshness.reasons)} change(s) reported")
        return f"STALE: {'; '.join(moved)}. Re-read the changed files and re-validate before continuing."
    head = (
        f"git head {_head(freshness.git_head_now)} matches the capture"
        if freshness.git_head_now
        else "no git head to compare"
    )
    checked = getattr(freshness, "checked_artifacts", None)
    artifacts = "no recorded artifact changed" if checked is None else f"{checked} recorded artifact hash(es) match"
    return f"Checked at render time: {head}; {artifacts}. Re-check with `git status` if time has passed."


def _marker(short_id: str, omitted: Sequence[str], shortened: Sequence[str]) -> _Section:
    parts = []
    if omitted:
        parts.append(f"cut {', '.join(omitted)}")
    if shortened:
        parts.append(f"shortened {', '.join(shortened)}")
    what = "; ".join(parts) or "text cut"
    return _Section("marker", "marker", None, f"[Truncated: {what}. Full record: `baton handoff show {short_id}`]")


def _assemble(sections: Sequence[_Section]) -> str:
    return "\n\n".join(s.text() for s in sections) + "\n"


@dataclass
class _Fitter:
    """Applies the budget policy; holds the counter and what has been cut so far."""

    short_id: str
    max_tokens: int
    count: Callable[[str], int]
    sections: list[_Section]
    omitted: list[str] = field(default_factory=list)
    shortened: list[str] = field(default_factory=list)

    def labels(self) -> tuple[list[str], list[str]]:
        """What the marker reports: cut / shortened sections plus captured records compacted or left out."""
        omitted, shortened = list(self.omitted), list(self.shortened)
        for s in self._captured():
            if s.left_out():
                omitted.append(f"{s.left_out()} of {len(s.entries)} {s.label}")
            if s.compact and s.shown != 0:
                how = "one line each" if s.word_cap is None else f"one line of <= {s.word_cap} words each"
                shortened.append(f"{s.label} ({how})")
        return omitted, shortened

    def compose(self) -> str:
        omitted, shortened = self.labels()
        if not (omitted or shortened):
            return _assemble(self.visible())
        marker = _marker(self.short_id, omitted, shortened)
        body = self.visible()
        at = len(body) - 1 if body and body[-1].key == "freshness" else len(body)
        return _assemble([*body[:at], marker, *body[at:]])

    def visible(self) -> list[_Section]:
        """Sections to render: a captured section with every record left out shows nothing."""
        return [s for s in self.sections if s.shown != 0]

    def fits(self, text: str) -> bool:
        return self.count(text) <= self.max_tokens

    def _captured(self) -> list[_Section]:
        rank = {key: n for n, key in enumerate(CAPTURED_ORDER)}
        return sorted((s for s in self.sections if s.entries), key=lambda s: rank[s.key])

    def fit(self) -> str:
        if self.fits(self.compose()):
            return self.compose()
        if self._cut_sections(LOW_VALUE_ORDER):
            return self.compose()
        captured = self._captured()
        for section in captured:
            section.compact = True
            section.render_entries()
        if self.fits(self.compose()) or self._cut_sections(CONTEXT_ORDER):
            return self.compose()
        for cap in WORD_CAPS:
            for section in captured:
                section.word_cap = cap
                section.render_entries()
            if self.fits(self.compose()):
                return self.compose()
        if self._keep_most(captured) or self._cut_sections(LAST_ORDER) or self._keep_most(captured):
            return self.compose()
        while True:
            candidates = [s for s in self.visible() if not s.truncated and s.body.strip()]
            if not candidates:
                break
            indexed = [(self.count(s.text()), i, s) for i, s in enumerate(self.visible()) if s in candidates]
            victim = max(indexed, key=lambda t: (t[0], t[1]))[2]
            self.shortened.append(victim.label)
            if self._shrink(victim):
                return self.compose()
        return self._hard_cut()

    def _cut_sections(self, order: Sequence[str]) -> bool:
        """Drop the sections in ``order`` one by one; True once the brief fits.

        When dropping a section is enough, part of it fits: it is shortened as little as needed instead.
        """
        for key in order:
            victim = next((s for s in self.sections if s.key == key), None)
            if victim is None:
                continue
            at = self.sections.index(victim)
            self.sections.remove(victim)
            self.omitted.append(victim.label)
            if self.fits(self.compose()):
                self.omitted.remove(victim.label)
                self.sections.insert(at, victim)
                self.shortened.append(victim.label)
                if self._shrink(victim):
                    return True
                self.shortened.remove(victim.label)
                self.sections.remove(victim)
                self.omitted.append(victim.label)
                return True
        return False

    def _keep_most(self, captured: Sequence[_Section]) -> bool:
        """Show the most captured records that fit (in ``CAPTURED_ORDER``, then id); True when some count fits."""
        total = sum(len(s.entries) for s in captured)

        def show(kept: int) -> bool:
            for section in captured:
                section.shown = min(len(section.entries), kept)
                kept -= section.shown
                section.render_entries()
            return self.fits(self.compose())

        lo, hi, best = 0, total, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if show(mid):
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        show(0 if best is None else best)
        return best is not None

    def _shrink(self, section: _Section) -> bool:
        """Cut ``section``'s body at the longest word boundary that fits; True when the whole text fits."""
        section.truncated = True
        full = section.body
        keep = len(TITLE_PREFIX.rstrip()) if section.key == "title" and full.startswith(TITLE_PREFIX) else 0
        cuts = sorted({i for i, ch in enumerate(full) if ch.isspace() and i >= keep} | {keep})
        lo, hi, best = 0, len(cuts) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            section.body = full[: cuts[mid]].rstrip() + ELLIPSIS
            if self.fits(self.compose()):
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        section.body = (full[: cuts[best]] if best is not None else full[:keep]).rstrip() + ELLIPSIS
        return best is not None

    def _hard_cut(self) -> str:
        """Only for budgets too small for even shortened sections: cut the text before the marker.

        The marker and the (shortened) freshness section always survive, so the brief still ends
        with what to verify.
        """
        tail = [s for s in self.visible() if s.key == "freshness"]
        head = _assemble([s for s in self.visible() if s.key != "freshness"]).rstrip()
        end = _assemble([_marker(self.short_id, self.omitted, self.shortened), *tail])
        lo, hi, best = 0, len(head), None
        while lo <= hi:
            mid = (lo + hi) // 2
            candidate = f"{head[:mid].rstrip()}{ELLIPSIS}\n\n{end}"
            if self.fits(candidate):
                best, lo = candidate, mid + 1
            else:
                hi = mid - 1
        if best is None:
            raise BriefTooSmall(
                f"a resume brief cannot fit in {self.max_tokens} tokens with this counter; {RAISE_BUDGET}"
            )
        return best


class BriefTooSmall(UserInputError):
    """Not even the marker and the freshness section fit in ``max_tokens`` under this counter. The CLI shows
    the message; the compaction cycle falls back to ``pointer_brief`` instead (it must not fail)."""


def pointer_brief(record: HandoffRecord, count_tokens: Callable[[str], int] | None,
                  counter_source: str | None) -> Brief:
    """The smallest brief: which handoff holds the state and how to read it, for a budget no brief fits."""
    text = (f"Handoff {record.short_id} holds this work's state; its brief did not fit the brief budget. "
            f"Call baton_resume with ref {record.short_id} to read it.")
    count = count_tokens or estimate_tokens_rough
    return Brief(text, count(text), True, counter_source or ROUGH_COUNTER_SOURCE)


class _CounterFailed(Exception):
    """The caller's counter raised or returned something that is not a token count."""


def _checked_counter(count: Callable[[str], int]) -> Callable[[str], int]:
    def checked(text: str) -> int:
        try:
            tokens = count(text)
        except Exception as exc:
            raise _CounterFailed(type(exc).__name__) from exc
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise _CounterFailed(f"returned {type(tokens).__name__}")
        return tokens

    return checked


def _fit(record: HandoffRecord, freshness: FreshnessLike | None, verbose: bool, max_tokens: int,
         count: Callable[[str], int], source: str, continuity: bool = True) -> Brief:
    fitter = _Fitter(record.short_id, max_tokens, count, _build_sections(record, freshness, verbose, continuity))
    text = fitter.fit()
    omitted, shortened = fitter.labels()
    return Brief(
        text=text,
        tokens=count(text),
        truncated=bool(omitted or shortened),
        counter_source=source,
        omitted=tuple(omitted),
        shortened=tuple(shortened),
    )


def render_brief(
    record: HandoffRecord,
    *,
    freshness: FreshnessLike | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    count_tokens: Callable[[str], int] | None = None,
    verbose: bool = False,
    counter_source: str | None = None,
    continuity: bool = True,
) -> Brief:
    """Render the resume brief for ``record`` within ``max_tokens`` as measured by ``count_tokens``.

    ``continuity=False`` leaves out the record's compacted-detail section (the compaction cycle renders
    its own, with the recall line and shares of the budget).

    ``counter_source`` names the counter in the result (e.g. ``tiktoken:o200k_base``); it defaults
    to the rough estimator's name, or ``"caller"`` when a counter is given without a name.
    Fail-open: if the caller's counter raises or returns a non-count, the brief is fitted with the
    rough estimate instead and ``counter_source`` says so (with the exception type only). Pass an
    exact counter or none: a rough count plus a safety margin would make every brief look over budget.
    """
    if max_tokens < MIN_MAX_TOKENS:
        raise UserInputError(
            f"brief max_tokens must be at least {MIN_MAX_TOKENS} (got {max_tokens}); {RAISE_BUDGET}"
        )
    if count_tokens is None:
        return _fit(record, freshness, verbose, max_tokens, estimate_tokens_rough, ROUGH_COUNTER_SOURCE, continuity)
    source = counter_source or "caller"
    try:
        return _fit(record, freshness, verbose, max_tokens, _checked_counter(count_tokens), source, continuity)
    except _CounterFailed as failure:
        fallback = f"{ROUGH_COUNTER_SOURCE} (fallback: {source} failed, {failure})"
        return _fit(record, freshness, verbose, max_tokens, estimate_tokens_rough, fallback, continuity)


def _md_list(title: str, rows: Iterable[str]) -> list[str]:
    rows = list(rows)
    return [f"## {title}", *(f"- {row}" for row in rows), ""] if rows else []


def render_markdown(record: HandoffRecord) -> str:
    """The whole record as Markdown (``show --format md``): no budget, every field, record order kept.

    Unknown (extension) fields are not rendered; ``show --format json`` is the lossless view.
    """
    repo = record.project.repository
    lineage = record.lineage
    validation = record.validation
    automation = record.automation
    out = [
        f"# {_inline(record.work.title)}",
        "",
        f"- id: {record.id} (short {record.short_id})",
        f"- status: {record.status}" + (f" (flags: {', '.join(record.flags)})" if record.flags else ""),
        f"- created: {record.created_at}; updated: {record.updated_at}",
        f"- project: {record.project.root_hint} ({record.project.id})",
    ]
    if repo is not None:
        dirty = "unknown" if repo.dirty is None else ("dirty" if repo.dirty else "clean")
        where = " ".join(part for part in (repo.vcs, repo.remote_hint) if part) or "unknown"
        out.append(f"- repository: {where}, head {_head(repo.head)}, {dirty}")
    origin = record.origin
    out.append(f"- origin: {origin.harness}" + (f", model {origin.model}" if origin.model else ""))
    out.append(
        f"- lineage: {lineage.relation}"
        + (f" of {', '.join(lineage.parents)}" if lineage.parents else "")
        + (f"; branch label {_inline(lineage.branch_label)}" if lineage.branch_label else "")
        + (f"; merge basis {', '.join(lineage.merge_basis)}" if lineage.merge_basis else "")
    )
    extra = automation.model_extra or {}
    used = extra.get("inputs_used")
    unused = extra.get("inputs_unused")
    out.append(
        f"- automation: {automation.trigger}"
        + ("" if automation.score is None else f", score {automation.score}")
        + (f"; {'; '.join(automation.reasons)}" if automation.reasons else "")
        + (f"; inputs used: {', '.join(f'{k} {v}' for k, v in sorted(used.items()))}"
           if isinstance(used, dict) and used else "")
        + (f"; unused: {', '.join(map(str, unused))}" if isinstance(unused, list) and unused else "")
    )
    out += ["", "## Objective", _block(record.work.objective), ""]
    out += _md_list("Scope", (_inline(s) for s in record.work.scope))
    out += _md_list("Constraints", (_inline(c) for c in record.work.constraints))
    out += _md_list("Definition of done", (_inline(d) for d in record.work.definition_of_done))
    out += ["## Current state", _block(record.summary.current_state), ""]
    if record.summary.why_it_matters:
        out += ["## Why it matters", _block(record.summary.why_it_matters), ""]
    out += _md_list("Completed", (_inline(c) for c in record.summary.completed))
    out += _md_list(
        "Decisions",
        (
            f"{d.id}: {_inline(d.decision)}"
            + (f" (why: {_inline(d.rationale)})" if d.rationale else "")
            + (f"; alternatives: {', '.join(_inline(a) for a in d.alternatives_considered)}"
               if d.alternatives_considered else "")
            + (f"; evidence {', '.join(d.evidence_ids)}" if d.evidence_ids else "")
            + f"; made {d.made_at}"
            for d in record.decisions
        ),
    )
    out += _md_list(
        "Artifacts",
        (
            f"{_inline(a.path)} ({a.role}{', sensitive' if a.sensitive else ''})"
            + (f": {_inline(a.description)}" if a.description else "")
            + (f"; revision {a.revision}" if a.revision else "")
            + (f"; hash {a.content_hash}" if a.content_hash else "")
            for a in record.artifacts
        ),
    )
    out += _md_list(
        "Evidence",
        (
            f"{e.id} ({e.type}): {_inline(e.claim)}"
            + (f"; result: {_inline(e.result)}" if e.result else "")
            + (f"; ref: {_inline(e.ref)}" if e.ref else "")
            + (f"; digest {e.digest}" if e.digest else "")
            + f"; captured {e.captured_at}"
            for e in record.evidence
        ),
    )
    out += _md_list(
        "Open items",
        (
            _item_line(i) + (f"; done when: {_inline(i.acceptance_check)}" if i.acceptance_check else "")
            for i in order_open_items(record)
        ),
    )
    out += _md_list(
        "Risks",
        (
            f"[{r.severity}] {_inline(r.description)}"
            + (f" (mitigation: {_inline(r.mitigation)})" if r.mitigation else "")
            for r in record.risks
        ),
    )
    out += _md_list(
        "Do not retry",
        (
            f"{f.id}: {_inline(f.attempt)}"
            + (f" (outcome: {_inline(f.outcome)})" if f.outcome else "")
            + (f"; evidence {', '.join(f.evidence_ids)}" if f.evidence_ids else "")
            for f in record.failed_attempts
        ),
    )
    validated_at = f" ({validation.validated_at})" if validation.validated_at else ""
    out += [f"## Validation: {validation.status}{validated_at}"]
    out += [f"- {c.name}: {c.status}" + (f" ({_inline(c.detail)})" if c.detail else "") for c in validation.checks]
    if validation.freshness is not None:
        f = validation.freshness
        out.append(
            f"- freshness: {'STALE' if f.stale else 'fresh'} (head {_head(f.git_head_at_capture)} at capture, "
            f"{_head(f.git_head_now)} when checked)"
        )
    out.append("")
    out += _md_list("Redactions", (f"{r.field}: {r.reason} -> {r.replacement}" for r in record.redactions))
    return "\n".join(out).rstrip() + "\n"
