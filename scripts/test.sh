#!/usr/bin/env bash
# Set up .venv and the test tools, then run the whole test suite: real FalkorDB and Neo4j processes
# (Neo4j 5.26 from Maven Central, started by the tests themselves), real spaCy/MiniLM models, headless
# Chromium for Neo4j Browser. Needs Python >= 3.10, Java 17 + Maven, Node.js/npm. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-test-tools.sh
. .venv/bin/activate
# Two pytest-xdist workers, each taking whole test files (--dist loadfile), so CI's two cores are both busy: each worker
# starts its own session fixtures (a FalkorDB and a Neo4j on free loopback ports); the real test graphs are built once
# per run by the first worker to ask and copied by the other (tests/graph_fixtures.py).
# HARNESS_G_TEST_WORKERS=N runs N workers; 0 runs the suite in this one process (as -n 0 among the arguments does).
# --durations: the 25 slowest test phases close the log, so a slow CI run says where its time went.
python -m pytest -q -n "${HARNESS_G_TEST_WORKERS:-2}" --dist loadfile --durations 25 "$@"
