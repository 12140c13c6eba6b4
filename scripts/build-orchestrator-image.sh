#!/usr/bin/env bash
# Builds the llmsandbox/orchestrator image FROM scratch (no registry needed): the dynamically linked
# llm-sandbox plus exactly the shared libraries ldd names, the static llm-sandbox-init at
# /.llm-sandbox/init, the default policies and an image map (docker/orchestrator/). Cached: the
# image carries a hash of its inputs as a label and is rebuilt only when they changed.
#
#   scripts/build-orchestrator-image.sh [BUILD_DIR]     (default $LSB_BUILD_DIR or ./build)
#   LSB_ORCH_TAG=name:tag to tag differently (default llmsandbox/orchestrator:latest)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${LSB_BUILD_DIR:-$src/build}}
tag=${LSB_ORCH_TAG:-llmsandbox/orchestrator:latest}
bin=$build/llm-sandbox
init=$build/llm-sandbox-init
for f in "$bin" "$init"; do
  [[ -x $f ]] || { echo "build-orchestrator-image: $f is not built (cmake --build $build)" >&2; exit 1; }
done
if ldd "$init" 2>&1 | grep -q '=>'; then
  echo "build-orchestrator-image: $init is not static; the sandboxes need the static init" >&2; exit 1
fi

# The libraries the daemon needs, as ldd resolves them here ("name => /path (addr)" and the loader).
mapfile -t libs < <(ldd "$bin" | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}' | sort -u)
hash=$( { sha256sum "$bin" "$init" "${libs[@]}" "$src"/policies/*.yaml "$src"/docker/orchestrator/* \
          "$0" | awk '{print $1}'; } | sha256sum | cut -c1-16)
have=$(docker image inspect -f '{{ index .Config.Labels "io.llm-sandbox.build-hash" }}' "$tag" 2>/dev/null || true)
if [[ $have == "$hash" ]]; then
  echo "build-orchestrator-image: $tag is up to date ($hash)"
  exit 0
fi

ctx=$(mktemp -d "${TMPDIR:-/tmp}/lsb-orch.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root/usr/local/bin" "$root/.llm-sandbox" "$root/etc/llm-sandbox/policies" "$root/tmp" "$root/var/run"
chmod 1777 "$root/tmp"
cp "$bin" "$root/usr/local/bin/llm-sandbox"
cp "$init" "$root/.llm-sandbox/init"
for l in "${libs[@]}"; do
  mkdir -p "$root$(dirname "$l")"
  cp -L "$l" "$root$l"
done
# The loader path the binary asks for may be reached through a symlinked /lib64 on the host.
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
if [[ -n $interp && ! -e $root$interp ]]; then mkdir -p "$root$(dirname "$interp")"; cp -L "$interp" "$root$interp"; fi
cp "$src"/policies/*.yaml "$root/etc/llm-sandbox/policies/"
cp "$src/docker/orchestrator/images.yaml" "$root/etc/llm-sandbox/images.yaml"
printf 'root:x:0:0:root:/:/usr/local/bin/llm-sandbox\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
cp "$src/docker/orchestrator/Dockerfile" "$ctx/Dockerfile"
docker build -q --label "io.llm-sandbox.build-hash=$hash" -t "$tag" "$ctx" >/dev/null
echo "build-orchestrator-image: built $tag ($hash, $(du -sh "$root" | cut -f1) staged)"
