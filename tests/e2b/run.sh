#!/usr/bin/env bash
# The E2B front door with the REAL E2B SDKs (CTest: integration_e2b): `e2b` and
# `@e2b/code-interpreter`, pinned in tests/e2b/package.json and its lock (the options that point
# them at a local daemon are marked internal in the SDK, so only these versions are claimed to
# work; docs/e2b.md). Installs them with npm ci (only when node_modules does not match the lock),
# then runs node's test runner against a real daemon. Exit 77 (skipped) only without Node.js 20+.
set -euo pipefail
root=${LSB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export LSB_SOURCE_DIR=$root
export LSB_BUILD_DIR=${LSB_BUILD_DIR:-$root/build}

# shellcheck source=../lib/node_suite.sh
source "$root/tests/lib/node_suite.sh"
require_node20_and_binary

npm_ci_if_lock_changed "$root/tests/e2b"
cd "$root/tests/e2b"
exec node --test --test-concurrency=1 sdk.test.mjs attacks.test.mjs
