#!/usr/bin/env bash
# Several Docker engines on this machine, joined into one swarm (the cluster tests' harness).
#
# Each node is a dockerd of its own: its own network namespace (one veth on a bridge made for the
# test), its own mount namespace whose /run is a directory of ours (so /var/run/docker.sock inside
# it is that node's engine, as on a real host, and no system containerd is shared), its own data
# root, exec root and pidfile. The shared engine (/var/run/docker.sock outside) is never touched.
# Every name starts with $LSB_SWARM_PREFIX (default lsw), so `down` finds leftovers of runs that
# were killed before their trap ran.
#
#   swarm_nodes.sh up N        start N engines, swarm init on the first, join the others
#   swarm_nodes.sh env         print NODES / DIR / SUBNET lines for the caller to source
#   swarm_nodes.sh down        stop every engine and remove every namespace, link and directory
#   swarm_nodes.sh stop-node I stop node I's engine (SIGTERM then SIGKILL) and pull its link
#
# Node I (1-based) is named ${PREFIX}-n${I}, has address 192.168.231.(10+I) and its socket at
# $DIR/n${I}/run/docker.sock. Bounded: every wait is a loop with a limit.
set -euo pipefail

prefix=${LSB_SWARM_PREFIX:-lsw}
dir=${LSB_SWARM_DIR:-/tmp/${prefix}-swarm}
subnet=192.168.231
bridge=${prefix}br0
say() { echo "swarm_nodes: $*" >&2; }

node_sock() { echo "$dir/n$1/run/docker.sock"; }
node_addr() { echo "$subnet.$((10 + $1))"; }
ndocker() { local i=$1; shift; docker -H "unix://$(node_sock "$i")" "$@"; }

need_root() {
  [[ $(id -u) -eq 0 ]] || { say "needs root (network and mount namespaces, dockerd)"; exit 77; }
  for t in dockerd ip nsenter unshare iptables; do
    command -v "$t" >/dev/null || { say "needs $t"; exit 77; }
  done
}

start_node() {
  local i=$1 ns=${prefix}-n$1 nd=$dir/n$1
  mkdir -p "$nd/data" "$nd/exec" "$nd/run"
  ip netns add "$ns"
  ip link add "${prefix}v${i}h" type veth peer name "${prefix}v${i}n"
  ip link set "${prefix}v${i}h" master "$bridge" up
  ip link set "${prefix}v${i}n" netns "$ns"
  ip -n "$ns" link set "${prefix}v${i}n" name eth0
  ip -n "$ns" addr add "$(node_addr "$i")/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  # The node's own /etc/hostname-like identity: swarm names the node by its hostname, so each
  # engine runs in a UTS namespace of its own too.
  # --iptables stays on: the engine needs NAT inside its namespace for published ports.
  # nsenter, not `ip netns exec`: the latter remounts /sys and so hides the cgroup hierarchies.
  # A sysfs of the node's own netns is mounted here instead, with the cgroups bound back under it.
  mkdir -p "$nd/cg"
  nsenter --net="/run/netns/$ns" unshare --mount --uts --propagation private -- sh -c '
      set -e; hostname "$1"; mount --rbind /sys/fs/cgroup "$2/cg"; mount -t sysfs sysfs /sys
      mount --rbind "$2/cg" /sys/fs/cgroup; umount -l "$2/cg"; mount --bind "$2/run" /run; exec dockerd \
        --data-root "$2/data" --exec-root "$2/exec" --pidfile "$2/dockerd.pid" \
        --host unix:///run/docker.sock --storage-driver overlay2 --log-level warn' \
      sh "$ns" "$nd" >"$nd/dockerd.log" 2>&1 </dev/null &
  echo $! >"$nd/launcher.pid"
}

wait_node() {
  local i=$1
  for ((t = 0; t < 240; t++)); do
    [[ -f $dir/n$i/dockerd.pid ]] || ! grep -q "failed to start daemon" "$dir/n$i/dockerd.log" || break
    ndocker "$i" version >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  say "node $i's engine did not answer within 60s; its log:"; tail -n 20 "$dir/n$i/dockerd.log" >&2
  return 1
}

up() {
  need_root
  local n=$1
  down >/dev/null 2>&1 || true
  mkdir -p "$dir"
  ip link add "$bridge" type bridge
  ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
  # The host bridges through iptables (br_netfilter) and the shared engine set FORWARD to DROP:
  # one rule of ours, marked by a comment, lets the nodes talk; `down` removes it.
  iptables -I FORWARD 1 -i "$bridge" -o "$bridge" -m comment --comment "$prefix-swarm" -j ACCEPT
  for ((i = 1; i <= n; i++)); do start_node "$i"; done
  for ((i = 1; i <= n; i++)); do wait_node "$i"; done
  ndocker 1 swarm init --advertise-addr "$(node_addr 1)" --listen-addr "$(node_addr 1):2377" >/dev/null
  # Three or more nodes join as managers (the swarm survives losing one); with two, a second
  # manager would make losing either one lose the quorum, so it joins as a worker.
  local role=worker; ((n >= 3)) && role=manager
  local tok; tok=$(ndocker 1 swarm join-token -q "$role")
  for ((i = 2; i <= n; i++)); do
    ndocker "$i" swarm join --token "$tok" --advertise-addr "$(node_addr "$i")" \
      --listen-addr "$(node_addr "$i"):2377" "$(node_addr 1):2377" >/dev/null
  done
  printf '%s\n' "$n" >"$dir/count"
  say "swarm of $n nodes up ($dir)"
}

stop_pidfile() {
  local f=$1 pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f"); [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((t = 0; t < 60; t++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -KILL "$pid" 2>/dev/null || true
}

# As a node that loses power or its network: it vanishes from the bridge first (no FIN, no RST
# to anyone), then its engine and everything in it stop.
stop_node() {
  local i=$1 nd=$dir/n$1
  ip link del "${prefix}v${i}h" 2>/dev/null || true
  stop_pidfile "$nd/dockerd.pid"
}

# Everything named by the prefix, whether or not this run made it.
down() {
  local nd ns pid
  for nd in "$dir"/n*; do
    [[ -d $nd ]] || continue
    stop_pidfile "$nd/dockerd.pid"
  done
  # Containers' shims and processes left by a killed engine live in the nodes' namespaces.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${prefix}-n" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${prefix}" || true); do
    ip link del "$l" 2>/dev/null || true
  done
  while iptables -D FORWARD -i "$bridge" -o "$bridge" -m comment --comment "$prefix-swarm" -j ACCEPT 2>/dev/null; do :; done
  # The engines' overlay mounts (container rootfs, netns bind mounts) under our directory.
  if [[ -d $dir ]]; then
    awk -v d="$dir" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
      umount -l "$m" 2>/dev/null || true
    done
    rm -rf "$dir"
  fi
}

case ${1:-} in
  up) up "${2:-3}" ;;
  down) down ;;
  stop-node) stop_node "$2" ;;
  env)
    n=$(cat "$dir/count")
    echo "LSW_DIR=$dir"; echo "LSW_NODES=$n"; echo "LSW_SUBNET=$subnet"; echo "LSW_PREFIX=$prefix" ;;
  *) echo "usage: $0 up N | down | stop-node I | env" >&2; exit 2 ;;
esac
