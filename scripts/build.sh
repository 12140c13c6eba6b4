#!/usr/bin/env bash
# Configures and builds into ${LSB_BUILD_DIR:-build} (incremental: a second run only rebuilds what
# changed). Extra arguments go to cmake's configure step, e.g. -DLSB_SANITIZE=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LSB_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
if [[ ! -f $build/CMakeCache.txt || $# -gt 0 ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi
# LSB_TARGETS limits the build (the quick start needs only the two binaries); default: everything.
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" ${LSB_TARGETS:+--target $LSB_TARGETS}
