#!/usr/bin/env python3
"""The egress proxy's cost on loopback (docs/network.md; issue 19's targets: >= 0.8x throughput,
<= 1 ms added median latency): a 10 MB download and a small request, each timed inside a box
through its egress proxy and directly from the host against the same server on 127.0.0.1, with the
same client code (urllib, one connection per request). Needs root and a built llm-sandbox.

  LSB_BUILD_DIR=build python3 bench/egress/run.py [--rounds 3] [--downloads 3] [--small 100] [--backend native|docker]

Rounds are interleaved (direct, then through the proxy); the figures are medians over every sample
of a side. The last line of stdout is the figures as one JSON object (bench/run reads it).

--backend docker: a Docker/runc box, whose proxy's socket is made in the container's namespace
(runtime/docker/egress_attach.h); the same proxy code, so the figures should match native's.

A reference relay is measured in the same rounds: HAProxy (Debian's, TCP mode, no checks) on the host
between the same client and server. It answers "what does any relay cost on this machine": a relay
adds a third busy thread and a second TCP hop, so on 2 cores the 10 MB download through any relay is
about half of direct. Skipped (said so in the output) when haproxy is not installed.
"""
import argparse
import contextlib
import http.server
import json
import os
import shutil
import socket
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("LSB_BUILD_DIR") or os.path.join(ROOT, "build")
BIG = 10 * 1024 * 1024
PY = "/usr/bin/python3"  # the box's interpreter (the host's root): the direct side runs the same one
PAYLOAD = b"x" * BIG


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = PAYLOAD if self.path == "/big" else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


# The same measurement code runs in the box (through the proxy) and on the host (direct).
CLIENT = r'''
import json, statistics, time, urllib.request
def fetch(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        n = 0
        while True:
            b = r.read(1 << 16)
            if not b:
                return n
            n += len(b)
def measure(base, rounds, small):
    big = []
    for _ in range(rounds):
        t = time.perf_counter(); n = fetch(base + "/big"); big.append(time.perf_counter() - t)
        assert n == %d, n
    lat = []
    for _ in range(small):
        t = time.perf_counter(); fetch(base + "/small"); lat.append(time.perf_counter() - t)
    return {"big_s": big, "small_s": lat}
''' % BIG


def run_client(cmd, code, env=None, what="client"):
    p = subprocess.run(cmd, input=code, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        sys.exit(f"the {what} failed: {p.stdout[-2000:]} {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def reference_relay(workdir, upstream_port):
    """HAProxy in TCP mode from 127.0.0.1:<port> to the server, or None without haproxy."""
    exe = shutil.which("haproxy", path=os.environ.get("PATH", "") + ":/usr/sbin")  # root's PATH may lack sbin
    if not exe:
        yield None
        return
    port = free_port()
    cfg = os.path.join(workdir, "relay.cfg")
    with open(cfg, "w") as f:
        f.write("global\n  maxconn 64\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n"
                f"  timeout server 60s\nfrontend relay\n  bind 127.0.0.1:{port}\n  default_backend server\n"
                f"backend server\n  server s 127.0.0.1:{upstream_port}\n")
    p = subprocess.Popen([exe, "-db", "-f", cfg], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # up when it accepts
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if p.poll() is not None:
                sys.exit(f"haproxy exited at start ({p.returncode}); config {cfg}")
            time.sleep(0.05)
        yield port
    finally:
        p.terminate()
        p.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds, direct then proxied (default 3)")
    ap.add_argument("--downloads", type=int, default=3, help="10 MB downloads per round and side (default 3)")
    ap.add_argument("--small", type=int, default=100, help="small requests per round and side (default 100)")
    ap.add_argument("--backend", choices=["native", "docker"], default="native")
    a = ap.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    # Direct: the same client and interpreter in a process of its own (as the box's is), no proxy in
    # its environment.
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    direct_code = CLIENT + f'\nprint(json.dumps(measure("http://127.0.0.1:{port}", {a.downloads}, {a.small})))\n'
    box_code = CLIENT + f'\nprint(json.dumps(measure("http://bench.test:{port}", {a.downloads}, {a.small})))\n'
    samples = {"direct": {"big": [], "small": []}, "proxy": {"big": [], "small": []},
               "haproxy": {"big": [], "small": []}}
    with tempfile.TemporaryDirectory() as d, reference_relay(d, port) as relay_port:
        policy = os.path.join(d, "bench-egress.yaml")
        with open(policy, "w") as f:
            f.write(f'''version: "1.0"
name: bench-egress
backend: {a.backend}
container:
  image: python:3.12-slim
  tmpfs:
    /tmp: "size=16M"
network:
  enabled: true
  allow: ["bench.test", "127.0.0.1:{port}"]
commands:
  allow: ["/usr/bin/python3"]
resources:
  memory: "256M"
  timeout: 300
''')
        box = [os.path.join(BUILD, "llm-sandbox"), "run", "--backend", a.backend, "--policy", policy, "--images",
               os.path.join(ROOT, "config", "images.yaml"), "--egress-resolve", "bench.test:127.0.0.1", "-"]
        # Interleaved rounds: load that comes and goes on a shared host hits both sides alike.
        sides = [("direct", [PY, "-"], direct_code, env), ("proxy", box, box_code, None)]
        if relay_port:
            relay_code = CLIENT + f'\nprint(json.dumps(measure("http://127.0.0.1:{relay_port}", {a.downloads}, {a.small})))\n'
            sides.append(("haproxy", [PY, "-"], relay_code, env))
        for _ in range(a.rounds):
            for side, cmd, code, e in sides:
                got = run_client(cmd, code, e, side)
                samples[side]["big"] += got["big_s"]
                samples[side]["small"] += got["small_s"]
    med = {side: {k: statistics.median(v) for k, v in s.items()} for side, s in samples.items() if s["big"]}
    direct_mb, proxy_mb = BIG / med["direct"]["big"] / 1e6, BIG / med["proxy"]["big"] / 1e6
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    out = {
        "backend": a.backend, "rounds": a.rounds, "downloads": a.rounds * a.downloads, "small": a.rounds * a.small, "load": load,
        "download_10MB_direct_MB_s": round(direct_mb, 1),
        "download_10MB_proxy_MB_s": round(proxy_mb, 1),
        "throughput_ratio": round(proxy_mb / direct_mb, 3),
        "small_request_direct_median_ms": round(med["direct"]["small"] * 1000, 3),
        "small_request_proxy_median_ms": round(med["proxy"]["small"] * 1000, 3),
        "added_latency_median_ms": round((med["proxy"]["small"] - med["direct"]["small"]) * 1000, 3),
    }
    if "haproxy" in med:
        relay_mb = BIG / med["haproxy"]["big"] / 1e6
        out["download_10MB_haproxy_MB_s"] = round(relay_mb, 1)
        out["haproxy_throughput_ratio"] = round(relay_mb / direct_mb, 3)
        out["proxy_vs_haproxy_throughput"] = round(proxy_mb / relay_mb, 3)
        out["haproxy_added_latency_median_ms"] = round((med["haproxy"]["small"] - med["direct"]["small"]) * 1000, 3)
    else:
        out["haproxy"] = "skipped: haproxy is not installed (scripts/install-deps.sh installs it)"
    print(json.dumps(out, indent=2), file=sys.stderr)
    print(json.dumps(out))  # the last line: what bench/run reads


if __name__ == "__main__":
    main()
