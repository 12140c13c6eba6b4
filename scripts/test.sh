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
# -j2: the unit tests two at a time; every integration suite is RUN_SERIAL (CMakeLists.txt lsb_suite).
(cd "$build" && ctest --output-on-failure --timeout 1800 -j "${LSB_CTEST_JOBS:-2}" "$@")
# Fuzzing, bounded (LSB_FUZZ_SECONDS per target, default 60; LSB_SKIP_FUZZ=1 skips): the kept
# crashing inputs first, then each target from its seed corpus (docs/security.md).
if [[ ${LSB_SKIP_FUZZ:-0} != 1 && $# -eq 0 ]]; then
  "$root/scripts/fuzz.sh"
fi
# ASan+UBSan build and tests (scripts/sanitize.sh, build-asan; what it covers and leaves out is in
# its header and docs/security.md). On by default; LSB_CI_SANITIZE=0 skips it.
if [[ ${LSB_CI_SANITIZE:-1} != 0 && $# -eq 0 ]]; then
  "$root/scripts/sanitize.sh"
fi
