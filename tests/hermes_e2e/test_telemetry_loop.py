"""The REAL Hermes loop with Baton's Prometheus endpoint configured in config.yaml (``baton.prometheus_port``): a
scrape while Hermes runs gets the provider's usage of every request of the agent's loop under the GenAI
conventions' names, and Baton's own counted vs reported figures (the ``otel`` extra)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.prometheus", reason="the otel extra (tox env hermes installs it)")

from batontest.hermes_run import run_scenario  # noqa: E402
from batontest.model_server import ModelServer, ScriptedPolicy, tool_heavy_script  # noqa: E402

pytestmark = pytest.mark.hermes


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _samples(page: str, name: str, **labels: str) -> list[float]:
    """The values of the samples ``name`` whose labels include ``labels``."""
    found = []
    for line in page.splitlines():
        match = re.fullmatch(r"([a-z_]+)(\{.*\})? (\S+)", line)
        if match and match.group(1) == name and all(f'{key}="{value}"' in (match.group(2) or "")
                                                    for key, value in labels.items()):
            found.append(float(match.group(3)))
    return found


def _sample(page: str, name: str, **labels: str) -> float:
    """The value of the one sample ``name`` whose labels include ``labels``."""
    found = _samples(page, name, **labels)
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_a_scrape_of_a_running_hermes_gets_the_loops_usage(tmp_path: Path) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with ModelServer(ScriptedPolicy(tool_heavy_script(3), final_answer="done")) as server:
        run = run_scenario(tmp_path, server, turns=("Track the tasks.",), scrape=url,
                           baton={"tokenizer": {"backend": "rough"}, "prometheus_port": port})
    result = run.result
    assert result["status"]["telemetry"] == {"state": "on", "exporter": url}, run.stderr[-2000:]
    page = result["scraped"]
    answered = [r for r in server.main_requests if r.prompt_tokens is not None and r.status == 200]
    assert len(answered) >= 4
    model = {"gen_ai_request_model": server.model_name, "gen_ai_token_type": "input"}
    assert _sample(page, "gen_ai_client_token_usage_sum", **model) == sum(r.prompt_tokens for r in answered)
    assert _sample(page, "gen_ai_client_token_usage_count", **model) == len(answered)
    assert _sample(page, "gen_ai_client_token_usage_count", gen_ai_token_type="output") == len(answered)
    assert _sample(page, "gen_ai_client_operation_duration_seconds_count") == len(answered)
    # Baton counted every answered request (rough here) and the provider reported the same requests
    assert _sample(page, "baton_tokens_reported_total") == sum(r.prompt_tokens for r in answered)
    assert _sample(page, "baton_tokens_counted_total") > 0
    # every request of the loop was budgeted (by count mode: the rough estimate, then anchored on the usage)
    assert sum(_samples(page, "baton_requests_total", baton_request_kind="main")) >= len(answered)
