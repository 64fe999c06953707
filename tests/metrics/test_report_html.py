"""The report page: self-contained (no script, no fetch allowed), every value escaped, the chart's elements
counted from the data."""

from __future__ import annotations

from pathlib import Path

from baton_engine.metrics import html, read
from baton_engine.metrics.log import MetricsLog
from batontest.hermes_home import initialised_project
from batontest.metrics_logs import RETENTION

HOSTILE = '<script>alert("x")</script>'


def session_data(tmp_path: Path) -> dict:
    project = initialised_project(tmp_path / "project")
    log = MetricsLog.start(project, session_id="s", header={"model": HOSTILE, "owner": None}, retention=RETENTION)
    for n, prompt in enumerate((100, 400, 150), start=1):
        log.emit("request", prompt=prompt, mode="exact", source=HOSTILE, window=1000, cap_asked=900,
                 cap_sent=min(900, 1000 - prompt), action="lower_cap_to", breaker="closed")
        log.emit("usage", request=n, reported=prompt + 1, route_check={"verdict": "confirmed"})
    log.emit("compaction", request=2, before=400, after=120, kept=2, stubbed=0, recallable=5, handoff=HOSTILE,
             short_id="abcd1234", status="ready", validation="pass")
    return read.report_data(read.sessions(project / ".baton")[0])


def test_page_is_self_contained_and_escapes_every_value(tmp_path: Path) -> None:
    page = html.render(session_data(tmp_path))
    assert HOSTILE not in page and "&lt;script&gt;" in page
    assert "<script" not in page.lower()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page


def test_chart_has_one_bar_per_request_and_one_mark_per_compaction(tmp_path: Path) -> None:
    page = html.render(session_data(tmp_path))
    assert page.count('<rect class="request"') == 3
    assert page.count('<circle class="reported"') == 3
    assert page.count('<line class="compaction"') == 1
    assert 'data-requests="3" data-compactions="1"' in page
    assert "3 requests, 1 compactions, peak 400 of 1,000 tokens (40%)" in page


def test_same_data_same_bytes(tmp_path: Path) -> None:
    data = session_data(tmp_path)
    assert html.render(data) == html.render(data)


def test_an_empty_session_renders_without_a_chart(tmp_path: Path) -> None:
    project = initialised_project(tmp_path / "project")
    log = MetricsLog.start(project, session_id="s", header={}, retention=RETENTION)
    log.emit("aux_request", prompt=3)
    page = html.render(read.report_data(read.sessions(project / ".baton")[0]))
    assert 'id="chart-empty"' in page and "<svg" not in page


def pruned_session(tmp_path: Path, *, cache: bool) -> dict:
    """Four requests; a prune declined after the first, committed after the second and after the third."""
    project = initialised_project(tmp_path / "project")
    log = MetricsLog.start(project, session_id="s", header={"owner": None}, retention=RETENTION)
    for n, prompt in enumerate((600, 900, 700, 650), start=1):
        log.emit("request", prompt=prompt, mode="exact", window=1000, cap_sent=100)
        log.emit("usage", request=n, reported=prompt, cache_read=prompt // 2 if cache else None)
    log.emit("prune", request=1, committed=False, reason="below_min_reclaim")
    log.emit("prune", request=2, committed=True, reason="pays", before=950, after=700, reclaimed=250, exact=True,
             messages=2, first_changed=3, net=900)
    log.emit("prune", request=3, committed=True, reason="pays", before=760, after=650, reclaimed=110, exact=True,
             messages=1, first_changed=6, net=120)
    return read.report_data(read.sessions(project / ".baton")[0])


def test_the_chart_marks_each_committed_prune_and_the_cards_give_the_cache_account(tmp_path: Path) -> None:
    page = html.render(pruned_session(tmp_path, cache=True))
    assert page.count('<line class="prune"') == 2 and 'data-prunes="2"' in page  # the declined one changed nothing
    assert '<line class="prune" data-prune="1" data-reclaimed="250"' in page
    assert '<line class="prune" data-prune="2" data-reclaimed="110"' in page
    assert ">P1</text>" in page and ">P2</text>" in page
    assert ('<div class="card" id="card-prompt-sent"><span>prompt tokens sent</span><b>2,850</b>'
            '<span>4 responses reported</span></div>') in page
    assert '<div class="card" id="card-cache-read"><span>read from the cache</span><b>1,425</b>' in page
    assert '<div class="card" id="card-uncached"><span>uncached prompt tokens</span><b>1,425</b>' in page
    assert ('<div class="card" id="card-reclaimed"><span>tokens reclaimed</span><b>360</b>'
            '<span>every figure exact</span></div>') in page
    assert ('<div class="card" id="card-prunes"><span>prunes committed</span><b>2</b>'
            '<span>1 declined: below_min_reclaim 1</span></div>') in page
    assert page.count("<tr>", page.index('id="prunes"'), page.index('id="prunes-declined"')) == 3  # head + 2 rows
    assert "<td class=\"l\">below_min_reclaim</td><td class=\"\">1</td>" in page


def test_a_route_that_does_not_report_its_cache_is_said_so(tmp_path: Path) -> None:
    page = html.render(pruned_session(tmp_path, cache=False))
    assert ('<div class="card" id="card-cache-read"><span>read from the cache</span><b>–</b>'
            '<span>not reported by the route</span></div>') in page
    assert ('<div class="card" id="card-uncached"><span>uncached prompt tokens</span><b>–</b>'
            '<span>not reported by the route</span></div>') in page
    assert page.count('<line class="prune"') == 2  # the prunes do not depend on the cache's reports


def test_a_session_without_prunes_says_so(tmp_path: Path) -> None:
    page = html.render(session_data(tmp_path))
    assert 'data-prunes="0"' in page and '<line class="prune"' not in page
    assert 'id="prunes">No prune committed in this session.' in page and "No prune declined." in page
