# build.apt's step (runtime/build_plan.cc): run by /bin/sh in the build box as
# `sh -c SCRIPT llm-sandbox-apt N SOURCE_1..SOURCE_N PACKAGE...`: every line and package is an
# argument ("$@"), never part of the script. apt's privilege drop to _apt is turned off (the build
# box's root is uid 0 of a user namespace: there may be no _apt to become, and the box is the
# sandbox); the proxy variables are given to apt's own option too. Lists and caches are removed so
# that the layer holds the packages only.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)
set -eu
export DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true LC_ALL=C
if ! command -v apt-get >/dev/null 2>&1; then
  echo "llm-sandbox: build.apt needs apt-get in the image; it has none" >&2
  exit 127
fi
n=$1; shift
o="-o APT::Sandbox::User=root -o Dpkg::Use-Pty=0 -o Acquire::Retries=1 -o APT::Install-Recommends=false"
if [ -n "${http_proxy:-}" ]; then o="$o -o Acquire::http::Proxy=$http_proxy"; fi
if [ -n "${https_proxy:-}" ]; then o="$o -o Acquire::https::Proxy=$https_proxy"; fi
if [ "$n" -gt 0 ]; then
  d=$(mktemp -d /tmp/llm-sandbox-apt.XXXXXX)
  mkdir "$d/parts"
  : > "$d/sources.list"
  while [ "$n" -gt 0 ]; do printf '%s\n' "$1" >> "$d/sources.list"; shift; n=$((n - 1)); done
  o="$o -o Dir::Etc::SourceList=$d/sources.list -o Dir::Etc::SourceParts=$d/parts"
fi
apt-get $o update
apt-get $o install -y --no-install-recommends -- "$@"
apt-get $o clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/partial /var/log/apt/eipp.log.xz
