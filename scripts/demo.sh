#!/usr/bin/env bash
# Set up .venv, build a graph from the shipped HotpotQA dev slice into the embedded FalkorDB,
# print its stats and one menu. No server, no model hub.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
harness-g demo "$@"
