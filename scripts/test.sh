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
# Each worker's torch/OpenMP pool gets its share of the cores (cores / workers, at least 1) unless OMP_NUM_THREADS is
# set: on CI's 2 cores two workers of 2 threads each oversubscribe them (measured: the TRL and SFT test files run side
# by side took 255 s and 241 s with default threads, 222 s and 138 s with one thread each).
# --durations: the 25 slowest test phases close the log, so a slow CI run says where its time went.
workers=${HARNESS_G_TEST_WORKERS:-2}
if [ -z "${OMP_NUM_THREADS:-}" ] && [ "$workers" -gt 0 ] 2>/dev/null; then
  cores=$(python -c 'import os; print(len(os.sched_getaffinity(0)))')
  export OMP_NUM_THREADS=$(( cores / workers > 0 ? cores / workers : 1 ))
fi
python -m pytest -q -n "$workers" --dist loadfile --durations 25 "$@"
