#!/usr/bin/env python3
"""Throughput over 1, 2, 3 serving nodes, and the front's overhead vs a direct request
(bench/cluster/run.sh sets up the swarm). Nodes leave the service by `docker node update
--availability drain` (their global tasks stop, the fronts' health checks drop them) and come back
with `active`. Prints one line per measurement and the ratios."""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "cluster"))
from swarm_check import Cluster, run_executions  # noqa: E402


def set_serving(names, k):
    for i, n in enumerate(names):
        subprocess.run(["docker", "node", "update", "--availability", "active" if i < k else "drain", n],
                       check=True, capture_output=True, timeout=60)


def wait_serving(cl, k, timeout=180):
    """Until the first k nodes' daemons and fronts answer and the others' daemons do not."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        up = []
        for name, addr in cl.nodes:
            try:
                s1, _, _ = cl.request(addr, cl.node_port, "GET", "/readyz", timeout=2)
                s2, _, _ = cl.request(addr, cl.front_port, "GET", "/readyz", timeout=2)
                up.append(s1 == 200 and s2 == 200)
            except OSError:
                up.append(False)
        if up == [i < k for i in range(len(cl.nodes))]:
            time.sleep(3)  # the fronts' health checks (1 s, fall 2) see the same
            return
        time.sleep(1)
    raise SystemExit("nodes did not settle to %d serving within %ds" % (k, timeout))


def timed(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--executions", type=int, default=120)
    ap.add_argument("--clients", type=int, default=12)
    a = ap.parse_args()
    all_nodes = [tuple(x.split("=", 1)) for x in a.nodes.split(",")]
    names = [n for n, _ in all_nodes]
    rates = {}
    for k in (1, 2, 3):
        set_serving(names, k)
        cl = Cluster(all_nodes, a.token, 8000, 8080)
        wait_serving(cl, k)
        serving = Cluster(all_nodes[:k], a.token, 8000, 8080)
        run_executions(serving, 2 * a.clients, a.clients, "warm-up %d" % k)
        results, elapsed = run_executions(serving, a.executions, a.clients, "%d nodes" % k)
        per = {}
        for r in results.values():
            per[r[0]] = per.get(r[0], 0) + 1
        rates[k] = a.executions / elapsed
        print("throughput %d node(s): %d executions from %d clients in %.1f s = %.1f/s  %s  load %.1f"
              % (k, a.executions, a.clients, elapsed, rates[k], per, os.getloadavg()[0]), flush=True)
    print("scaling: 2 nodes / 1 = %.2fx, 3 nodes / 1 = %.2fx (one machine's shared cores)"
          % (rates[2] / rates[1], rates[3] / rates[1]), flush=True)

    # Routing overhead: the same requests to one node, through a front and directly.
    cl = Cluster(all_nodes, a.token, 8000, 8080)
    status, doc, _ = cl.front(0, "POST", "/v1/sessions", {"language": "python"})
    sid, node = doc["session_id"], doc["node"]
    addr = dict(all_nodes)[node]
    other = next(ad for n, ad in all_nodes if n != node)  # a front on another node: the longer way
    path = "/v1/sessions/%s/execute" % sid
    body = {"code": "print(1)"}
    for what, method, p, b in [("GET /readyz", "GET", "/readyz", None), ("session execute", "POST", path, body)]:
        n = 200 if method == "GET" else 30
        direct = timed(lambda: cl.request(addr, 8080, method, p, b), n)
        same = timed(lambda: cl.request(addr, 8000, method, p, b), n)
        cross = timed(lambda: cl.request(other, 8000, method, p, b), n)
        md, ms, mc = (statistics.median(x) for x in (direct, same, cross))
        print("overhead %-16s median ms: direct %.2f, front on its node %.2f (+%.2f, %.2fx), front on another "
              "node %.2f (+%.2f, %.2fx)" % (what, md, ms, ms - md, ms / md, mc, mc - md, mc / md), flush=True)
    cl.request(addr, 8080, "DELETE", "/v1/sessions/" + sid)


if __name__ == "__main__":
    main()
