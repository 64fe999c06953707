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
