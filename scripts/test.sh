#!/usr/bin/env bash
# Whole test suite on a fresh machine: installs tox into a private venv, then runs every tox environment.
# With arguments, tox gets them as they are. Without, the two Hermes environments run side by side, then the others
# one after another: CI must stay under 60 minutes on 2 cores, and the Hermes suites wait on their model servers and
# subprocesses more than they compute (both side by side under two busy loops passed 5 runs in a row: issue 29).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-tox
# tox-uv: tox creates each environment and installs into it with uv (a fresh machine builds five of them)
.venv-tox/bin/python -m pip install -q --disable-pip-version-check "tox>=4.20" "tox-uv>=1.37"
tox=.venv-tox/bin/tox
if [ "$#" -gt 0 ]; then
    exec "$tox" "$@"
fi
side_by_side=(hermes hermes022)
others=$("$tox" list --no-desc 2>/dev/null | grep -vx -e "${side_by_side[0]}" -e "${side_by_side[1]}" | paste -sd, -)
# both Hermes environments' commands_pre install the browser test's Chromium: once, before they run at once
bash scripts/browser_env.sh
"$tox" run-parallel --parallel 2 --parallel-no-spinner -e "$(IFS=,; echo "${side_by_side[*]}")"
exec "$tox" run -e "$others"
