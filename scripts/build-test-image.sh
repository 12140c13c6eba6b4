#!/usr/bin/env bash
# Builds the Docker test image (no registry is reachable here, DESIGN §9): a Debian bookworm minbase
# tree with python3-minimal (+ its stdlib) from the configured apt mirror, made by debootstrap and `docker import`ed.
# Cached twice: nothing is done when the image exists, and the tarball is kept under
# ~/.cache/llm-sandbox so a fresh engine only needs a `docker import` (seconds, not a minute).
#
# Usage: build-test-image.sh [IMAGE]     (default llm-sandbox/python:3.11-test)
# Environment:
#   LSB_TEST_IMAGE   image name (same as the argument)
#   LSB_CACHE_DIR    tarball cache (default ~/.cache/llm-sandbox)
#   LSB_MIRROR       Debian mirror (default: the first http(s) URI in /etc/apt/sources.list*)
#   LSB_REBUILD=1    ignore both caches
#   LSB_TARBALL_ONLY=1  make the tarball only (no Docker needed: the native build.apt test imports it)
set -euo pipefail

image="${1:-${LSB_TEST_IMAGE:-llm-sandbox/python:3.11-test}}"
cache_dir="${LSB_CACHE_DIR:-${HOME:-/root}/.cache/llm-sandbox}"
suite=bookworm
# libpython3.11-stdlib brings ctypes, which the threat suites use to make raw system calls.
packages=python3-minimal,libpython3.11-stdlib
tarball="$cache_dir/debian-$suite-minbase-python3-stdlib.tar"
rebuild="${LSB_REBUILD:-0}"
tarball_only="${LSB_TARBALL_ONLY:-0}"

say() { echo "build-test-image: $*" >&2; }

if [[ "$tarball_only" != 1 ]]; then
  command -v docker >/dev/null || { say "the docker CLI is missing (apt-get install docker.io)"; exit 1; }
fi

if [[ "$tarball_only" != 1 && "$rebuild" != 1 ]] && docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi

mirror_from_apt() {
  # deb822 files (URIs: ...) and one-line lists (deb URI suite ...); the first Debian archive wins.
  local f
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r "$f" ]] || continue
    awk '
      /^URIs:/ { for (i = 2; i <= NF; i++) print $i }
      /^deb / { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }
    ' "$f"
  done | grep -E '/debian/?$' | head -n 1
}

if [[ "$rebuild" == 1 || ! -s "$tarball" ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    say "debootstrap needs root; run: sudo $0 $image"
    exit 3
  fi
  command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  mirror="${LSB_MIRROR:-$(mirror_from_apt)}"
  mirror="${mirror:-http://deb.debian.org/debian}"
  mkdir -p "$cache_dir"
  root="$(mktemp -d "$cache_dir/rootfs.XXXXXX")"
  trap 'rm -rf "$root"' EXIT
  say "debootstrap $suite from $mirror (about a minute)"
  debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" \
    >"$cache_dir/debootstrap.log" 2>&1 || {
    say "debootstrap failed; see $cache_dir/debootstrap.log"
    tail -n 20 "$cache_dir/debootstrap.log" >&2
    exit 1
  }
  # Smaller and reproducible-ish: no apt lists or caches, no docs.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/usr/share/locale/*
  tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$root"
  trap - EXIT
fi

if [[ "$tarball_only" == 1 ]]; then
  say "tarball $tarball ready"
  exit 0
fi
say "docker import $tarball as $image"
docker import \
  --change 'CMD ["/usr/bin/python3"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  "$tarball" "$image" >/dev/null
docker image inspect "$image" >/dev/null
say "image $image ready"
