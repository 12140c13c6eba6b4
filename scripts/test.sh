#!/usr/bin/env bash
# Quick start, part two: set up and pass every test. Installs the Debian packages, builds, and runs
# the unit tests and the integration suites that drive the real binaries (CTest), the fuzzers for a
# bounded time, then the ASan+UBSan build's tests.
#
# Time (docs/testing.md has the measured phases): the sanitizer build is compiled while the release
# suites run, at the lowest CPU and I/O priority. Most suites wait on boxes, engines and sleeps and
# leave a core idle; the compile takes only what they leave, so their timings are not disturbed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LSB_BUILD_DIR:-$root/build}
asan_build=${LSB_ASAN_BUILD_DIR:-$root/build-asan}
# One line per phase with the seconds since the start, so a cut-off log still says where time went.
phase() { echo "test.sh: [$SECONDS s] $*" >&2; }
sanitize=0
[[ ${LSB_CI_SANITIZE:-1} != 0 && $# -eq 0 ]] && sanitize=1

phase "dependencies and the release build"
"$root/scripts/build.sh"
if [[ -x $root/scripts/ensure-docker.sh ]]; then
  phase "Docker engine"
  "$root/scripts/ensure-docker.sh"
fi

asan_pid=""
stop_background() { [[ -n $asan_pid ]] && kill -- "-$asan_pid" 2>/dev/null; true; }
trap stop_background EXIT
if ((sanitize)); then
  mkdir -p "$asan_build"
  phase "sanitizer build started in the background (nice 19, idle I/O; log: $asan_build/build.log)"
  # setsid: its own process group, so the trap can stop the whole compile if the suites fail. A
  # new session is also a new scheduler autogroup, which competes with the suites' as an equal
  # whatever its processes' nice values: the group itself is set to nice 19 (where the kernel has
  # autogroups) so the compile really only takes what the suites leave.
  setsid -w bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 ionice -c 3 "$@"' \
    lowest-priority "$root/scripts/sanitize.sh" --build-only >"$asan_build/build.log" 2>&1 &
  asan_pid=$!
fi

# -j2: the unit tests two at a time; every integration suite is RUN_SERIAL (CMakeLists.txt lsb_suite).
phase "CTest (release build)"
(cd "$build" && ctest --output-on-failure --timeout 1800 -j "${LSB_CTEST_JOBS:-2}" "$@")

# Fuzzing, bounded (LSB_FUZZ_SECONDS per target, default 60; LSB_SKIP_FUZZ=1 skips): the kept
# crashing inputs first, then each target from its seed corpus (docs/security.md).
if [[ ${LSB_SKIP_FUZZ:-0} != 1 && $# -eq 0 ]]; then
  phase "fuzzing"
  "$root/scripts/fuzz.sh"
fi

# ASan+UBSan tests (scripts/sanitize.sh; what it covers and leaves out is in its header and
# docs/security.md). On by default; LSB_CI_SANITIZE=0 skips it.
if ((sanitize)); then
  phase "waiting for the sanitizer build"
  if ! wait "$asan_pid"; then
    asan_pid=""
    echo "test.sh: the sanitizer build failed; the end of $asan_build/build.log:" >&2
    tail -n 60 "$asan_build/build.log" >&2
    exit 1
  fi
  asan_pid=""
  phase "CTest (sanitizer build)"
  "$root/scripts/sanitize.sh"
fi
phase "done"
