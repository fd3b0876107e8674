#!/usr/bin/env bash
# Set up .venv and the test tools, then run the whole test suite: real FalkorDB and Neo4j processes
# (Neo4j 5.26 from Maven Central, started by the tests themselves), real spaCy/MiniLM models, headless
# Chromium for Neo4j Browser. Needs Python >= 3.10, Java 17 + Maven, Node.js/npm. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-test-tools.sh
. .venv/bin/activate
python -m pytest -q "$@"
