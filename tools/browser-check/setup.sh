#!/usr/bin/env bash
# Set up the headless-Chromium check of Neo4j Browser (tests/test_neo4j_browser.py). Idempotent:
#  - installs Debian's `chromium` with apt-get when no chromium is on PATH (needs root and apt-get);
#  - installs the node tool's pinned dependencies (puppeteer-core, which downloads no browser) with `npm ci`,
#    skipped when node_modules already matches package-lock.json.
# Usage: bash tools/browser-check/setup.sh
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "browser-check setup: $*" >&2; exit 1; }

if command -v chromium >/dev/null 2>&1; then
    :
else
    command -v apt-get >/dev/null 2>&1 \
        || die "chromium is not on PATH and apt-get is missing: install Chromium yourself (it must be on PATH as \`chromium\`, or set CHROMIUM=/path/to/chrome)"
    [ "$(id -u)" = 0 ] \
        || die "chromium is not on PATH; installing it needs root: run \`sudo apt-get update && sudo apt-get install -y chromium\`, then this script again"
    echo "browser-check setup: installing chromium (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium >/dev/null \
        || die "apt-get install chromium failed"
    command -v chromium >/dev/null 2>&1 || die "apt-get installed chromium but \`chromium\` is still not on PATH"
fi

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
    || die "node and npm are needed (Node.js 18+), e.g. \`apt-get install -y nodejs npm\`"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' \
    || die "Node.js 18+ is needed, found $(node --version)"

# npm ci writes node_modules/.package-lock.json; equal to package-lock.json's packages = already installed
if [ -f node_modules/.package-lock.json ] && [ -d node_modules/puppeteer-core ] \
    && node -e '
        const fs = require("fs");
        const want = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages;
        const have = JSON.parse(fs.readFileSync("node_modules/.package-lock.json", "utf8")).packages;
        const ok = Object.keys(want).filter((k) => k !== "").every((k) => have[k] && have[k].version === want[k].version);
        process.exit(ok ? 0 : 1);'; then
    :
else
    echo "browser-check setup: npm ci (puppeteer-core)"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null || die "npm ci failed in $(pwd)"
fi

echo "browser-check setup: ok ($(chromium --version 2>/dev/null | head -n 1); puppeteer-core $(node -p 'require("./node_modules/puppeteer-core/package.json").version'))"
