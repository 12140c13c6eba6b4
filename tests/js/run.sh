#!/usr/bin/env bash
# The TypeScript client and its LangChain.js / LlamaIndex.TS tools against the REAL daemon
# (CTest: integration_js). Installs the npm packages from clients/js/package-lock.json (npm ci,
# reusing ~/.npm and skipping the install when node_modules already matches the lock), builds and
# packs the client (clients/js/pack.sh: tsc, npm pack -> clients/js/llm-sandbox-client-*.tgz, which
# test/pack.test.ts installs offline into an empty project), compiles the tests, then runs node's
# built-in test runner; each test file starts its own `$LSB_BUILD_DIR/llm-sandbox serve` on a free
# port and stops it with SIGTERM.
# Exit 77 (skipped) only when Node.js 20+ is not installed.
set -euo pipefail
root=${LSB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export LSB_SOURCE_DIR=$root
export LSB_BUILD_DIR=${LSB_BUILD_DIR:-$root/build}
js=$root/clients/js

# shellcheck source=../lib/node_suite.sh
source "$root/tests/lib/node_suite.sh"
require_node20_and_binary

npm_ci_if_lock_changed "$js"
cd "$js"
rm -rf dist dist-test
LSB_JS_TARBALL=$("$js/pack.sh" | tail -n 1)
export LSB_JS_TARBALL
npx tsc -p tsconfig.test.json
exec node --test --test-concurrency=1 dist-test/
