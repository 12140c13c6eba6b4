#!/usr/bin/env bash
# Quick start, part one: set up and run the main job on the embedded default (native backend, no
# Docker): the seed policy (policies/code-sandbox.yaml, verbatim from the requirements) runs a
# Python program, then an attack the policy refuses.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LSB_BUILD_DIR:-$root/build}
# A build dir configured here for the first time has nothing in ccache to reuse: LSB_FAST_FIRST_BUILD
# (CMakeLists.txt) compiles it in unity batches with a precompiled json header, for under a third of the
# CPU time (docs/testing.md, "The quick start's first build"). scripts/test.sh later builds the rest of
# that dir the same way; CI's own clones keep the ccache-friendly default. LSB_FAST_FIRST_BUILD=0 opts out.
first=()
[[ -f $build/CMakeCache.txt || ${LSB_FAST_FIRST_BUILD:-1} == 0 ]] || first=(-DLSB_FAST_FIRST_BUILD=ON)
LSB_TARGETS="llm-sandbox llm-sandbox-init" "$root/scripts/build.sh" "${first[@]}"
cd "$root"
bin=$build/llm-sandbox
echo "== llm-sandbox policy check policies/code-sandbox.yaml"
"$bin" policy check policies/code-sandbox.yaml
echo "== llm-sandbox run --policy code-sandbox examples/hello.py"
"$bin" run --policy code-sandbox --images config/images.yaml examples/hello.py
echo "== llm-sandbox run --policy code-sandbox examples/attack.py   (expected: refused, with alerts)"
"$bin" run --policy code-sandbox --images config/images.yaml examples/attack.py || true
