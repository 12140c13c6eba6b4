"""A daemon's node identity (issue 24, docs/scale-out.md), over raw HTTP against the real daemon:
--node-name is named in /readyz, in every result (one-shot, batch, session), in each session id
(ses-<hex>-<node>) and the create answer, in an X-LLM-Sandbox-Node header on every answer, and as
a label on every /metrics series; a session id naming another node gets a 404 saying where it
lives. Execution ids name the node too (ex-<hex>-<node>: the cluster front routes an async result's
long-poll on it), and one of another node gets a 404 saying which. /readyz and /v1/overview carry the
daemon's start time (a rolling update's new daemon is told from the old one by it); `llm-sandbox
ready` (the orchestrator image's health check) exits 0 only for a ready daemon. Hostile names
(header injection, path pieces, too long) are refused at start."""
import datetime
import re
import socket
import subprocess
import threading
import unittest

from daemon_harness import BINARY, Daemon, request, skip_unless_daemon_suite


class NodeNameTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--node-name", "edge-7", "--pool-size", "0")
        cls.addClassCleanup(cls.d.close)

    def test_readyz_and_header_name_the_node(self):
        r = request(self.d.base, "GET", "/readyz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["node"], "edge-7")
        self.assertEqual(r.headers.get("X-LLM-Sandbox-Node"), "edge-7")
        # the dashboard's overview shows it
        self.assertEqual(request(self.d.base, "GET", "/v1/overview").json()["node"], "edge-7")
        # errors too: a front logs which node refused
        r = request(self.d.base, "GET", "/v1/no-such-route")
        self.assertEqual(r.headers.get("X-LLM-Sandbox-Node"), "edge-7")

    def test_every_result_names_the_node(self):
        r = request(self.d.base, "POST", "/v1/execute", {"code": "print(6 * 7)"})
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual((r.json()["stdout"].strip(), r.json()["node"]), ("42", "edge-7"))
        r = request(self.d.base, "POST", "/v1/batch", {"tasks": [{"code": "print(1)"}, {"code": "print(2)"}]})
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual([x["node"] for x in r.json()["results"]], ["edge-7", "edge-7"])

    def test_session_id_and_create_answer_name_the_node(self):
        r = request(self.d.base, "POST", "/v1/sessions", {"language": "python"})
        self.assertEqual(r.status, 201, r.body[:500])
        sid = r.json()["session_id"]
        self.addCleanup(request, self.d.base, "DELETE", "/v1/sessions/" + sid)
        self.assertRegex(sid, r"^ses-[0-9a-f]{16}-edge-7$")
        self.assertEqual(r.json()["node"], "edge-7")
        x = request(self.d.base, "POST", f"/v1/sessions/{sid}/execute", {"code": "print('in')"})
        self.assertEqual((x.status, x.json()["node"]), (200, "edge-7"), x.body[:500])

    def test_a_session_of_another_node_says_where_it_lives(self):
        sid = "ses-0123456789abcdef-edge-9"
        r = request(self.d.base, "POST", f"/v1/sessions/{sid}/execute", {"code": "print(1)"})
        self.assertEqual(r.status, 404)
        msg = r.json()["error"]["message"]
        self.assertIn("lives on node edge-9", msg)
        self.assertIn("on node edge-7", msg)
        r = request(self.d.base, "DELETE", f"/v1/sessions/{sid}")
        self.assertEqual(r.status, 404)
        self.assertIn("lives on node edge-9", r.json()["error"]["message"])
        # an id of this node that does not exist is the plain answer
        r = request(self.d.base, "GET", "/v1/sessions/ses-0123456789abcdef-edge-7")
        self.assertEqual(r.status, 404)
        self.assertNotIn("lives on", r.json()["error"]["message"])
        # which may have lived in the daemon before this one (a restart, a rolling update)
        started = request(self.d.base, "GET", "/readyz").json()["started_at"]
        self.assertIn("or lived in an earlier daemon on node edge-7: this one started at " + started,
                      r.json()["error"]["message"])

    def test_execution_ids_name_the_node(self):
        r = request(self.d.base, "POST", "/v1/execute", {"code": "print(1)"})
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertRegex(r.json()["execution_id"], r"^ex-[0-9a-f]{16}-edge-7$")
        self.assertEqual(r.headers.get("X-Execution-Id"), r.json()["execution_id"])
        a = request(self.d.base, "POST", "/v1/execute?async=true", {"code": "print(2)"})
        self.assertEqual(a.status, 202, a.body[:500])
        xid = a.json()["execution_id"]
        self.assertRegex(xid, r"^ex-[0-9a-f]{16}-edge-7$")
        g = request(self.d.base, "GET", f"/v1/executions/{xid}?wait=30")
        self.assertEqual((g.status, g.json()["state"], g.json()["result"]["stdout"]), (200, "finished", "2\n"))
        self.assertEqual(g.json()["result"]["node"], "edge-7")  # an async result names its node too
        b = request(self.d.base, "POST", "/v1/batch", {"tasks": [{"code": "print(3)"}], "async": True})
        self.assertEqual(b.status, 202, b.body[:500])
        self.assertRegex(b.json()["execution_id"], r"^ex-[0-9a-f]{16}-edge-7$")

    def test_an_execution_of_another_node_says_where_it_ran(self):
        r = request(self.d.base, "GET", "/v1/executions/ex-0123456789abcdef-edge-9")
        self.assertEqual(r.status, 404)
        msg = r.json()["error"]["message"]
        self.assertIn("it ran on node edge-9", msg)
        self.assertIn("on node edge-7", msg)
        # an id of this node that is not here: the plain answer
        r = request(self.d.base, "GET", "/v1/executions/ex-0123456789abcdef-edge-7")
        self.assertEqual(r.status, 404)
        self.assertNotIn("ran on node", r.json()["error"]["message"])

    def test_readyz_and_overview_carry_the_start_time(self):
        started = request(self.d.base, "GET", "/readyz").json()["started_at"]
        t = datetime.datetime.fromisoformat(started.replace("Z", "+00:00"))
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertLess(abs((now - t).total_seconds()), 600, started)
        self.assertEqual(request(self.d.base, "GET", "/v1/overview").json()["daemon"]["started_at"], started)

    def test_ready_command_is_the_health_check(self):
        port = self.d.base.rsplit(":", 1)[1]
        ok = subprocess.run([BINARY, "ready", "--port", port], capture_output=True, text=True, timeout=30)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        closed = str(s.getsockname()[1])
        s.close()
        no = subprocess.run([BINARY, "ready", "--port", closed], capture_output=True, text=True, timeout=30)
        self.assertEqual(no.returncode, 1)
        self.assertIn("connect to 127.0.0.1:" + closed, no.stderr)
        # something that answers, but not 200 on /readyz
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)

        def answer():
            c, _ = srv.accept()
            c.recv(1024)
            c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
            c.close()
        threading.Thread(target=answer, daemon=True).start()
        busy = subprocess.run([BINARY, "ready", "--port", str(srv.getsockname()[1])], capture_output=True, text=True, timeout=30)
        srv.close()
        self.assertEqual(busy.returncode, 1)
        self.assertIn("not ready: HTTP/1.1 503", busy.stderr)
        # a listener that never answers: bounded by --timeout
        mute = socket.socket()
        mute.bind(("127.0.0.1", 0))
        mute.listen(1)
        p = subprocess.run([BINARY, "ready", "--port", str(mute.getsockname()[1]), "--timeout", "1"],
                           capture_output=True, text=True, timeout=30)
        mute.close()
        self.assertEqual(p.returncode, 1)
        self.assertIn("no answer within 1 s", p.stderr)
        for bad in (["--port", "0"], ["--port", "x"], ["--timeout", "99"], ["--what"], ["--port"]):
            b = subprocess.run([BINARY, "ready"] + bad, capture_output=True, text=True, timeout=30)
            self.assertEqual(b.returncode, 2, (bad, b.stderr))

    def test_every_metrics_series_carries_the_node_label(self):
        text = request(self.d.base, "GET", "/metrics").body.decode()
        samples = [l for l in text.splitlines() if l and not l.startswith("#")]
        self.assertGreater(len(samples), 10, text[:500])
        unlabeled = [l for l in samples if not re.match(r'^[a-z_:]+\{node="edge-7"[,}]', l)]
        self.assertEqual(unlabeled, [], "series without the node label")


class NodeNameDefaultsAndRefusalsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()

    def test_default_is_the_short_hostname_and_metrics_stay_unlabeled(self):
        d = Daemon("--pool-size", "0", env={"LLM_SANDBOX_NODE": ""})
        self.addCleanup(d.close)
        want = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname().split(".")[0])[:63]
        self.assertEqual(request(d.base, "GET", "/readyz").json()["node"], want)
        text = request(d.base, "GET", "/metrics").body.decode()
        self.assertNotIn('node="', text)

    def test_the_environment_names_the_node(self):
        d = Daemon("--pool-size", "0", env={"LLM_SANDBOX_NODE": "from-env_1"})
        self.addCleanup(d.close)
        self.assertEqual(request(d.base, "GET", "/readyz").json()["node"], "from-env_1")

    def test_hostile_names_are_refused_at_start(self):
        for name in ["a b", "../etc", "x\r\nSet-Cookie: y", "n" * 64, "dot.ted", "quo\"te"]:
            for how in ("flag", "env"):
                args = [BINARY, "serve", "--listen", "127.0.0.1:0"]
                env = {"PATH": "/usr/bin:/bin"}
                if how == "flag":
                    args += ["--node-name", name]
                else:
                    env["LLM_SANDBOX_NODE"] = name
                p = subprocess.run(args, capture_output=True, text=True, timeout=30, env=env)
                self.assertEqual(p.returncode, 2, (name, how, p.stderr[-500:]))
                self.assertIn("letters, digits, - or _", p.stderr, (name, how))


if __name__ == "__main__":
    unittest.main()
