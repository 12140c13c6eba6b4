#!/usr/bin/env bash
# The MCP server with the OFFICIAL @modelcontextprotocol/sdk client (CTest: integration_mcp):
# `llm-sandbox mcp` over stdio and the real daemon's /mcp over Streamable HTTP. Installs the SDK
# from tests/mcp/package-lock.json (npm ci, only when node_modules does not match the lock), then
# runs node's built-in test runner. Exit 77 (skipped) only when Node.js 20+ is not installed.
set -euo pipefail
root=${LSB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export LSB_SOURCE_DIR=$root
export LSB_BUILD_DIR=${LSB_BUILD_DIR:-$root/build}

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

cd "$root/tests/mcp"
if ! cmp -s package-lock.json node_modules/.lsb-lock-stamp 2>/dev/null; then
  npm ci --no-audit --no-fund --prefer-offline
  cp package-lock.json node_modules/.lsb-lock-stamp
fi
exec node --test --test-concurrency=1 stdio.test.mjs http.test.mjs
