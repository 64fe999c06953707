"""Hermes' own host (``hermes/host.HermesHost``): stateless, so an engine's deep copy (Hermes 0.19's per-agent
copy) keeps the object. Importing it imports no Hermes: this runs without Hermes installed."""

from __future__ import annotations

import copy

from baton_engine.agent.project import Project
from baton_engine.agent.requests import AgentWindow, RequestBudgeter, ScanAhead
from baton_engine.hermes.host import HermesHost


def test_a_copy_of_the_budgeter_keeps_a_stateless_host() -> None:
    host = HermesHost()
    assert copy.deepcopy(host) is host and copy.copy(host) is host
    requests = RequestBudgeter(host, AgentWindow(0.75), Project(host), ScanAhead())
    copied = copy.deepcopy(requests)
    assert copied.host is host and copied.project.host is host
    assert copied.memos is not requests.memos and copied.memos.computed() == 0

