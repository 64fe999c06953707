"""Write ``schemas/handoff-v0.1.json`` from the pydantic record model.

Why generated: the model is the single source of truth; the checked-in schema is for other
tools and languages. ``--check`` exits 1 when the file has drifted from the model (CI / tests).

    python scripts/generate_schema.py          # regenerate
    python scripts/generate_schema.py --check  # verify only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from baton_engine.handoff.model import SCHEMA_ID, HandoffRecord

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "handoff-v0.1.json"
REGENERATE_COMMAND = "python scripts/generate_schema.py"


def render_schema() -> str:
    """The schema text: deterministic (sorted keys, fixed indent, trailing newline)."""
    schema = HandoffRecord.model_json_schema(by_alias=True, mode="serialization")
    # Baton extensions are always written by us but optional for other writers of v0.1.
    schema["required"] = [name for name in schema["required"] if name != "failed_attempts"]
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "Baton handoff v0.1",
        "description": "Generated from baton_engine.handoff.model by scripts/generate_schema.py; do not edit.",
    }
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail (exit 1) if the file differs from the model")
    args = parser.parse_args(argv)
    expected = render_schema()
    if args.check:
        current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
        if current != expected:
            print(f"{SCHEMA_PATH} is out of date; run: {REGENERATE_COMMAND}", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(expected, encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
