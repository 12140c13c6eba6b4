#!/usr/bin/env bash
# Quick start, part two: set up and pass every test. Installs the Debian packages, builds, and runs
# the unit tests and the integration suites that drive the real binaries (CTest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LSB_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
if [[ -x $root/scripts/ensure-docker.sh ]]; then
  "$root/scripts/ensure-docker.sh"
fi
cd "$build"
ctest --output-on-failure --timeout 1800 "$@"
