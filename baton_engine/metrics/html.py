"""The report page: one self-contained HTML file (inline CSS, inline SVG, no script, no network) that opens from
disk. A Content-Security-Policy forbids every fetch, so the page cannot reach anything even if a value did.

Why no JavaScript: the page must render the same in any browser, offline, years later; tooltips are SVG
``<title>`` elements and the numbers sit in tables below the chart. Every value is escaped. The chart's elements
carry ``data-*`` attributes (request number, counts, compaction's handoff, prune's reclaimed tokens) so a test, or
a person with the inspector, reads the numbers the chart was drawn from.
"""

from __future__ import annotations

from html import escape
from typing import Any

WIDTH, HEIGHT = 960, 356
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 52
CSP = "default-src 'none'; style-src 'unsafe-inline'"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1000px;
color:#1d2430;padding:0 16px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.sub{color:#5b6574;margin:0 0 16px}
.verdict{font-size:17px;padding:10px 14px;border-radius:6px;margin:0 0 14px}
.ok{background:#e7f5ec;border-left:5px solid #2e8b57}.warn{background:#fff4e0;border-left:5px solid #d98a00}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:0 0 8px}
.card{border:1px solid #d9dee5;border-radius:6px;padding:8px 12px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#5b6574;font-size:12px}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{border-bottom:1px solid #e6e9ee;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f4f6f9;position:sticky;top:0}td.l,th.l{text-align:left}
.scroll{max-height:420px;overflow:auto;border:1px solid #e6e9ee}
svg text{font-size:11px;fill:#5b6574}.legend span{margin-right:14px;font-size:12px}
.sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
.none{color:#5b6574}
"""


def render(data: dict[str, Any]) -> str:
    """The whole page for ``metrics.read.report_data``'s dict."""
    summary = data["summary"]
    header = data["header"]
    started = escape(str(header.get("started", "?")))
    title = f"Baton session {escape(str(data.get('session')))}"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title><style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="sub">started {started} · model {escape(str(header.get("model") or "?"))} · '
        f'{escape(str(header.get("adapter") or ""))} · baton {escape(str(header.get("baton_version") or "?"))}</p>',
        _verdict(summary), _cards(summary),
        "<h2>Prompt size per request</h2>", _legend(), _chart(data),
        "<h2>Compactions</h2>", _compactions(data["compactions"]),
        "<h2>Prunes</h2>", _prunes(data),
        "<h2>Counting mode changes</h2>", _changes(data["mode_changes"], "mode", with_reason=True),
        "<h2>Breaker events</h2>", _changes(data["breaker_events"], "breaker"),
        "<h2>Route verdict</h2>", _route(data["route_check"]),
        "<h2>Refusals</h2>", _refusals(data["refusals"]),
        "<h2>Requests</h2>", _requests(data["requests"]),
        _footer(data), "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _n(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}"
    return "–" if value is None else escape(str(value))


def _problems(summary: dict[str, Any]) -> list[str]:
    found = []
    for key, label in (("over_window", "over the window"), ("refusals", "refused by the provider"),
                       ("degraded_compactions", "degraded compactions"), ("breaker_events", "breaker events"),
                       ("short_caps", "short replies forced")):
        if summary.get(key):
            found.append(f"{summary[key]} {label}")
    if summary.get("route_verdict") == "calibrated":
        found.append("counts disagree with the provider (calibrated)")
    return found


def _verdict(summary: dict[str, Any]) -> str:
    problems = _problems(summary)
    peak = (f"peak {_n(summary['peak_prompt'])} of {_n(summary['peak_window'])} tokens "
            f"({summary['peak_share'] * 100:.0f}%)") if summary.get("peak_prompt") is not None else "no counted prompt"
    head = (f"{summary['requests']} requests, {summary['compactions']} compactions, {peak}; "
            f"counting {_n(summary.get('counting_mode'))}")
    tail = "; ".join(problems) if problems else "no request over the window, no refusal, no degraded compaction"
    return f'<p class="verdict {"warn" if problems else "ok"}" id="verdict">{head} — {escape(tail)}.</p>'


def _cards(summary: dict[str, Any]) -> str:
    cards = _session_cards(summary) + _cache_cards(summary)
    return '<div class="cards">' + "".join(
        f'<div class="card" id="card-{key}"><span>{escape(label)}</span><b>{_n(value)}</b>'
        f'<span>{escape(note)}</span></div>' for key, label, value, note in cards) + "</div>"


def _session_cards(summary: dict[str, Any]) -> list[tuple[str, str, Any, str]]:
    return [("requests", "requests", summary["requests"], f"+{summary['auxiliary_requests']} auxiliary"),
            ("compactions", "compactions", summary["compactions"], f"{summary['handoffs']} handoffs"),
            ("peak", "peak prompt", summary.get("peak_prompt"),
             f"of {_n(summary.get('peak_window'))}" if summary.get("peak_window") else ""),
            ("counting", "counting", summary.get("counting_mode"), f"{summary['mode_changes']} changes"),
            ("route", "route", summary.get("route_verdict") or "unconfirmed",
             f"ratio {_n(summary.get('route_ratio'))}" if summary.get("route_ratio") else "no usage reported"),
            ("tools", "Baton's tool schemas", summary.get("tool_schema_tokens"),
             "tokens on every request" if summary.get("tool_schema_tokens") is not None else "not measured"),
            ("refusals", "refusals", summary["refusals"], f"{summary['breaker_events']} breaker events"),
            ("duration", "duration", f"{summary['duration_seconds']:.0f}s", f"{summary['caps_lowered']} caps lowered")]


NOT_REPORTED = "not reported by the route"


def _cache_cards(summary: dict[str, Any]) -> list[tuple[str, str, Any, str]]:
    """The prompt cache's account: what the provider was sent and read from its cache, what reclamation took out."""
    responses, cached = summary.get("responses") or 0, summary.get("responses_reporting_cache") or 0
    cache_note = f"{cached:,} of {responses:,} responses reported it" if cached else NOT_REPORTED
    committed, declined = summary.get("prunes_committed") or 0, summary.get("prunes_declined") or {}
    exact = summary.get("reclaimed_exact")
    return [("prompt-sent", "prompt tokens sent", summary.get("prompt_tokens"),
             f"{responses:,} responses reported" if responses else "no usage reported"),
            ("cache-read", "read from the cache", summary.get("cache_read_tokens"), cache_note),
            ("uncached", "uncached prompt tokens", summary.get("uncached_prompt_tokens"),
             "the prefill the provider did" if cached else NOT_REPORTED),
            ("reclaimed", "tokens reclaimed", summary.get("reclaimed_tokens"),
             "no prune logged" if summary.get("reclaimed_tokens") is None else "no prune committed" if exact is None
             else "every figure exact" if exact else "not every figure exact"),
            ("prunes", "prunes committed", committed,
             f"{sum(declined.values()):,} declined" + (": " + ", ".join(f"{reason} {n:,}" for reason, n in
                                                                      declined.items()) if declined else ""))]


COLORS = {"prompt": "#3b6fb6", "cap": "#c9d8ef", "reported": "#e0561b", "window": "#1d2430",
          "compaction": "#8a3ab9", "prune": "#2e8b57", "mode": "#d98a00", "breaker": "#c62828"}


def _legend() -> str:
    items = [("prompt", "Baton's count"), ("cap", "output cap sent"), ("reported", "provider's reported size"),
             ("window", "window"), ("compaction", "compaction"), ("prune", "prune committed"),
             ("mode", "counting mode change"), ("breaker", "breaker event")]
    return '<p class="legend">' + "".join(
        f'<span><i class="sw" style="background:{COLORS[key]}"></i>{escape(label)}</span>'
        for key, label in items) + "</p>"


def _chart(data: dict[str, Any]) -> str:
    requests = data["requests"]
    if not requests:
        return '<p class="none" id="chart-empty">No request was budgeted in this session.</p>'
    top = max([1] + [int(r.get("window") or 0) for r in requests]
              + [int(r.get("prompt") or 0) + int(r.get("cap_sent") or 0) for r in requests]
              + [int(r.get("reported") or 0) for r in requests])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / len(requests)
    bar = max(step * 0.7, 1.0)

    def y(tokens: int) -> float:
        return TOP + plot_h - plot_h * min(tokens, top) / top

    out = [f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
           f'role="img" aria-label="prompt size per request" data-requests="{len(requests)}" '
           f'data-compactions="{len(data["compactions"])}" data-prunes="{len(_committed_prunes(data))}">']
    for i in range(5):
        tokens = round(top * i / 4)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tokens):.1f}" y2="{y(tokens):.1f}" '
                   f'stroke="#eef0f3"/><text x="{LEFT - 6}" y="{y(tokens) + 4:.1f}" text-anchor="end">'
                   f'{tokens:,}</text>')
    index = {r["n"]: i for i, r in enumerate(requests)}
    window_points = []
    for i, r in enumerate(requests):
        x = LEFT + i * step + (step - bar) / 2
        prompt, cap = int(r.get("prompt") or 0), int(r.get("cap_sent") or 0)
        tip = (f"request {r['n']}: Baton {_n(r.get('prompt'))} ({r.get('mode')}), reported {_n(r.get('reported'))},"
               f" window {_n(r.get('window'))}, cap {_n(r.get('cap_asked'))} → {_n(r.get('cap_sent'))}")
        out.append(f'<rect class="cap" x="{x:.1f}" y="{y(prompt + cap):.1f}" width="{bar:.1f}" '
                   f'height="{y(prompt) - y(prompt + cap):.1f}" fill="{COLORS["cap"]}"/>')
        out.append(f'<rect class="request" data-request="{r["n"]}" data-prompt="{prompt}" '
                   f'data-reported="{r.get("reported") or ""}" data-window="{r.get("window") or ""}" '
                   f'data-cap="{cap}" x="{x:.1f}" y="{y(prompt):.1f}" width="{bar:.1f}" '
                   f'height="{TOP + plot_h - y(prompt):.1f}" fill="{COLORS["prompt"]}"><title>{escape(tip)}</title>'
                   f'</rect>')
        if isinstance(r.get("reported"), int):
            out.append(f'<circle class="reported" data-request="{r["n"]}" cx="{x + bar / 2:.1f}" '
                       f'cy="{y(r["reported"]):.1f}" r="{min(max(bar / 4, 2), 4):.1f}" fill="{COLORS["reported"]}"/>')
        window_points.append(f"{LEFT + i * step:.1f},{y(int(r.get('window') or top)):.1f} "
                             f"{LEFT + (i + 1) * step:.1f},{y(int(r.get('window') or top)):.1f}")
    out.append(f'<polyline class="window" points="{" ".join(window_points)}" fill="none" '
               f'stroke="{COLORS["window"]}" stroke-width="1.5" stroke-dasharray="6 3"/>')
    for c in data["compactions"]:
        i = index.get(c.get("request"), -1)  # after request i: before the next one
        x = LEFT + (i + 1) * step
        tip = (f"compaction {c['n']}: {_n(c.get('before'))} → {_n(c.get('after'))} tokens, kept {_n(c.get('kept'))},"
               f" stubbed {_n(c.get('stubbed'))}, recallable {_n(c.get('recallable'))}, handoff "
               f"{_n(c.get('short_id'))}{' degraded ' + str(c['degraded']) if c.get('degraded') else ''}")
        handoff = escape(str(c.get("handoff") or ""))
        out.append(f'<line class="compaction" data-compaction="{c["n"]}" data-handoff="{handoff}"'
                   f' x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 12}" y2="{TOP + plot_h}" stroke="{COLORS["compaction"]}" '
                   f'stroke-width="2" stroke-dasharray="4 2"><title>{escape(tip)}</title></line>')
        out.append(f'<text x="{x + 3:.1f}" y="{TOP - 4}" fill="{COLORS["compaction"]}">C{c["n"]}</text>')
    out += _prune_marks(_committed_prunes(data), index, step, plot_h)
    for kind, changes in (("mode", data["mode_changes"]), ("breaker", data["breaker_events"])):
        for change in changes:
            i = index.get(change["request"], 0)
            cx, cy = LEFT + i * step + step / 2, TOP + plot_h + (12 if kind == "mode" else 24)
            tip = f"request {change['request']}: {kind} {change.get('from')} → {change.get('to')}"
            out.append(f'<path class="{kind}-change" data-request="{change["request"]}" '
                       f'd="M{cx - 5:.1f},{cy + 4:.1f} L{cx:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy + 4:.1f} Z" '
                       f'fill="{COLORS[kind]}"><title>{escape(tip)}</title></path>')
    out.append(f'<text x="{LEFT}" y="{HEIGHT - 2}">request 1</text>'
               f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 2}" text-anchor="end">request {requests[-1]["n"]}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _committed_prunes(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The committed prunes, numbered as the page shows them (P1, P2, ...)."""
    return [{**prune, "number": i} for i, prune in
            enumerate((p for p in data.get("prunes") or [] if p.get("committed") is True), start=1)]


def _prune_marks(prunes: list[dict[str, Any]], index: dict[Any, int], step: float, plot_h: float) -> list[str]:
    """A green line after the request each committed prune followed (it rewrote the next request), like a
    compaction's, labelled above the compactions' labels."""
    out = []
    for p in prunes:
        x = LEFT + (index.get(p.get("request"), -1) + 1) * step
        tip = (f"prune P{p['number']}: {_n(p.get('before'))} → {_n(p.get('after'))} tokens, reclaimed "
               f"{_n(p.get('reclaimed'))} ({'exact' if p.get('exact') else 'not exact'}), {_n(p.get('messages'))} "
               f"messages from message {_n(p.get('first_changed'))}")
        out.append(f'<line class="prune" data-prune="{p["number"]}" data-reclaimed="{p.get("reclaimed") or ""}"'
                   f' x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 24}" y2="{TOP + plot_h}" stroke="{COLORS["prune"]}" '
                   f'stroke-width="2" stroke-dasharray="2 2"><title>{escape(tip)}</title></line>')
        out.append(f'<text x="{x + 3:.1f}" y="{TOP - 16}" fill="{COLORS["prune"]}">P{p["number"]}</text>')
    return out


def _table(table_id: str, columns: list[tuple[str, str]], rows: list[list[Any]], empty: str) -> str:
    if not rows:
        return f'<p class="none" id="{table_id}">{escape(empty)}</p>'
    head = "".join(f'<th class="{cls}">{escape(name)}</th>' for name, cls in columns)
    body = "".join("<tr>" + "".join(f'<td class="{cls}">{_n(v)}</td>' for v, (_name, cls) in zip(row, columns,
                                                                                                strict=True))
                   + "</tr>" for row in rows)
    return (f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            "</table></div>")


def _compactions(compactions: list[dict[str, Any]]) -> str:
    columns = [("#", ""), ("after request", ""), ("before", ""), ("after", ""), ("kept", ""), ("stubbed", ""),
               ("recallable", ""), ("handoff", "l"), ("status", "l"), ("validation", "l"), ("degraded", "l"),
               ("ms", "")]
    rows = [[c["n"], c.get("request"), c.get("before"), c.get("after"), c.get("kept"), c.get("stubbed"),
             c.get("recallable"), c.get("short_id"), c.get("status"), c.get("validation"), c.get("degraded"),
             c.get("ms")] for c in compactions]
    return _table("compactions", columns, rows, "No compaction in this session.")


def _prunes(data: dict[str, Any]) -> str:
    """The committed prunes, then the declined ones by reason (a declined prune changed nothing: counted, not
    listed)."""
    columns = [("#", ""), ("after request", ""), ("before", ""), ("after", ""), ("reclaimed", ""), ("exact", "l"),
               ("messages", ""), ("first changed", ""), ("net", "")]
    rows = [[p["number"], p.get("request"), p.get("before"), p.get("after"), p.get("reclaimed"), p.get("exact"),
             p.get("messages"), p.get("first_changed"), p.get("net")] for p in _committed_prunes(data)]
    committed = _table("prunes", columns, rows, "No prune committed in this session.")
    declined = data["summary"].get("prunes_declined") or {}
    reasons = _table("prunes-declined", [("declined because", "l"), ("prunes", "")],
                     [[reason, n] for reason, n in declined.items()], "No prune declined.")
    return committed + "\n" + reasons


def _changes(changes: list[dict[str, Any]], what: str, *, with_reason: bool = False) -> str:
    columns = [("at request", ""), ("from", "l"), ("to", "l")] + ([("reason", "l")] if with_reason else [])
    rows = [[c["request"], c.get("from"), c.get("to")] + ([c.get("reason")] if with_reason else []) for c in changes]
    return _table(f"{what}-changes", columns, rows, f"No {what} change: the same all session.")


def _route(check: dict[str, Any] | None) -> str:
    if not check:
        return '<p class="none" id="route">No response reported a prompt size.</p>'
    columns = [("verdict", "l"), ("after request", ""), ("last counted", ""), ("last reported", ""), ("ratio", ""),
               ("responses seen", ""), ("mismatches", ""), ("advice", "l")]
    row = [check.get("verdict"), check.get("request"), check.get("last_counted"), check.get("last_reported"),
           check.get("ratio"), check.get("requests_seen"), check.get("mismatches"), check.get("advice")]
    return _table("route", columns, [row], "")


def _refusals(refusals: list[dict[str, Any]]) -> str:
    columns = [("after request", ""), ("kind", "l"), ("window", ""), ("prompt", "")]
    rows = [[r.get("request"), r.get("kind"), r.get("window"), r.get("prompt")] for r in refusals]
    return _table("refusals", columns, rows, "No context-length refusal.")


def _requests(requests: list[dict[str, Any]]) -> str:
    start = requests[0].get("t") if requests else None
    columns = [("#", ""), ("at s", ""), ("Baton", ""), ("mode", "l"), ("source", "l"), ("reported", ""),
               ("gap", ""), ("window", ""), ("window from", "l"), ("cap asked", ""), ("cap sent", ""),
               ("action", "l"), ("breaker", "l"), ("ms", "")]
    rows = []
    for r in requests:
        gap = r["reported"] - r["prompt"] if isinstance(r.get("reported"), int) and isinstance(r.get("prompt"),
                                                                                                int) else None
        at = round(r["t"] - start, 1) if isinstance(r.get("t"), (int, float)) and start is not None else None
        rows.append([r["n"], at, r.get("prompt"), r.get("mode"), r.get("source"), r.get("reported"), gap,
                     r.get("window"), r.get("window_source"), r.get("cap_asked"), r.get("cap_sent"),
                     r.get("action"), r.get("breaker"), r.get("ms")])
    return _table("requests", columns, rows, "No request was budgeted in this session.")


def _footer(data: dict[str, Any]) -> str:
    rotated = data.get("earlier_requests_rotated_out") or 0
    notes = [f"session {escape(str(data.get('session')))}", f"log {escape(str(data.get('log')))}"]
    if rotated:
        notes.append(f"{rotated} earlier requests rotated out of the bounded log")
    if data.get("unreadable_lines"):
        notes.append(f"{data['unreadable_lines']} unreadable lines skipped")
    skipped = data.get("skipped") or {}
    if skipped.get("unknown_events"):
        notes.append(f"{skipped['unknown_events']} events of an unknown kind skipped")
    for key, what in (("wrong_type_fields", "fields of the wrong type read as absent"),
                      ("unknown_fields", "unknown fields skipped")):
        if skipped.get(key):
            notes.append(f"{what}: {escape(', '.join(f'{name} ({n})' for name, n in skipped[key].items()))}")
    return f'<p class="sub" style="margin-top:24px">{" · ".join(notes)}</p>'
