#!/usr/bin/env bash
# The TypeScript client and its LangChain.js / LlamaIndex.TS tools against the REAL daemon
# (CTest: integration_js). Installs the npm packages from clients/js/package-lock.json (npm ci,
# reusing ~/.npm and skipping the install when node_modules already matches the lock), compiles
# with tsc, then runs node's built-in test runner; each test file starts its own
# `$LSB_BUILD_DIR/llm-sandbox serve` on a free port and stops it with SIGTERM.
# Exit 77 (skipped) only when Node.js 20+ is not installed.
set -euo pipefail
root=${LSB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export LSB_SOURCE_DIR=$root
export LSB_BUILD_DIR=${LSB_BUILD_DIR:-$root/build}
js=$root/clients/js

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are not installed (Debian: apt-get install nodejs npm; Node 20+)" >&2
  exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if (( major < 20 )); then
  echo "SKIP: Node.js $(node --version) is older than 20" >&2
  exit 77
fi
if [[ ! -x $LSB_BUILD_DIR/llm-sandbox ]]; then
  echo "FAIL: $LSB_BUILD_DIR/llm-sandbox is not built (make llm-sandbox llm-sandbox-init)" >&2
  exit 1
fi

cd "$js"
# npm ci wipes node_modules; skip it when the installed tree was made from this very lock.
if ! cmp -s package-lock.json node_modules/.lsb-lock-stamp 2>/dev/null; then
  npm ci --no-audit --no-fund --prefer-offline
  cp package-lock.json node_modules/.lsb-lock-stamp
fi
rm -rf dist dist-test
npx tsc -p tsconfig.json
npx tsc -p tsconfig.test.json
exec node --test --test-concurrency=1 dist-test/
