#!/usr/bin/env bash
# Makes sure a Docker engine answers on the local socket (DESIGN §9): when none does and we are root,
# installs Debian's docker.io (and runsc, for gVisor) without questions, registers the runsc runtime,
# starts dockerd in the background (these machines run no systemd) and waits, bounded, until it answers.
# Idempotent and fast when the engine already runs. Exit codes: 0 engine answers, 1 it could not be
# started (the reason is printed). No engine and not root: a warning and exit 0 (nothing we may do;
# the Docker tests then skip themselves), or exit 3 with LSB_REQUIRE_DOCKER=1.
#
# Environment:
#   LSB_DOCKER_SOCK      socket to check (default /var/run/docker.sock)
#   LSB_DOCKER_LOG       dockerd log file (default /var/log/llm-sandbox-dockerd.log)
#   LSB_DOCKER_WAIT      seconds to wait for the engine (default 60)
#   LSB_WANT_RUNSC=0     do not install runsc
set -euo pipefail

sock="${LSB_DOCKER_SOCK:-/var/run/docker.sock}"
log="${LSB_DOCKER_LOG:-/var/log/llm-sandbox-dockerd.log}"
wait_s="${LSB_DOCKER_WAIT:-60}"
want_runsc="${LSB_WANT_RUNSC:-1}"

say() { echo "ensure-docker: $*" >&2; }

# True when the engine answers GET /_ping on the socket.
engine_answers() {
  [[ -S "$sock" ]] || return 1
  python3 "$(dirname "$0")/engine_ping.py" "$sock" 3 2>/dev/null
}

if engine_answers; then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  say "no Docker engine answers on $sock and we are not root: start one (sudo $0) or set DOCKER_HOST"
  [[ "${LSB_REQUIRE_DOCKER:-0}" == 1 ]] && exit 3
  exit 0
fi

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
pkg_installed docker.io || missing+=(docker.io)
if [[ "$want_runsc" == 1 ]] && ! pkg_installed runsc; then
  # runsc may be absent from the configured mirror; its absence only disables the gVisor tests.
  if apt-cache show runsc >/dev/null 2>&1 || { apt-get update -qq && apt-cache show runsc >/dev/null 2>&1; }; then
    missing+=(runsc)
  fi
fi
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The package's postinst tries to start the service; without systemd that fails harmlessly.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  }
fi
command -v dockerd >/dev/null || { say "dockerd is not installed (apt-get install docker.io failed?)"; exit 1; }

# Register gVisor. Here runsc must not build its own network stack (the host kernel refuses parts of
# it), so it runs with --network=none; our boxes have no network anyway unless the policy says so.
daemon_json=/etc/docker/daemon.json
runsc_path="$(command -v runsc || true)"
if [[ -n "$runsc_path" ]]; then
  mkdir -p /etc/docker
  python3 - "$daemon_json" "$runsc_path" <<'EOF'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
cfg = {}
if os.path.exists(path):
    with open(path) as f:
        text = f.read().strip()
        cfg = json.loads(text) if text else {}
want = {"path": runsc, "runtimeArgs": ["--network=none"]}
if cfg.get("runtimes", {}).get("runsc") != want:
    cfg.setdefault("runtimes", {})["runsc"] = want
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
EOF
fi

# A dockerd of ours may still be starting (or a stale pid file left by a killed one).
pidfile=/var/run/docker.pid
if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  say "dockerd (pid $(cat "$pidfile")) is running but not answering yet; waiting"
else
  rm -f "$pidfile"
  mkdir -p "$(dirname "$log")"
  say "starting dockerd (log: $log)"
  # setsid: the engine must outlive this script and the test that called it.
  setsid dockerd --host="unix://$sock" >>"$log" 2>&1 </dev/null &
fi

for ((i = 0; i < wait_s * 4; i++)); do
  if engine_answers; then
    say "engine answers on $sock"
    exit 0
  fi
  sleep 0.25
done
say "dockerd did not answer on $sock within ${wait_s}s; last lines of $log:"
tail -n 20 "$log" >&2 || true
exit 1
