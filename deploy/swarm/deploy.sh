#!/usr/bin/env bash
# Deploys (or updates, rolling) the llm-sandbox stack on the swarm the docker CLI talks to (a
# manager; DOCKER_HOST selects it). The images must be on every node already (`docker save` |
# `docker load` where no registry is reachable, as tests/cluster/ does).
#
#   deploy/swarm/deploy.sh [STACK]          (default stack name: lsb)
#
# Environment (all optional):
#   LSB_TOKENS_FILE   bearer tokens, one a line (the Swarm secret); default: a new random token,
#                     written to $LSB_DEPLOY_DIR/tokens (mode 600) and printed to stderr
#   LSB_POLICY_FILE   the policy served (a Swarm config; default policies/code-sandbox.yaml)
#   LSB_IMAGES_FILE   the image map (a Swarm config; default docker/orchestrator/images.yaml)
#   LSB_NODE_PORT / LSB_FRONT_PORT   published ports of each node's daemon / front (8080 / 8000)
#   LSB_POOL_SIZE     warm sandboxes per node (2)
#   LSB_DEPLOY_DIR    where the rendered front config and tokens go (default: a new temp dir)
# Swarm configs and secrets cannot change in place, so each is named by its content's hash: a
# changed policy or node set makes new ones, and `docker stack deploy` rolls the services onto them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
stack=${1:-lsb}
work=${LSB_DEPLOY_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/lsb-deploy.XXXXXX")}
mkdir -p "$work"

export LSB_POLICY_FILE=${LSB_POLICY_FILE:-$src/policies/code-sandbox.yaml}
export LSB_IMAGES_FILE=${LSB_IMAGES_FILE:-$src/docker/orchestrator/images.yaml}
export LSB_NODE_PORT=${LSB_NODE_PORT:-8080}
export LSB_FRONT_PORT=${LSB_FRONT_PORT:-8000}
if [[ -z ${LSB_TOKENS_FILE:-} ]]; then
  export LSB_TOKENS_FILE=$work/tokens
  (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$LSB_TOKENS_FILE"; echo >> "$LSB_TOKENS_FILE")
  echo "deploy: generated a token in $LSB_TOKENS_FILE" >&2
fi
[[ -s $LSB_TOKENS_FILE ]] || { echo "deploy: $LSB_TOKENS_FILE is empty" >&2; exit 1; }
export LSB_FRONT_CFG=$work/haproxy.cfg
"$here/render-front.sh" "$LSB_NODE_PORT" > "$LSB_FRONT_CFG"

short_hash() { sha256sum "$1" | cut -c1-10; }
export LSB_TOKENS_NAME=lsb_tokens_$(short_hash "$LSB_TOKENS_FILE")
export LSB_POLICY_NAME=lsb_policy_$(short_hash "$LSB_POLICY_FILE")
export LSB_IMAGES_NAME=lsb_images_$(short_hash "$LSB_IMAGES_FILE")
export LSB_FRONT_NAME=lsb_front_$(short_hash "$LSB_FRONT_CFG")
docker stack deploy --prune --resolve-image never -c "$here/stack.yml" "$stack"
echo "deploy: stack $stack deployed (front config: $LSB_FRONT_CFG)" >&2
