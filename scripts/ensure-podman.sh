#!/usr/bin/env bash
# Makes sure Debian's podman is installed, for the Podman tests (tests/docker/test_podman.py):
# installs it without questions when it is absent and we are root. It starts no service (the test
# runs its own `podman system service` on a private socket and stops it). Exit codes: 0 podman is
# there, 3 it is absent and we may not install it, 1 the install failed (the reason is printed).
set -euo pipefail

say() { echo "ensure-podman: $*" >&2; }

if command -v podman >/dev/null; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  say "podman is not installed and we are not root: sudo apt-get install podman"
  exit 3
fi
say "installing podman (about a minute)"
export DEBIAN_FRONTEND=noninteractive
# --no-install-recommends: the engine's own runc and iptables serve podman too; nothing of the
# running Docker engine is replaced.
if ! apt-get install -y -qq --no-install-recommends podman >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman >/dev/null || {
    say "apt-get install podman failed"
    exit 1
  }
fi
command -v podman >/dev/null || { say "podman is still not on PATH after the install"; exit 1; }
say "$(podman --version)"
