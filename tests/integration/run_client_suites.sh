#!/usr/bin/env bash
# The Python-client suites against the real daemon on $LSB_TEST_BACKEND (native|docker; default
# native): test_python_client.py, test_reference_agent.py, test_integrations.py. CTest entry
# integration_daemon_docker runs it with docker. Exits 77 (CTest: skipped) with the reason only when
# docker is asked for, we are not root and no engine answers; otherwise the suites' setUpModule /
# setUpClass make the engine and the test image exist (scripts/ensure-docker.sh,
# scripts/build-test-image.sh) and every failure fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
backend=${LSB_TEST_BACKEND:-native}
if [[ $backend == docker && $(id -u) -ne 0 ]] && ! docker version >/dev/null 2>&1; then
  echo "SKIPPED: LSB_TEST_BACKEND=docker, but no Docker engine answers and we are not root (run: sudo scripts/ensure-docker.sh)"
  exit 77
fi
cd "$here"
start=$(date +%s)
python3 -m unittest -v test_python_client test_reference_agent test_integrations
echo "client suites on the $backend backend: $(( $(date +%s) - start ))s"
