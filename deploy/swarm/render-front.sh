#!/usr/bin/env bash
# Writes the front's HAProxy config for the swarm the docker CLI talks to (run on a manager):
# one backend per node, named by the node's hostname and pointing at the orchestrator port that
# node publishes, plus "any", every node balanced. Re-run it (and redeploy) when nodes join.
# Routes on ids (docs/scale-out.md): /v1/sessions/ses-<hex>-<node>... and
# /v1/executions/ex-<hex>-<node> to that node (410 when it is not serving); the cluster view:
# GET /cluster/nodes (the list, answered here) and GET /nodes/<node>/{readyz,metrics,v1/...} (a
# few read-only pages of one node, for the dashboard); everything else to "any".
#
#   render-front.sh [NODE_PORT] > haproxy.cfg        (NODE_PORT: the orchestrators' port, 8080)
set -euo pipefail
port=${1:-${LSB_NODE_PORT:-8080}}
mapfile -t nodes < <(docker node ls --format '{{.Hostname}}' | sort)
((${#nodes[@]})) || { echo "render-front: no nodes (is this a swarm manager?)" >&2; exit 1; }
addr_of() { docker node inspect -f '{{.Status.Addr}}' "$1"; }
# GET /cluster/nodes: the node list the front was rendered with, for the dashboard's nodes view
# (and the per-node paths it reads each node's overview through).
nodes_json="" 
for n in "${nodes[@]}"; do
  nodes_json+="${nodes_json:+,}{\\\"name\\\":\\\"$n\\\",\\\"overview\\\":\\\"/nodes/$n/v1/overview\\\",\\\"readyz\\\":\\\"/nodes/$n/readyz\\\"}"
done

cat <<CFG
# Rendered by deploy/swarm/render-front.sh for ${#nodes[@]} node(s). Do not edit; re-render.
global
    maxconn 4096
    log stderr format short local0 warning

defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 150s
    timeout server 150s
    timeout http-request 10s
    # A daemon is in service while its /readyz answers 200 (503 while it shuts down).
    # HTTP/1.1 with a loopback Host: a daemon without tokens refuses other Hosts (DNS rebinding).
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost
    # A node marked down takes its open requests with it: their clients get an error at once
    # (and retry elsewhere) rather than waiting for "timeout server" on a node that vanished.
    default-server check inter 1s fall 2 rise 1 on-marked-down shutdown-sessions

frontend api
    bind :8000
    # A session's requests go to its node: the id is ses-<16 hex>-<node> (docs/scale-out.md).
    acl session_path path_reg ^/v1/sessions/ses-[0-9a-f]{16}-[A-Za-z0-9_-]+(/|$)
    http-request set-var(txn.sid) path,field(4,/) if session_path
    http-request set-var(txn.node) var(txn.sid),bytes(21) if session_path
    # So do an execution's (its async result, its monitoring view): ex-<16 hex>-<node>.
    acl execution_path path_reg ^/v1/executions/ex-[0-9a-f]{16}-[A-Za-z0-9_-]+\$
    http-request set-var(txn.eid) path,field(4,/) if execution_path
    http-request set-var(txn.node) var(txn.eid),bytes(20) if execution_path
    http-request set-header X-LLM-Sandbox-Front %[hostname]
    # The cluster's view (the dashboard's nodes table and its pinned node): the node list, and the
    # read-only pages of one node at /nodes/<node>/..., GET only, the prefix taken off before the
    # node sees the request (which still checks the token).
    http-request return status 200 content-type application/json hdr Cache-Control no-store string "{\"nodes\":[$nodes_json]}" if { path /cluster/nodes } METH_GET
    acl node_path path_reg ^/nodes/[A-Za-z0-9_-]+/(readyz|metrics|v1/(overview|events|history|sessions|executions(/[^/]+)?))\$
    acl known_node var(txn.pnode) -m str ${nodes[*]}
    http-request set-var(txn.pnode) path,field(3,/) if node_path
    http-request return status 404 content-type application/json string "{\"error\":{\"code\":\"not_found\",\"message\":\"under /nodes/<node>/ the front serves only GET of readyz, metrics and v1/overview, events, history, sessions, executions[/ID], for the nodes GET /cluster/nodes lists\"}}" if { path_beg /nodes/ } !node_path or { path_beg /nodes/ } !known_node or { path_beg /nodes/ } !METH_GET
    http-request set-var(txn.node) var(txn.pnode) if node_path
    http-request set-path %[path,regsub(^/nodes/[^/]+,)] if node_path
    use_backend node_%[var(txn.node)] if { var(txn.node) -m found }
    default_backend any

# One-shot work, new sessions, everything else: any node that is ready. A request that never
# reached a daemon, or that a stopping daemon refused (503), is tried once more on another node.
backend any
    balance roundrobin
    retries 2
    option redispatch 1
    retry-on conn-failure empty-response 503
    http-request return status 503 content-type application/json hdr Retry-After 2 string "{\"error\":{\"code\":\"unavailable\",\"message\":\"no llm-sandbox node is serving now (the front found none ready on /readyz); retry later\"}}" if { nbsrv() lt 1 }
CFG
for n in "${nodes[@]}"; do echo "    server $n $(addr_of "$n"):$port"; done
for n in "${nodes[@]}"; do
  cat <<CFG

backend node_$n
    # A node page (/nodes/$n/...) while the node is not serving.
    http-request return status 503 content-type application/json hdr Retry-After 2 string "{\\"error\\":{\\"code\\":\\"unavailable\\",\\"message\\":\\"node $n is not serving now (stopped, updating or left the swarm)\\"}}" if { nbsrv() lt 1 } { var(txn.pnode) -m found }
    # The node is not serving: its executions' kept results and its sessions died with its daemon.
    http-request return status 410 content-type application/json lf-string "{\\"error\\":{\\"code\\":\\"gone\\",\\"message\\":\\"execution %[var(txn.eid)] ran on node $n, which is not serving now (stopped, restarted or left the swarm); its result is lost with the node: run it again\\"}}" if { nbsrv() lt 1 } { var(txn.eid) -m found }
    http-request return status 410 content-type application/json lf-string "{\\"error\\":{\\"code\\":\\"gone\\",\\"message\\":\\"session %[var(txn.sid)] lived on node $n, which is not serving now (stopped, restarted or left the swarm); a session's state is lost with its node: create a new session\\"}}" if { nbsrv() lt 1 }
    server $n $(addr_of "$n"):$port
CFG
done
