#!/usr/bin/env bash
# The MCP server with the OFFICIAL @modelcontextprotocol/sdk client (CTest: integration_mcp):
# `llm-sandbox mcp` over stdio and the real daemon's /mcp over Streamable HTTP. Installs the SDK
# from tests/mcp/package-lock.json (npm ci, only when node_modules does not match the lock), then
# runs node's built-in test runner. Exit 77 (skipped) only when Node.js 20+ is not installed.
set -euo pipefail
root=${LSB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export LSB_SOURCE_DIR=$root
export LSB_BUILD_DIR=${LSB_BUILD_DIR:-$root/build}

# shellcheck source=../lib/node_suite.sh
source "$root/tests/lib/node_suite.sh"
require_node20_and_binary

npm_ci_if_lock_changed "$root/tests/mcp"
cd "$root/tests/mcp"
exec node --test --test-concurrency=1 stdio.test.mjs http.test.mjs
