"""The gateway soak, scaled down for CI (issue 33, item 6): 3 sessions x 12 turns through one REAL ``hermes gateway
run`` (API server platform), with route switches through the API server's ``model_routes``, vision calls Hermes
sends through its auxiliary client, route A's tokenizer failing then recovering, replies cut at ``max_tokens``,
replies without usage, a stream chunk that is not JSON, and a new transcript per session half way
(``batontest.gateway_soak`` says how each is made). About two minutes on a busy 2-core machine (under four at load
25); the full size (16 x 200) is ``benchmarks/host/gateway_soak.py``, with the same driver and checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batontest.gateway_soak import GatewaySoak, SoakResult, SoakSize, baton_tracebacks, boundary_faults, secret
from batontest.hermes_gateway import require_gateway
from batontest.model_server import RecordedRequest

pytestmark = [pytest.mark.hermes, pytest.mark.timeout(900)]

SIZE = SoakSize(sessions=3, turns=12)  # every fault's turn (3 to 10) comes up in each session; one reset at 6


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory) -> SoakResult:
    require_gateway()
    result = GatewaySoak(tmp_path_factory.mktemp("soak"), SIZE).run()
    print(f"\n[gateway soak] {result.figures()}")
    return result


def test_every_fault_and_switch_was_exercised(soak: SoakResult) -> None:
    """The run did what it claims: both routes, auxiliary calls, the outage and its recovery, every reply fault,
    a reset per session (else the checks below would pass on a run that never met them)."""
    assert [p for p in soak.problems() if p.startswith("never exercised")] == []
    assert soak.routes["switches"] >= SIZE.sessions and soak.compactions > 0  # 5: 2, 1 and 2 (each ends on A)


def test_nothing_reaches_hermes(soak: SoakResult) -> None:
    """Every turn answered with the model's reply; no traceback through Baton's code and no fault caught at
    Baton's boundary in the gateway's logs."""
    assert len(soak.turns) == SIZE.sessions * SIZE.turns
    assert soak.errors == []
    assert soak.baton_tracebacks == [] and soak.boundary_faults == []


def test_no_session_sees_another_sessions_secret(soak: SoakResult) -> None:
    assert soak.own_secret == SIZE.sessions  # each session's own requests carry its secret: the check can see one
    assert soak.unattributed == []
    assert soak.crosstalk == []


def test_no_request_exceeds_its_routes_window(soak: SoakResult) -> None:
    assert soak.overflows == [] and soak.rejections == []


def test_every_sessions_metrics_log_is_there_and_reads_back(soak: SoakResult) -> None:
    metrics = soak.metrics
    assert metrics["sessions"] == soak.routes["transcripts"] and metrics["missing"] == 0
    assert metrics["bad_lines"] == 0 and metrics["headless"] == 0 and metrics["logs"] >= metrics["sessions"]


def test_the_gateways_memory_is_flat(soak: SoakResult) -> None:
    assert soak.rss_growth <= 0.10, soak.rss_kib


def test_the_checks_see_a_leak_and_a_traceback(tmp_path: Path) -> None:
    """The checks above can fail: a request of session 0 carrying session 1's secret is cross-talk, a request of
    no known conversation is unattributed, and a traceback through Baton's code in a gateway log is found."""
    soak = GatewaySoak(tmp_path, SIZE)
    soak.session_ids = {0: ["api-0"], 1: ["api-1"]}
    leak = RecordedRequest(7, "/v1/chat/completions", True, True, [{"role": "user", "content": secret(1)}], [],
                           None, None, conversation="api-0")
    stray = RecordedRequest(8, "/v1/chat/completions", False, False, [], [], None, None, conversation="-")
    assert soak._crosstalk([leak, stray]) == ["request #7 of session 0 carries session 1's secret"]
    assert soak._unattributed([leak, stray]) == ["#8 main=False tag=-"]
    hermes_only = 'Traceback (most recent call last):\n  File "/x/gateway/run.py", line 9, in g\nNameError: Path\n'
    through_baton = ('Traceback (most recent call last):\n  File "/x/baton_engine/hermes/engine.py", line 3, in f\n'
                     'ValueError\n')
    (tmp_path / "gateway.log").write_text(f"ok\n{hermes_only}baton_engine.hermes: fine\n{through_baton}"
                                          "baton update_from_response failed type=ValueError; did nothing\n",
                                          encoding="utf-8")
    assert baton_tracebacks(tmp_path) == [through_baton.rstrip("\n")]
    assert boundary_faults(tmp_path) == ["baton update_from_response failed type=ValueError"]
