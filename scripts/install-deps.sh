#!/usr/bin/env bash
# Installs the Debian 12 packages the build and the tests need. Idempotent; needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates ccache
  libyaml-cpp-dev nlohmann-json3-dev libseccomp-dev libcli11-dev
  libboost1.81-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-minimal python3 python3-setuptools python3-wheel python3-venv python3-pip
  util-linux procps
  python3-matplotlib  # rich outputs (issue 21): figures as PNG
  python3-pytest  # workspaces (issue 21): a project's pytest suite run as a command
  python3-numpy  # session reset benchmark and tests: a heavy import to warm (issue 22)
  clang-14 libclang-rt-14-dev
  # images (issue 18): layer codecs and registry TLS, linked statically; a real OCI registry,
  # skopeo (OCI layouts) and htpasswd for the pull tests
  zlib1g-dev libzstd-dev libssl-dev
  docker-registry skopeo apache2-utils
  python3-cryptography  # the pull tests: a test CA and the token service's JWT signatures
  haproxy python3-yaml  # the cluster test's front (tests/cluster) and the manifests' syntax check
  apt-utils debootstrap  # container.build.apt tests: apt-ftparchive for a local repository; the native test image with apt
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
