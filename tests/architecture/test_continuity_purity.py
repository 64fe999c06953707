"""The continuity modules are pure core: importing them loads no Hermes module."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import baton_engine.recall, baton_engine.compaction.anchors, baton_engine.compaction.user_words
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"hermes_state", "agent", "tools", "run_agent", "hermes_cli"})
assert not loaded, loaded
"""


def test_no_hermes_module_is_imported() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
