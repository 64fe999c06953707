"""Where planted secrets must never appear: every file under ``.baton/`` and every captured log line.

Users: ``tests/policy/test_secrets_cli.py`` (through the CLI) and ``tests/agent_core/test_secrets.py`` (through
one agent's Baton on a fake host)."""

from __future__ import annotations

from pathlib import Path

from batontest.secrets_corpus import SAMPLES, secret_values

assert len({s.name for s in SAMPLES}) >= 40, "the corpus must cover at least 40 secret formats"


def leaks_in_store(project: Path, secrets: tuple[str, ...] | None = None) -> list[str]:
    """``file: sample`` for every secret value found in any file under ``.baton/`` (bytes, any encoding)."""
    values = secrets if secrets is not None else secret_values()
    found = []
    for path in sorted((project / ".baton").rglob("*")):
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        escaped = text.replace("\\n", "\n").replace('\\"', '"').replace("\\/", "/")
        found += [f"{path.name}: {value[:12]}..." for value in values if value in text or value in escaped]
    return found


def leaks_in_text(text: str, secrets: tuple[str, ...] | None = None) -> list[str]:
    values = secrets if secrets is not None else secret_values()
    return [value[:12] + "..." for value in values if value in text]
