"""The conversation tap gives each request to the conversation Hermes sent it for, from whichever thread sends it.

Hermes sends a turn's HTTP request from a bare worker thread (the interruptible API call) and titles a session on a
thread of its own that publishes the conversation itself; the gateway test's attribution stands on the tap reading
both right, so it is checked here against the real ``agent.portal_tags`` of the installed Hermes, in a subprocess
(Hermes never loads in the test process).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from batontest import conversation_tap
from batontest.hermes_run import require_hermes
from batontest.model_server import ModelServer, ScriptedPolicy

pytestmark = pytest.mark.hermes

SENDER = """
import runpy, sys, threading
runpy.run_path(sys.argv[1])["install"]()
import httpx
from agent.portal_tags import set_conversation_context

url = sys.argv[2]
body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

def post():
    httpx.post(url, json=body, timeout=60).raise_for_status()

def run(target):
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()

def titled():  # Hermes' title thread publishes its conversation itself
    set_conversation_context("conv-title")
    post()

set_conversation_context("conv-turn")
run(post)  # the turn's bare worker
run(lambda: run(post))  # a worker started by a worker
run(titled)
set_conversation_context(None)
post()  # outside any conversation
"""


def test_each_request_carries_the_conversation_of_the_thread_that_started_its_sender() -> None:
    require_hermes()
    with ModelServer(ScriptedPolicy([])) as server:
        subprocess.run([sys.executable, "-c", SENDER, conversation_tap.__file__,
                        f"{server.base_url}/chat/completions"], check=True, timeout=120)
    assert [r.conversation for r in server.requests] == ["conv-turn", "conv-turn", "conv-title",
                                                         conversation_tap.UNTAGGED]
