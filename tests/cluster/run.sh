#!/usr/bin/env bash
# The cluster test (docs/scale-out.md): a swarm of Docker engines on this machine
# (swarm_nodes.sh), the images built into the first node and `docker save | docker load`ed into
# the others, the stack of deploy/swarm/ deployed, then swarm_check.py's promises.
#
#   tests/cluster/run.sh --full      3 nodes, 300 executions from 16 clients, 10 sessions x 20
#   tests/cluster/run.sh --reduced   2 nodes, 60 executions from 8 clients, 4 sessions x 5 (CTest)
#
# Exit 77 (skipped) without root, dockerd, haproxy or a build. Bounded: the whole run is under
# `timeout` (LSB_CLUSTER_TIMEOUT seconds), and every namespace, link, engine and directory is
# removed afterwards, on failure too (a trap; swarm_nodes.sh down also finds leftovers of killed
# runs by their name prefix). One run at a time on a machine (a lock).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${LSB_BUILD_DIR:-$src/build}
form=${1:---reduced}
case $form in
  --full) nodes=3 execs=300 clients=16 sessions=10 steps=20 limit=${LSB_CLUSTER_TIMEOUT:-900} ;;
  --reduced) nodes=2 execs=60 clients=8 sessions=4 steps=5 limit=${LSB_CLUSTER_TIMEOUT:-400} ;;
  *) echo "usage: $0 --full|--reduced" >&2; exit 2 ;;
esac
skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, dockerd)"
for t in dockerd docker ip nsenter unshare iptables haproxy flock timeout; do
  command -v "$t" >/dev/null || skip "needs $t (scripts/install-deps.sh installs haproxy)"
done
[[ -x $build/llm-sandbox && -x $build/llm-sandbox-init ]] || skip "no build in $build"

if [[ -z ${LSW_UNDER_TIMEOUT:-} ]]; then
  export LSW_UNDER_TIMEOUT=1
  exec flock /tmp/lsw-swarm.lock timeout --kill-after=30 "$limit" "$0" "$@"
fi

nodes_sh=$here/swarm_nodes.sh
cleanup() {
  local rc=$?
  [[ $rc -eq 0 ]] || { echo "--- failed (rc $rc): node logs' tails" >&2; for f in /tmp/lsw-swarm/n*/dockerd.log; do
    [[ -f $f ]] && grep -v 'kernel parameter\|level=info' "$f" | tail -n 5 >&2; done; }
  "$nodes_sh" down || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

t0=$(date +%s)
"$here/stack_up.sh" "$nodes" "$build"
eval "$("$nodes_sh" env)"
source "$LSW_DIR/stack.env"
python3 "$here/swarm_check.py" --token "$LSW_TOKEN" --nodes "$LSW_NODE_LIST" --socks "$LSW_SOCK_LIST" \
  --executions "$execs" --clients "$clients" --sessions "$sessions" --steps "$steps" \
  --stop-node "$LSW_PREFIX-n$nodes" --stop-cmd "$nodes_sh stop-node $nodes"
echo "cluster: $form passed in $(($(date +%s) - t0))s"
