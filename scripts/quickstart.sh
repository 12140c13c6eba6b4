#!/usr/bin/env bash
# Quick start, part one: set up and run the main job on the embedded default (native backend, no
# Docker): the seed policy (policies/code-sandbox.yaml, verbatim from the requirements) runs a
# Python program, then an attack the policy refuses.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LSB_TARGETS="llm-sandbox llm-sandbox-init" "$root/scripts/build.sh"
cd "$root"
bin=${LSB_BUILD_DIR:-$root/build}/llm-sandbox
echo "== llm-sandbox policy check policies/code-sandbox.yaml"
"$bin" policy check policies/code-sandbox.yaml
echo "== llm-sandbox run --policy code-sandbox examples/hello.py"
"$bin" run --policy code-sandbox --images config/images.yaml examples/hello.py
echo "== llm-sandbox run --policy code-sandbox examples/attack.py   (expected: refused, with alerts)"
"$bin" run --policy code-sandbox --images config/images.yaml examples/attack.py || true
