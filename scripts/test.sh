#!/usr/bin/env bash
# Set up .venv and run the test suite (real FalkorDB process, real spaCy/MiniLM models).
# Neo4j tests run only when NEO4J_URI is set. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
python -m pytest -q "$@"
