#!/usr/bin/env bash
# A swarm of N nodes with the llm-sandbox stack deployed and ready (run.sh and bench/cluster use
# it; they own the cleanup: swarm_nodes.sh down). Writes $LSW_DIR/stack.env: LSW_TOKEN,
# LSW_NODE_LIST (name=addr,...), LSW_SOCK_LIST (name=socket,...).
#
#   stack_up.sh N BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
nodes=$1 build=$2
nodes_sh=$here/swarm_nodes.sh

t0=$(date +%s)
"$nodes_sh" up "$nodes"
eval "$("$nodes_sh" env)"
sock() { echo "$LSW_DIR/n$1/run/docker.sock"; }
addr() { echo "$LSW_SUBNET.$((10 + $1))"; }

# The images, built into node 1 from this machine's files (no registry), then carried over.
export DOCKER_HOST=unix://$(sock 1)
"$src/scripts/build-test-image.sh" >/dev/null
"$src/scripts/build-orchestrator-image.sh" "$build" >/dev/null
"$src/scripts/build-haproxy-image.sh" >/dev/null
images=(llm-sandbox/python:3.11-test llmsandbox/orchestrator:latest llmsandbox/haproxy:latest)
if ((nodes > 1)); then
  docker save -o "$LSW_DIR/images.tar" "${images[@]}"
  pids=()
  for ((i = 2; i <= nodes; i++)); do docker -H "unix://$(sock "$i")" load -q -i "$LSW_DIR/images.tar" >/dev/null & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
  rm -f "$LSW_DIR/images.tar"
fi
t_images=$(date +%s)

LSB_DEPLOY_DIR=$LSW_DIR/deploy "$src/deploy/swarm/deploy.sh" lsb >/dev/null
token=$(head -n 1 "$LSW_DIR/deploy/tokens")

# Ready: every node's daemon answers /readyz directly, and every front answers through its port.
ready() { curl -fsS -m 2 -o /dev/null "http://$1/readyz"; }
for ((t = 0; ; t++)); do
  ok=1
  for ((i = 1; i <= nodes; i++)); do ready "$(addr "$i"):8080" && ready "$(addr "$i"):8000" || ok=0; done
  ((ok)) && break
  if ((t > 180)); then
    docker service ps --no-trunc lsb_orchestrator lsb_front >&2 || true
    echo "stack_up: the stack did not become ready within 180s" >&2; exit 1
  fi
  sleep 1
done
t_ready=$(date +%s)
echo "stack_up: $nodes nodes up, images in $((t_images - t0))s, stack ready in $((t_ready - t_images))s" >&2

node_list="" sock_list=""
for ((i = 1; i <= nodes; i++)); do
  node_list+="${node_list:+,}$LSW_PREFIX-n$i=$(addr "$i")"
  sock_list+="${sock_list:+,}$LSW_PREFIX-n$i=$(sock "$i")"
done
printf 'LSW_TOKEN=%s\nLSW_NODE_LIST=%s\nLSW_SOCK_LIST=%s\n' "$token" "$node_list" "$sock_list" > "$LSW_DIR/stack.env"
