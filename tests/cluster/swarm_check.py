#!/usr/bin/env python3
"""The cluster checks (tests/cluster/run.sh sets up the swarm and calls this).

Clients talk only to the fronts (each node's published HAProxy port); a client whose front does
not answer (connection refused or reset, 502/503/504) moves to the next node's front and tries
again, as a real client of a cluster would. Prints one JSON line per phase; exits 1 on the first
broken promise, naming it.

  swarm_check.py --token T --nodes lsw-n1=192.168.231.11,... --stop-node lsw-n3 \
      --stop-cmd "tests/cluster/swarm_nodes.sh stop-node 3" [--executions 300 --clients 16
      --sessions 10 --steps 20]
"""
import argparse
import collections
import http.client
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time

RETRYABLE = {502, 503, 504}


class Cluster:
    def __init__(self, nodes, token, front_port, node_port):
        self.nodes = nodes  # [(name, addr)]
        self.token = token
        self.front_port = front_port
        self.node_port = node_port
        self.dead = set()  # nodes the test stopped: clients learn it from connection errors

    # How long a client waits for an answer before it gives up on that node and retries: the
    # test's programs take milliseconds, so 25 s means the node is gone (one that vanished sends
    # neither an answer nor a reset; only a timeout tells).
    ANSWER_TIMEOUT_S = 25

    def request(self, addr, port, method, path, body=None, timeout=ANSWER_TIMEOUT_S):
        # A node that vanished answers no SYN: connect briefly, then wait long for the answer.
        conn = http.client.HTTPConnection(addr, port, timeout=2)
        try:
            conn.connect()
            conn.sock.settimeout(timeout)
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Authorization": "Bearer " + self.token}
            if data is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = {"raw": raw.decode(errors="replace")}
            return r.status, doc, r.getheader("X-LLM-Sandbox-Node")
        finally:
            conn.close()

    def front(self, start, method, path, body=None, budget_s=120):
        """Through the fronts, starting at node `start`; retries on a connection error or a
        retryable status at the next front. Returns (status, doc, attempts)."""
        deadline = time.monotonic() + budget_s
        attempts, i = 0, start
        last = None
        while time.monotonic() < deadline:
            _, addr = self.nodes[i % len(self.nodes)]
            i += 1
            attempts += 1
            try:
                status, doc, _ = self.request(addr, self.front_port, method, path, body)
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
                time.sleep(0.05)
                continue
            if status in RETRYABLE and not path.startswith("/v1/sessions/"):
                last = (status, doc)
                time.sleep(0.2)
                continue
            return status, doc, attempts
        raise RuntimeError("no front answered %s %s within %ss (last: %s)" % (method, path, budget_s, last))


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def report(phase, **kw):
    print(json.dumps(dict(phase=phase, **kw)), flush=True)


def run_executions(cl, count, clients, tag, on_progress=None):
    """`count` one-shot executions from `clients` threads; each prints a number the test checks.
    Returns {job: (node, attempts)}; raises on a wrong or missing result."""
    jobs = queue.Queue()
    for j in range(count):
        jobs.put(j)
    results, errors = {}, []
    lock = threading.Lock()

    def client(k):
        while True:
            try:
                j = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                status, doc, attempts = cl.front(k, "POST", "/v1/execute",
                                                 {"language": "python", "code": "print(%d * 7)" % j})
            except RuntimeError as e:
                with lock:
                    errors.append("job %d: %s" % (j, e))
                continue
            with lock:
                if status != 200 or doc.get("exit_code") != 0 or doc.get("stdout", "").strip() != str(j * 7):
                    errors.append("job %d: %s %s" % (j, status, json.dumps(doc)[:300]))
                elif not doc.get("node"):
                    errors.append("job %d: the result names no node: %s" % (j, json.dumps(doc)[:300]))
                else:
                    results[j] = (doc["node"], attempts, time.monotonic())
                    if on_progress:
                        on_progress(len(results))

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    if errors:
        fail("%s: %d of %d executions failed; first: %s" % (tag, len(errors), count, errors[:3]))
    lost = count - len(results)
    if lost:
        fail("%s: %d executions lost" % (tag, lost))
    return results, elapsed


def run_until(cl, clients, done, tag):
    """One-shot executions from `clients` threads, back to back, until `done` is set. Every one
    must answer its own right result (a client retries on connection errors and 502/503/504, as
    in run_executions). Returns {job: (node, attempts, finished_at)}."""
    ids = itertools.count()
    results, errors = {}, []
    lock = threading.Lock()

    def client(k):
        while not done.is_set():
            j = next(ids)
            try:
                status, doc, attempts = cl.front(k, "POST", "/v1/execute",
                                                 {"language": "python", "code": "print(%d * 7)" % j})
            except RuntimeError as e:
                with lock:
                    errors.append("job %d lost: %s" % (j, e))
                continue
            with lock:
                if status != 200 or doc.get("exit_code") != 0 or doc.get("stdout", "").strip() != str(j * 7):
                    errors.append("job %d: %s %s" % (j, status, json.dumps(doc)[:300]))
                else:
                    results[j] = (doc.get("node"), attempts, time.monotonic())

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("%s: %d of %d executions failed or were lost; first: %s" % (tag, len(errors), len(errors) + len(results), errors[:3]))
    return results


def readyz_through_front(cl, k, node):
    """A node's /readyz through the fronts; (503, None) while it is not serving."""
    try:
        status, doc, _ = cl.front(k, "GET", "/nodes/%s/readyz" % node, budget_s=5)
    except RuntimeError:
        return 503, None
    return status, doc


def cluster_view(cl, names):
    """The front's cluster view (the dashboard's nodes table): every front lists every node, and
    each node's overview and readyz, read through any front, are that node's own."""
    for k, (_, addr) in enumerate(cl.nodes):
        status, doc, _ = cl.request(addr, cl.front_port, "GET", "/cluster/nodes")
        if status != 200 or sorted(n["name"] for n in doc.get("nodes", [])) != sorted(names):
            fail("front of %s: GET /cluster/nodes answered %s %s, not the nodes %s" % (addr, status, doc, names))
        for n in names:
            status, doc, node = cl.request(addr, cl.front_port, "GET", "/nodes/%s/v1/overview" % n)
            if status != 200 or doc.get("node") != n or node != n or not doc.get("daemon", {}).get("started_at"):
                fail("front of %s: /nodes/%s/v1/overview answered %s (node header %s): %s" % (addr, n, status, node, json.dumps(doc)[:300]))
    status, doc, _ = cl.request(cl.nodes[0][1], cl.front_port, "GET", "/nodes/no-such-node/v1/overview")
    if status != 404 or "/cluster/nodes" not in json.dumps(doc):
        fail("an unknown node's page answered %s %s, not a 404 naming /cluster/nodes" % (status, doc))
    status, doc, _ = cl.request(cl.nodes[0][1], cl.front_port, "POST", "/nodes/%s/v1/overview" % names[0], {})
    if status != 404:
        fail("POST to a node page answered %s, not 404 (the node paths are GET only)" % status)
    report("cluster_view", fronts=len(cl.nodes), nodes=names)


def python_client_through_front(cl, names, policy="code-sandbox"):
    """The Python client's execute() is submit (202, an id naming the node) and a long-poll of
    GET /v1/executions/{id}: through a front the long-poll must reach the node that holds the
    result (the front routes on the id), whichever node the submit landed on."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    from llm_sandbox import SandboxClient as Client
    seen = collections.Counter()
    for k in range(3 * len(names)):
        _, addr = cl.nodes[k % len(cl.nodes)]
        c = Client("http://%s:%d" % (addr, cl.front_port), token=cl.token, policy=policy, timeout=60)
        r = c.execute("print(%d + 1)" % k, language="python")
        if r.get("stdout", "").strip() != str(k + 1) or not r["execution_id"].endswith("-" + str(r.get("node"))):
            fail("python client through the front: %s" % json.dumps(r)[:300])
        seen[r["node"]] += 1
    if set(seen) != set(names):
        fail("python client's executions did not reach every node: %s" % dict(seen))
    report("python_client", executions=sum(seen.values()), per_node=dict(seen))


def service_tasks(manager_sock, service):
    out = subprocess.run(["docker", "-H", "unix://" + manager_sock, "service", "ps", "-q", "--no-trunc",
                          "--filter", "desired-state=running", service], capture_output=True, text=True, timeout=30)
    return set(out.stdout.split())


def rolling_update(cl, names, clients, manager_sock, sessions):
    """`docker service update` of the orchestrators (the stack's update_config: one node at a time,
    stop-first, each new daemon healthy before the next node's turn) while clients keep executing
    through the fronts: none lost, every node serves again, from a new task and a new daemon. The
    sessions of the old daemons are gone by design: they answer the clear 410/404."""
    before_tasks = service_tasks(manager_sock, "lsb_orchestrator")
    before = {n: readyz_through_front(cl, 0, n)[1]["started_at"] for n in names}
    done, upd = threading.Event(), {}

    def update():
        t0 = time.monotonic()
        try:
            r = subprocess.run(["docker", "-H", "unix://" + manager_sock, "service", "update", "--detach=false",
                                "--no-resolve-image", "--env-add", "LSB_ROLLOUT=%d" % time.time(), "lsb_orchestrator"],
                               capture_output=True, text=True, timeout=240)
            upd.update(rc=r.returncode, out=(r.stdout + r.stderr)[-800:], seconds=time.monotonic() - t0)
        finally:
            upd["ended"] = time.monotonic()
            done.set()

    started = time.monotonic()
    threading.Thread(target=update).start()
    results = run_until(cl, clients, done, "rolling update")
    if upd.get("rc") != 0:
        fail("docker service update failed (rc %s): %s" % (upd.get("rc"), upd.get("out")))
    per_node = collections.Counter(r[0] for r in results.values())
    # Every node serves again: each answers through the front, as a daemon started after the
    # update began (a new process), in a task the update made.
    fresh = {}
    deadline = time.monotonic() + 60
    for k, n in enumerate(names):
        while True:
            status, doc = readyz_through_front(cl, k, n)
            if status == 200 and doc.get("node") == n and doc.get("started_at") not in (None, before[n]):
                fresh[n] = doc["started_at"]
                break
            if time.monotonic() > deadline:
                fail("node %s does not serve a new daemon after the update: %s %s (before: %s)" % (n, status, doc, before[n]))
            time.sleep(0.5)
    # Swarm's own view of the tasks can lag the daemons' (a task restarted by a health check under
    # load is a moment without desired state running): ask until it agrees or the deadline passes.
    while True:
        after_tasks = service_tasks(manager_sock, "lsb_orchestrator")
        if (len(after_tasks) == len(names) and not after_tasks & before_tasks) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if len(after_tasks) != len(names) or after_tasks & before_tasks:
        fail("the update did not replace every node's task: before %s, after %s" % (sorted(before_tasks), sorted(after_tasks)))
    later, _ = run_executions(cl, 4 * len(names), len(names), "after the update")
    later_nodes = collections.Counter(r[0] for r in later.values())
    if set(later_nodes) != set(names):
        fail("after the update, executions did not reach every node: %s" % dict(later_nodes))
    # The old daemons' sessions: lost with them, each answers a clear error naming why.
    answers = collections.Counter()
    for k, (sid, node) in enumerate(sessions):
        status, doc, _ = cl.front(k, "POST", "/v1/sessions/%s/execute" % sid, {"code": "print(n)"})
        msg = json.dumps(doc)
        clear = (status == 410 and "not serving now" in msg) or (status == 404 and "earlier daemon" in msg)
        if not clear or sid not in msg:
            fail("session %s of an updated node answered %s %s, not a clear 410/404" % (sid, status, msg[:300]))
        answers[status] += 1
    report("rolling_update", seconds=round(upd["seconds"], 1), executions=len(results), per_node=dict(per_node),
           retried=sum(1 for r in results.values() if r[1] > 1), lost=0, new_daemons=fresh,
           after_update=dict(later_nodes), old_sessions=dict(answers),
           example_answer=(status, doc.get("error", {}).get("message")))
    return time.monotonic() - started


def open_sessions(cl, count):
    sessions = []
    for k in range(count):
        status, doc, _ = cl.front(k, "POST", "/v1/sessions", {"language": "python"})
        if status != 201:
            fail("session create: %s %s" % (status, doc))
        sid, node = doc.get("session_id", ""), doc.get("node")
        if not node or not sid.endswith("-" + node):
            fail("the create answer must carry the node, and the id name it: %s" % doc)
        sessions.append((sid, node))
    return sessions


def step_session(cl, k, sid, expect):
    code = "n = globals().get('n', 0) + 1\nprint(n)"
    status, doc, _ = cl.front(k, "POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    if status != 200 or doc.get("stdout", "").strip() != str(expect):
        fail("session %s step %d: %s %s" % (sid, expect, status, json.dumps(doc)[:300]))
    if not sid.endswith("-" + str(doc.get("node"))):
        fail("session %s answered by node %s" % (sid, doc.get("node")))


def sandbox_containers(sock):
    out = subprocess.run(["docker", "-H", "unix://" + sock, "ps", "-aq", "--filter", "label=io.llm-sandbox.owner"],
                         capture_output=True, text=True, timeout=30)
    return [l for l in out.stdout.split() if l]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", required=True)
    ap.add_argument("--nodes", required=True, help="name=addr,...")
    ap.add_argument("--socks", required=True, help="name=engine socket,...")
    ap.add_argument("--front-port", type=int, default=8000)
    ap.add_argument("--node-port", type=int, default=8080)
    ap.add_argument("--executions", type=int, default=300)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--stop-node", required=True)
    ap.add_argument("--stop-cmd", required=True)
    ap.add_argument("--no-rolling", action="store_true", help="leave out the rolling update phase")
    a = ap.parse_args()
    nodes = [tuple(x.split("=", 1)) for x in a.nodes.split(",")]
    socks = dict(x.split("=", 1) for x in a.socks.split(","))
    cl = Cluster(nodes, a.token, a.front_port, a.node_port)
    names = [n for n, _ in nodes]

    # 1. One-shot executions spread over every node, none lost.
    results, elapsed = run_executions(cl, a.executions, a.clients, "spread")
    per_node = collections.Counter(r[0] for r in results.values())
    report("spread", executions=a.executions, clients=a.clients, seconds=round(elapsed, 1),
           per_second=round(a.executions / elapsed, 1), per_node=dict(per_node),
           retried=sum(1 for r in results.values() if r[1] > 1))
    if set(per_node) != set(names):
        fail("executions did not reach every node: %s (nodes: %s)" % (dict(per_node), names))

    # 2. Sessions through the front keep their state; their requests land on their node.
    sessions = open_sessions(cl, a.sessions)
    t0 = time.monotonic()
    broken = []

    def drive(k, sid):  # one client per session, all at once
        try:
            for step in range(1, a.steps + 1):
                step_session(cl, k, sid, step)
        except SystemExit as e:
            broken.append(e)

    threads = [threading.Thread(target=drive, args=(k, sid)) for k, (sid, _) in enumerate(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if broken:
        sys.exit(1)
    report("sessions", sessions=len(sessions), steps=a.steps, seconds=round(time.monotonic() - t0, 1),
           per_node=dict(collections.Counter(n for _, n in sessions)))

    # 2b. The cluster's view through the fronts (the dashboard's nodes table); the Python client
    #     (submit + long-poll by a node-named id) through the fronts.
    cluster_view(cl, names)
    python_client_through_front(cl, names)

    # 2c. A rolling update keeps serving; then fresh sessions for the failover phase (the old ones
    #     went with their daemons).
    done_steps = a.steps
    if not a.no_rolling:
        rolling_update(cl, names, a.clients, socks[names[0]], sessions)
        sessions, done_steps = open_sessions(cl, a.sessions), 2
        for k, (sid, _) in enumerate(sessions):
            for step in range(1, done_steps + 1):
                step_session(cl, k, sid, step)
    if a.stop_node not in {n for _, n in sessions}:
        # Round robin puts them everywhere; one more makes sure the stopped node holds one.
        for _ in range(2 * len(names)):
            extra = open_sessions(cl, 1)[0]
            sessions.append(extra)
            for step in range(1, done_steps + 1):
                step_session(cl, 0, extra[0], step)
            if extra[1] == a.stop_node:
                break
    if a.stop_node not in {n for _, n in sessions}:
        fail("no session landed on %s" % a.stop_node)

    # 3. A node stops in the middle of a run: executions finish on the others.
    stopped, dead_at = threading.Event(), []

    def stop_node():
        subprocess.run(a.stop_cmd, shell=True, check=True, timeout=90)
        dead_at.append(time.monotonic())

    def stop_when(done):
        if done >= a.executions // 4 and not stopped.is_set():
            stopped.set()
            threading.Thread(target=stop_node).start()

    results2, elapsed2 = run_executions(cl, a.executions, a.clients, "failover", on_progress=stop_when)
    if not dead_at:
        fail("the node was not stopped before the run ended (make the run longer)")
    after = [r for r in results2.values() if r[2] > dead_at[0]]
    survivors = [n for n in names if n != a.stop_node]
    report("failover", executions=a.executions, stopped=a.stop_node, seconds=round(elapsed2, 1),
           per_node=dict(collections.Counter(r[0] for r in results2.values())),
           after_stop=dict(collections.Counter(r[0] for r in after)),
           retried=sum(1 for r in results2.values() if r[1] > 1))
    if not after:
        fail("no execution finished after the node was stopped")
    if any(r[0] == a.stop_node for r in after):
        fail("a result came from the stopped node after it was stopped")

    # 4. The stopped node's sessions answer the clear error; the others keep going.
    deadline = time.monotonic() + 30
    gone = [s for s in sessions if s[1] == a.stop_node]
    for sid, node in gone:
        while True:
            status, doc, _ = cl.front(0, "POST", "/v1/sessions/%s/execute" % sid, {"code": "print(n)"})
            msg = json.dumps(doc)
            if status in (404, 410) and node in msg and "session" in msg:
                break
            if time.monotonic() > deadline:
                fail("session %s on the stopped node answered %s %s, not a clear 410/404" % (sid, status, msg[:300]))
            time.sleep(0.5)
    report("gone_sessions", sessions=len(gone), status=status, message=doc["error"]["message"])
    # The cluster view shows the stopped node as not serving (the dashboard's "down").
    survivor_addr = [addr for n, addr in nodes if n != a.stop_node][0]
    st, page, _ = cl.request(survivor_addr, a.front_port, "GET", "/nodes/%s/v1/overview" % a.stop_node)
    if st != 503 or a.stop_node not in json.dumps(page):
        fail("the stopped node's overview through the front answered %s %s, not a 503 naming it" % (st, page))
    alive = [s for s in sessions if s[1] != a.stop_node]
    for k, (sid, _) in enumerate(alive):
        step_session(cl, k, sid, done_steps + 1)
        status, doc, _ = cl.front(k, "DELETE", "/v1/sessions/" + sid)
        if status != 204:
            fail("close %s: %s %s" % (sid, status, doc))

    # 5. Nothing left behind on the survivors: no session, nothing running, and only the warm
    #    pools' containers on each engine (the one-shot pool's and the session pool's).
    addr = dict(nodes)
    deadline = time.monotonic() + 60
    for n in survivors:
        while True:
            _, ready, _ = cl.request(addr[n], a.node_port, "GET", "/readyz")
            left = sandbox_containers(socks[n])
            warm = ready["warm_boxes"] + ((ready.get("session_pool") or {}).get("warm_boxes") or 0)
            clean = (ready["sessions"] == 0 and ready["running"] == 0 and ready["reaping"] == 0
                     and len(left) == warm)
            if clean:
                break
            if time.monotonic() > deadline:
                fail("node %s keeps %d sandbox containers (warm: %d) and %s" % (n, len(left), warm, ready))
            time.sleep(1)
    report("leftovers", survivors=survivors, ok=True)
    print("PASS", flush=True)


if __name__ == "__main__":
    main()
