#!/usr/bin/env bash
# Head-to-head benchmarks in one command: builds a venv with this checkout + the three backends +
# hermes-agent 0.19.0 + incontext 0.0.5 + matplotlib, runs benchmarks/run.py (about 7 minutes on
# 2 cores, offline), then the soak benchmarks/compaction/soak.py (10,000 fuzzed compress() calls and 1,200
# SIGKILLs of store writers; about 5 minutes on a quiet machine, 32 at load ~7; not part of CI), and
# writes benchmarks/results/REPORT.md plus PNG plots from both.
#   scripts/bench.sh [--quick]        venv: $BATON_BENCH_VENV (default .venv-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${BATON_BENCH_VENV:-.venv-bench}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# one pip call, so the backends' baton-engine requirement resolves to this checkout
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    -e . -e backends/tiktoken -e backends/hf -e backends/vllm \
    "hermes-agent==0.19.0" "incontext==0.0.5" "matplotlib>=3.8" "pytest>=8" "hypothesis>=6.100"  # pytest: the real-loop helpers; hypothesis: the soak
"$VENV/bin/python" -m pip check
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONHASHSEED=0
"$VENV/bin/python" benchmarks/run.py "$@"
exec "$VENV/bin/python" benchmarks/compaction/soak.py "$@"  # re-renders REPORT.md with its figures
