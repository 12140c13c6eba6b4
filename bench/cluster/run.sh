#!/usr/bin/env bash
# Cluster benchmark (docs/scale-out.md): a 3-node swarm on this machine (tests/cluster), the
# stack of deploy/swarm/; throughput through the fronts with 1, 2 and 3 nodes serving, and the
# front's routing overhead against a direct request to a node. The nodes share this machine's
# cores, so the scaling printed is what one machine gives, not what three machines would.
#
#   bench/cluster/run.sh [EXECUTIONS] [CLIENTS]      (default 120 12; needs root, dockerd, haproxy)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${LSB_BUILD_DIR:-$src/build}
execs=${1:-120} clients=${2:-12}
nodes_sh=$src/tests/cluster/swarm_nodes.sh
if [[ -z ${LSW_UNDER_TIMEOUT:-} ]]; then
  export LSW_UNDER_TIMEOUT=1
  exec flock /tmp/lsw-swarm.lock timeout --kill-after=30 "${LSB_CLUSTER_TIMEOUT:-1200}" "$0" "$@"
fi
trap '"$nodes_sh" down || true' EXIT
trap 'exit 143' TERM INT
"$src/tests/cluster/stack_up.sh" 3 "$build"
eval "$("$nodes_sh" env)"
source "$LSW_DIR/stack.env"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
DOCKER_HOST=unix://$LSW_DIR/n1/run/docker.sock python3 "$here/bench_cluster.py" --token "$LSW_TOKEN" \
  --nodes "$LSW_NODE_LIST" --executions "$execs" --clients "$clients"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
