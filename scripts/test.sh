#!/usr/bin/env bash
# Whole test suite on a fresh machine: installs tox into a private venv, then runs every tox environment.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-tox
# tox-uv: tox creates each environment and installs into it with uv (a fresh machine builds five of them)
.venv-tox/bin/python -m pip install -q --disable-pip-version-check "tox>=4.20" "tox-uv>=1.37"
exec .venv-tox/bin/tox "$@"
