#!/usr/bin/env bash
# Install the Cypher linter's pinned npm packages (package-lock.json) into tools/cypher-lint/node_modules.
# Idempotent: a no-op while node_modules matches the lockfile (a stamp records the lockfile it was built
# from); otherwise `npm ci` installs exactly the locked versions. Needs Node >= 18.18.2 and npm.
set -euo pipefail
here="${BASH_SOURCE[0]%/*}"
[[ "$here" == "${BASH_SOURCE[0]}" ]] && here=.
cd "$here"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "cypher-lint: '$tool' not found on PATH; install Node.js >= 18.18.2 and npm (apt-get install nodejs npm)" >&2
    exit 1
  fi
done
if ! node -e 'const [a, b, c] = process.versions.node.split(".").map(Number);
               process.exit(a > 18 || (a === 18 && (b > 18 || (b === 18 && c >= 2))) ? 0 : 1)'; then
  echo "cypher-lint: Node.js $(node --version) is too old; the linter needs >= 18.18.2" >&2
  exit 1
fi

stamp=node_modules/.harness-g-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d node_modules/@neo4j-cypher/language-support ]]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null  # errors still go to stderr
echo "$want" > "$stamp"
