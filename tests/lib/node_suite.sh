# Shared by the Node.js suites' run.sh scripts (tests/js, tests/mcp): sourced, not executed.

# Exits 77 (CTest: skipped) without Node.js 20+ and npm; exits 1 when llm-sandbox is not built.
require_node20_and_binary() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node and npm are not installed (Debian: apt-get install nodejs npm; Node 20+)" >&2
    exit 77
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if (( major < 20 )); then
    echo "SKIP: Node.js $(node --version) is older than 20" >&2
    exit 77
  fi
  if [[ ! -x $LSB_BUILD_DIR/llm-sandbox ]]; then
    echo "FAIL: $LSB_BUILD_DIR/llm-sandbox is not built (make llm-sandbox llm-sandbox-init)" >&2
    exit 1
  fi
}

# npm ci in DIR from its package-lock.json; npm ci wipes node_modules, so it is skipped when the
# installed tree was made from this very lock (a stamp copy of the lock inside node_modules).
npm_ci_if_lock_changed() {
  local dir=$1
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.lsb-lock-stamp" 2>/dev/null; then
    (cd "$dir" && npm ci --no-audit --no-fund --prefer-offline)
    cp "$dir/package-lock.json" "$dir/node_modules/.lsb-lock-stamp"
  fi
}
