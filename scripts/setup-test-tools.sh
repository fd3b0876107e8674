#!/usr/bin/env bash
# Install and build what the test suite needs beyond .venv (run by scripts/test.sh after scripts/setup.sh):
#  - the local Neo4j 5.26 launcher: Maven fetches Neo4j from Maven Central into ~/.m2 and builds it once
#    (~1 min and ~200 MB the first time; cached after) -- needs Java 17+ and Maven;
#  - the Cypher linter (tools/cypher-lint: Neo4j's @neo4j-cypher/language-support from npm, pinned);
#  - the Neo4j Browser check (tools/browser-check: Debian's chromium via apt-get when missing, puppeteer-core).
# Idempotent: each step is a no-op when already done. Output goes to .venv/setup-test-tools.log.
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
LOG=.venv/setup-test-tools.log
: > "$LOG"
. scripts/step.sh
step "building the local Neo4j 5.26 launcher (Maven Central; first time ~1 min)" \
  python -c "from harness_g.graph.stores.local_neo4j import build_launcher; build_launcher()"
step "installing the Cypher linter (npm)" bash tools/cypher-lint/setup.sh
step "installing the Neo4j Browser check (chromium, puppeteer-core)" bash tools/browser-check/setup.sh
