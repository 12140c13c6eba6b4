#!/usr/bin/env bash
# ASan + UBSan: configures ${LSB_ASAN_BUILD_DIR:-build-asan} with -DLSB_SANITIZE=ON (host binaries
# and tests instrumented; llm-sandbox-init stays static and uninstrumented), builds, and runs CTest
# there. Any sanitizer report fails the test that triggered it (halt_on_error, no recovery).
#
# Left out by default (LSB_ASAN_EXCLUDE overrides the regex): the Docker suite and the daemon
# load test (slow, and their host code paths are already covered by the unit tests and the suites
# that do run), and the adversarial matrix runs on the native backend only (LSB_ADV_BACKENDS).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LSB_ASAN_BUILD_DIR:-$root/build-asan}
exclude=${LSB_ASAN_EXCLUDE:-"^(integration_docker|integration_daemon|python_client_unit)$"}
"$root/scripts/install-deps.sh"
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLSB_SANITIZE=ON >/dev/null
fi
cmake --build "$build" -j "${LSB_JOBS:-2}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-"halt_on_error=1:detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1"}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-"halt_on_error=1:print_stacktrace=1"}
export LSB_ADV_BACKENDS=${LSB_ADV_BACKENDS:-native}
cd "$build"
ctest --output-on-failure --timeout 1800 -E "$exclude" "$@"
