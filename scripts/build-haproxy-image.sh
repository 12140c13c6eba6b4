#!/usr/bin/env bash
# Builds llmsandbox/haproxy FROM scratch (no registry needed): Debian's /usr/sbin/haproxy plus
# exactly the shared libraries ldd names. The cluster front of deploy/swarm/ (docs/scale-out.md).
# Cached like the orchestrator image: rebuilt only when its inputs' hash changed.
#
#   scripts/build-haproxy-image.sh            (LSB_FRONT_TAG=name:tag, default llmsandbox/haproxy:latest)
# Needs the haproxy package (scripts/install-deps.sh installs it).
set -euo pipefail
tag=${LSB_FRONT_TAG:-llmsandbox/haproxy:latest}
bin=/usr/sbin/haproxy
[[ -x $bin ]] || { echo "build-haproxy-image: $bin is missing (apt-get install haproxy)" >&2; exit 1; }
mapfile -t libs < <(ldd "$bin" | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}' | sort -u)
hash=$( { sha256sum "$bin" "${libs[@]}" "$0" | awk '{print $1}'; } | sha256sum | cut -c1-16)
have=$(docker image inspect -f '{{ index .Config.Labels "io.llm-sandbox.build-hash" }}' "$tag" 2>/dev/null || true)
if [[ $have == "$hash" ]]; then echo "build-haproxy-image: $tag is up to date ($hash)"; exit 0; fi

ctx=$(mktemp -d "${TMPDIR:-/tmp}/lsb-front.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root/usr/sbin" "$root/etc/haproxy" "$root/tmp" "$root/run"
chmod 1777 "$root/tmp"
cp "$bin" "$root/usr/sbin/haproxy"
for l in "${libs[@]}"; do mkdir -p "$root$(dirname "$l")"; cp -L "$l" "$root$l"; done
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
if [[ -n $interp && ! -e $root$interp ]]; then mkdir -p "$root$(dirname "$interp")"; cp -L "$interp" "$root$interp"; fi
printf 'root:x:0:0:root:/:/usr/sbin/haproxy\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
EXPOSE 8000
# -W: master-worker, so SIGUSR2 reloads and SIGTERM stops cleanly; -db: stay in the foreground.
ENTRYPOINT ["/usr/sbin/haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
DOCKERFILE
docker build -q --label "io.llm-sandbox.build-hash=$hash" -t "$tag" "$ctx" >/dev/null
echo "build-haproxy-image: built $tag ($hash)"
