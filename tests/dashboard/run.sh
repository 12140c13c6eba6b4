#!/usr/bin/env bash
# The dashboard in headless Chromium (Debian's chromium, driven by playwright-core from npm).
# Installs what it needs, idempotently: the chromium package (apt) and playwright-core (npm, into
# tests/dashboard/node_modules). Exit 77 (skipped) when neither can be had (no root, no network).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [[ ! -x /usr/bin/chromium ]]; then
  if [[ $(id -u) -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; }
  fi
  [[ -x /usr/bin/chromium ]] || { echo "dashboard test: /usr/bin/chromium missing and not installable; skipped"; exit 77; }
fi
command -v node >/dev/null || { echo "dashboard test: node missing; skipped"; exit 77; }
if [[ ! -d "$here/node_modules/playwright-core" ]]; then
  (cd "$here" && npm install --no-audit --no-fund --silent >/dev/null 2>&1) ||
    { echo "dashboard test: npm install playwright-core failed; skipped"; exit 77; }
fi
exec node "$here/dashboard.test.js"
