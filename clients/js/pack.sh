#!/usr/bin/env bash
# Builds the TypeScript client (tsc -> dist/) and packs it with `npm pack` into
# clients/js/llm-sandbox-client-<version>.tgz, the file that installs with no registry:
#   npm install --offline /path/to/clients/js/llm-sandbox-client-<version>.tgz
# (no runtime dependencies; the peers @langchain/core, llamaindex and zod are optional). Needs the
# devDependencies (typescript) in node_modules: `npm ci` once. Prints the tarball's path.
# Called by tests/js/run.sh; the tarball is not committed (.gitignore).
set -euo pipefail
js=$(cd "$(dirname "$0")" && pwd)
cd "$js"
rm -rf dist
npx tsc -p tsconfig.json
rm -f llm-sandbox-client-*.tgz
name=$(npm pack --silent --ignore-scripts --pack-destination "$js" | tail -n 1)
[[ -f $js/$name ]] || { echo "npm pack made no $js/$name" >&2; exit 1; }
echo "$js/$name"
