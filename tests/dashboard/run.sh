#!/usr/bin/env bash
# The dashboard in headless Chromium (Debian's chromium, driven by playwright-core from npm).
# Installs what it needs, idempotently: the chromium package (apt, with an `apt-get update` when the
# package lists are missing or stale) and playwright-core from the committed package-lock.json
# (`npm ci` into tests/dashboard/node_modules, skipped when node_modules was made from this lock).
# As root (CI, a fresh Debian 12 machine) a failed install is a failure, not a skip. Exit 77
# (skipped) only without root when chromium or node is missing.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1; }
}

need() {  # need WHAT: missing and not installable
  if [[ $(id -u) -eq 0 ]]; then echo "FAIL: dashboard test: $1 could not be installed" >&2; exit 1; fi
  echo "SKIP: dashboard test: $1 missing (run as root to install it)" >&2
  exit 77
}

if [[ ! -x /usr/bin/chromium ]]; then
  [[ $(id -u) -eq 0 ]] && apt_install chromium
  [[ -x /usr/bin/chromium ]] || need "Debian's chromium (/usr/bin/chromium)"
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  [[ $(id -u) -eq 0 ]] && apt_install nodejs npm
  { command -v node >/dev/null && command -v npm >/dev/null; } || need "node and npm"
fi
# npm ci wipes node_modules; skip it when the installed tree was made from this very lock.
if ! cmp -s "$here/package-lock.json" "$here/node_modules/.lsb-lock-stamp" 2>/dev/null; then
  (cd "$here" && npm ci --no-audit --no-fund --prefer-offline) ||
    { echo "FAIL: dashboard test: npm ci (playwright-core) failed" >&2; exit 1; }
  cp "$here/package-lock.json" "$here/node_modules/.lsb-lock-stamp"
fi
exec node "$here/dashboard.test.js"
