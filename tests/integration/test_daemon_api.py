"""The daemon's HTTP API (docs/api.md) through the real `llm-sandbox serve` on the native backend:
every route, its errors, SSE, sessions, batch, SIGHUP, SIGTERM, and 10 isolated sessions side by
side. Every JSON answer is checked against docs/openapi.yaml."""
import base64
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import unittest
import urllib.request

from daemon_harness import (POLICY_DIR, Daemon, OpenApi, request,
                                              skip_unless_daemon_suite)


class DaemonApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.d = Daemon("--max-body", "256K", "--max-concurrency", "4", "--queue", "32")
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def call(self, method, path, template=None, body=None, **kw):
        r = request(self.d.base, method, path, body=body, **kw)
        if template and r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def execute(self, body, status=200):
        r = self.call("POST", "/v1/execute", "/v1/execute", body)
        self.assertEqual(r.status, status, r.body[:2000])
        return r.json()

    def assertError(self, r, status, code, mentions=None):
        self.assertEqual(r.status, status, r.body[:2000])
        err = r.json()["error"]
        self.assertEqual(err["code"], code)
        if mentions:
            self.assertIn(mentions, err["message"])

    # ---- health, policies

    def test_health_and_ready(self):
        r = self.call("GET", "/healthz", "/healthz")
        self.assertEqual(r.json(), {"status": "ok"})
        r = self.call("GET", "/readyz", "/readyz")
        self.assertEqual(r.json()["backend"], "native")

    def test_policies(self):
        r = self.call("GET", "/v1/policies", "/v1/policies")
        names = [p["name"] for p in r.json()["policies"]]
        self.assertIn("code-sandbox", names)
        r = self.call("GET", "/v1/policies/code-sandbox", "/v1/policies/{name}")
        detail = r.json()
        self.assertEqual(detail["policy"]["resources"]["memory_bytes"], 256 << 20)
        self.assertTrue(any(c["control"] == "resources.memory" for c in detail["explain"]))
        self.assertError(self.call("GET", "/v1/policies/nope", "/v1/policies/{name}"), 404, "not_found")

    def test_policies_say_which_the_backend_can_run_and_describe_each(self):
        listed = self.call("GET", "/v1/policies", "/v1/policies").json()["policies"]
        by_name = {p["name"]: p for p in listed}
        for p in listed:
            self.assertTrue(p["description"].strip(), p)  # code-sandbox's is built in
            self.assertIsInstance(p["runnable"], bool)
            self.assertEqual("reason" in p, not p["runnable"], p)
        gv = by_name["python-gvisor"]  # runtime runsc: a Docker runtime, and this daemon is native
        self.assertFalse(gv["runnable"])
        self.assertIn("the native backend of this daemon cannot run it", gv["reason"])
        self.assertIn("container.runtime", gv["reason"])
        self.assertIn("fix: run the daemon with --backend docker", gv["reason"])
        for name in ("code-sandbox", "python-strict", "bash-tools", "research-trace"):
            self.assertTrue(by_name[name]["runnable"], by_name[name])
        self.assertTrue(by_name["code-sandbox"]["description"].startswith("Python with pip"))
        detail = self.call("GET", "/v1/policies/python-gvisor", "/v1/policies/{name}").json()
        self.assertFalse(detail["runnable"])
        self.assertEqual(detail["reason"], gv["reason"])
        self.assertTrue(self.call("GET", "/v1/policies/bash-tools", "/v1/policies/{name}").json()["runnable"])

    def test_a_policy_the_backend_cannot_run_is_refused_with_400_not_502(self):
        r = self.call("POST", "/v1/execute", "/v1/execute", {"code": "print(1)", "policy": "python-gvisor"})
        self.assertError(r, 400, "bad_request", "policy: policy 'python-gvisor' is not runnable here: the native "
                                                "backend of this daemon cannot run it")
        self.assertIn("--backend docker", r.json()["error"]["message"])
        r = self.call("POST", "/v1/sessions", "/v1/sessions", {"policy": "python-gvisor"})
        self.assertError(r, 400, "bad_request", "not runnable here")
        r = self.call("POST", "/v1/batch", "/v1/batch",
                      {"tasks": [{"code": "print(1)", "policy": "python-gvisor"}, {"code": "print(2)"}]})
        self.assertEqual(r.status, 200, r.body)
        first, second = r.json()["results"]
        self.assertEqual(first["error"]["code"], "bad_request")
        self.assertIn("not runnable here", first["error"]["message"])
        self.assertEqual(second["stdout"], "2\n")

    def test_shell_policy_runs_the_common_commands(self):
        # bash-tools' presets (@coreutils, @findutils, @text): mkdir, seq, tr, cut, find, xargs, date.
        code = ("cd /tmp && mkdir -p a/b && seq 2 | tr '\\n' , && echo x,y | cut -d, -f2 && "
                "find a -name b && echo q | xargs echo got && date +%Y | wc -c")
        r = self.execute({"code": code, "policy": "bash-tools", "language": "bash"})
        self.assertEqual((r["status"], r["stdout"]), ("ok", "1,2,y\na/b\ngot q\n5\n"), r)

    # ---- execute

    def test_execute_ok(self):
        res = self.execute({"code": "import sys\nprint('hi')\nprint('err', file=sys.stderr)"})
        self.assertEqual((res["stdout"], res["stderr"], res["exit_code"], res["status"]), ("hi\n", "err\n", 0, "ok"))
        self.assertEqual(res["policy"], "code-sandbox")
        self.assertTrue(res["execution_id"])

    def test_execute_stdin_env_files_and_tightening(self):
        res = self.execute({
            "code": "import os,sys\nprint(sys.stdin.read(), os.environ['X'], open('/tmp/a.txt').read(),"
                    " open('/tmp/d/b.bin','rb').read())",
            "stdin": "in", "env": {"X": "ex"}, "timeout": 5, "memory": "128M", "cpu": 0.25,
            "files": [{"path": "/tmp/a.txt", "content": "A"},
                      {"path": "/tmp/d/b.bin", "content_base64": base64.b64encode(b"\x00\x01").decode()}]})
        self.assertEqual(res["stdout"], "in ex A b'\\x00\\x01'\n", res)

    def test_execute_timeout_and_error_status(self):
        res = self.execute({"code": "import time\ntime.sleep(10)", "timeout": 0.5})
        self.assertEqual(res["status"], "timeout")
        res = self.execute({"code": "raise SystemExit(3)"})
        self.assertEqual((res["status"], res["exit_code"]), ("error", 3))

    def test_bad_requests_name_the_field(self):
        r = self.call("POST", "/v1/execute", "/v1/execute", raw=True, body=b"{not json",
                      headers={"Content-Type": "application/json"})
        self.assertError(r, 400, "bad_request", "JSON")
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute", {"code": 5}), 400, "bad_request", "code")
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute", {}), 400, "bad_request", "code")
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute", {"code": "1", "timeout": [1]}),
                         400, "bad_request", "timeout")
        typo = self.call("POST", "/v1/execute", "/v1/execute", {"code": "1", "timout": 1})
        self.assertError(typo, 400, "bad_request", "timout")
        # Issue 37: the loader's did-you-mean over HTTP, in the message and as members a client reads.
        self.assertIn("did you mean 'timeout'?", typo.json()["error"]["message"])
        self.assertEqual(typo.json()["error"]["did_you_mean"], "timeout")
        self.assertIn("timeout", typo.json()["error"]["known_fields"])
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute", {"code": "1", "policy": "nope"}),
                         400, "bad_request", "policy")
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute",
                                   {"code": "1", "files": [{"path": "/etc/x", "content": ""}]}),
                         400, "bad_request", "files[0].path")
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute",
                                   {"code": "1", "files": [{"path": "/tmp/../etc/x", "content": ""}]}),
                         400, "bad_request", "files[0].path")

    def test_loosening_is_forbidden_naming_the_field(self):
        for body, field in (({"timeout": 31}, "timeout"), ({"memory": "1G"}, "memory"),
                            ({"cpu": 2}, "cpu"), ({"network": True}, "network")):
            body["code"] = "print(1)"
            r = self.call("POST", "/v1/execute", "/v1/execute", body)
            self.assertError(r, 403, "forbidden")
            self.assertTrue(r.json()["error"]["message"].startswith(field), r.json())

    def test_not_found_method_media_type_and_size(self):
        self.assertError(self.call("GET", "/v1/nothing"), 404, "not_found")
        r = self.call("GET", "/v1/execute")
        self.assertError(r, 405, "method_not_allowed")
        r = self.call("POST", "/v1/execute", "/v1/execute", raw=True, body=b"code",
                      headers={"Content-Type": "multipart/form-data; boundary=x"})
        self.assertError(r, 415, "unsupported_media_type")
        r = self.call("POST", "/v1/execute", "/v1/execute", {"code": "#" * (300 << 10)})
        self.assertError(r, 413, "payload_too_large")

    def test_stream_sends_chunks_then_the_result(self):
        req = urllib.request.Request(
            self.d.base + "/v1/execute?stream=true", method="POST",
            data=json.dumps({"code": "import time,sys\nprint('a', flush=True)\ntime.sleep(0.3)\n"
                                     "print('b', file=sys.stderr)"}).encode(),
            headers={"Content-Type": "application/json"})
        events, first_at, start = [], None, time.time()
        with urllib.request.urlopen(req, timeout=60) as r:
            self.assertEqual(r.headers["Content-Type"], "text/event-stream")
            name = None
            for line in r:
                line = line.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    events.append((name, json.loads(line[6:])))
                    first_at = first_at or time.time() - start
        # Chunks come as the program writes them (print may write "a" and "\n" apart).
        self.assertEqual(events[0][0], "stdout")
        self.assertEqual("".join(d["data"] for e, d in events if e == "stdout"), "a\n")
        self.assertEqual("".join(d["data"] for e, d in events if e == "stderr"), "b\n")
        self.assertEqual(events[-1][0], "result")
        self.assertEqual([e for e, _ in events].count("result"), 1)
        self.api.check("POST", "/v1/execute", 200, events[-1][1])
        self.assertLess(first_at, events[-1][1]["duration_ms"] / 1000.0 + 0.25)

    def stream(self, body):
        """POST /v1/execute?stream=true; the (event name, data) pairs in order."""
        req = urllib.request.Request(self.d.base + "/v1/execute?stream=true", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        events, name = [], None
        with urllib.request.urlopen(req, timeout=60) as r:
            for line in r:
                line = line.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    events.append((name, json.loads(line[6:])))
        return events

    # ---- issue 16: one timeout exit code, a grace before SIGKILL, binary output, whole lines

    SUMMARY_ON_SIGTERM = ("import signal, sys, time\n"
                          "def done(*_):\n"
                          "    print('=== 3 passed, 1 failed ===')\n"
                          "    sys.exit(1)\n"
                          "signal.signal(signal.SIGTERM, done)\n"
                          "print('running')\n"
                          "time.sleep(100)\n")

    def test_timeout_is_exit_code_124_and_a_sigterm_handler_keeps_its_summary(self):
        res = self.execute({"code": self.SUMMARY_ON_SIGTERM, "timeout": 1})
        self.assertEqual((res["status"], res["exit_code"], res["signal"]), ("timeout", 124, 0), res)
        self.assertEqual(res["stdout"], "running\n=== 3 passed, 1 failed ===\n", res)
        events = self.stream({"code": self.SUMMARY_ON_SIGTERM, "timeout": 1})
        out = "".join(d["data"] for e, d in events if e == "stdout")
        self.assertIn("=== 3 passed, 1 failed ===", out)
        self.assertEqual((events[-1][1]["status"], events[-1][1]["exit_code"]), ("timeout", 124))

    def test_timeout_grace_is_a_request_limit_that_may_only_go_down(self):
        res = self.execute({"code": self.SUMMARY_ON_SIGTERM, "timeout": 1, "timeout_grace": 0})
        self.assertEqual((res["status"], res["exit_code"], res["signal"]), ("timeout", 124, 9), res)
        self.assertNotIn("passed", res["stdout"])
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute", {"code": "1", "timeout_grace": 29}),
                         403, "forbidden", "timeout_grace")
        self.assertError(self.call("POST", "/v1/execute", "/v1/execute", {"code": "1", "timeout_grace": "soon"}),
                         400, "bad_request", "timeout_grace")
        detail = self.call("GET", "/v1/policies/code-sandbox", "/v1/policies/{name}").json()
        self.assertEqual(detail["policy"]["resources"]["timeout_grace_ms"], 2000)

    def test_program_ignoring_sigterm_ends_at_timeout_plus_grace(self):
        code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(100)\n"
        t0 = time.monotonic()
        res = self.execute({"code": code, "timeout": 1, "timeout_grace": 1})
        took = time.monotonic() - t0
        self.assertEqual((res["status"], res["exit_code"], res["signal"]), ("timeout", 124, 9), res)
        self.assertGreaterEqual(took, 1.9)
        self.assertLess(took, 5)

    BINARY = "import sys\nsys.stdout.buffer.write(bytes(range(256)))\nsys.stderr.write('text only')\n"

    def test_binary_output_comes_back_exactly_as_base64(self):
        res = self.execute({"code": self.BINARY})
        self.assertEqual(base64.b64decode(res["stdout_base64"]), bytes(range(256)))
        self.assertIn("\ufffd", res["stdout"])  # the text field stays, lossy
        self.assertNotIn("stderr_base64", res)
        self.assertEqual(res["stderr"], "text only")
        self.assertNotIn("stdout_base64", self.execute({"code": "print('caf\u00e9')"}))
        # Batch, sessions and the stream carry the bytes too.
        r = self.call("POST", "/v1/batch", "/v1/batch", {"tasks": [{"code": self.BINARY}]})
        self.assertEqual(base64.b64decode(r.json()["results"][0]["stdout_base64"]), bytes(range(256)))
        sid = self.new_session()
        try:
            res = self.run_in(sid, self.BINARY)
            self.assertEqual(base64.b64decode(res["stdout_base64"]), bytes(range(256)), res)
        finally:
            self.call("DELETE", f"/v1/sessions/{sid}")
        events = self.stream({"code": self.BINARY})
        raw = b"".join(base64.b64decode(d["data_base64"]) if "data_base64" in d else d["data"].encode()
                       for e, d in events if e == "stdout")
        self.assertEqual(raw, bytes(range(256)))
        self.assertEqual(base64.b64decode(events[-1][1]["stdout_base64"]), bytes(range(256)))

    def test_stream_sends_whole_lines_and_alerts_in_their_place(self):
        events = self.stream({"code": "for i in range(100):\n    print('line', i)\n"})
        outs = [d["data"] for e, d in events if e == "stdout"]
        self.assertEqual("".join(outs), "".join(f"line {i}\n" for i in range(100)))
        self.assertLessEqual(len(outs), 100)
        self.assertTrue(all(o.endswith("\n") for o in outs), outs)
        code = ("import socket\nprint('before')\n"
                "try:\n    socket.create_connection(('127.0.0.1', 6379), timeout=2)\nexcept OSError:\n    pass\n"
                "print('after')\n")
        events = self.stream({"code": code})
        seq = [(e, d["data"] if e == "stdout" else d.get("rule")) for e, d in events if e in ("stdout", "alert")]
        self.assertEqual(seq, [("stdout", "before\n"), ("alert", "network_attempt"), ("stdout", "after\n")])

    # ---- batch

    def test_batch_keeps_request_order(self):
        tasks = [{"code": f"import time\ntime.sleep({0.05 * (6 - i)})\nprint({i})"} for i in range(6)]
        tasks.insert(3, {"code": "1", "timeout": 99})  # loosening: an error in its own slot
        r = self.call("POST", "/v1/batch", "/v1/batch", {"tasks": tasks, "concurrency": 4})
        self.assertEqual(r.status, 200, r.body)
        results = r.json()["results"]
        self.assertEqual(len(results), 7)
        self.assertEqual(results[3]["error"]["code"], "forbidden")
        outs = [x["stdout"] for n, x in enumerate(results) if n != 3]
        self.assertEqual(outs, [f"{i}\n" for i in range(6)])
        self.assertError(self.call("POST", "/v1/batch", "/v1/batch", {"task": []}), 400, "bad_request")

    # ---- sessions

    def new_session(self, **body):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", body)
        self.assertEqual(r.status, 201, r.body)
        return r.json()["session_id"]

    def run_in(self, sid, code, status=200, **extra):
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute", dict(code=code, **extra))
        self.assertEqual(r.status, status, r.body)
        return r.json()

    def test_session_state_files_and_errors(self):
        sid = self.new_session(idle_timeout=60)
        self.assertEqual(self.run_in(sid, "x = 41")["status"], "ok")
        res = self.run_in(sid, "1/0")
        self.assertEqual(res["status"], "error")
        self.assertIn("ZeroDivisionError", res["stderr"])
        res = self.run_in(sid, "x += 1\nprint(x)\nopen('/tmp/kept', 'w').write('k')")
        self.assertEqual(res["stdout"], "42\n")
        self.assertEqual(self.run_in(sid, "print(open('/tmp/kept').read())")["stdout"], "k\n")

        blob = bytes(range(256)) * 64
        r = self.call("PUT", f"/v1/sessions/{sid}/files?path=/tmp/up/blob.bin", "/v1/sessions/{id}/files",
                      body=blob, raw=True)
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(r.json(), {"path": "/tmp/up/blob.bin", "size": len(blob)})
        self.assertEqual(self.run_in(sid, "print(len(open('/tmp/up/blob.bin','rb').read()))")["stdout"], "16384\n")
        r = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/up/blob.bin")
        self.assertEqual((r.status, r.body), (200, blob))
        for bad in ("/tmp/../etc/passwd", "/etc/passwd", "tmp/x", "/tmp//x", "/tmp/"):
            r = self.call("GET", f"/v1/sessions/{sid}/files?path={bad}", "/v1/sessions/{id}/files")
            self.assertError(r, 400, "bad_request", "path")
        self.run_in(sid, "import os\nos.symlink('/etc/passwd', '/tmp/link')")
        r = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/link", "/v1/sessions/{id}/files")
        self.assertEqual(r.status, 400, r.body)
        r = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/absent", "/v1/sessions/{id}/files")
        self.assertError(r, 404, "not_found")

        info = self.call("GET", f"/v1/sessions/{sid}", "/v1/sessions/{id}").json()
        self.assertGreaterEqual(info["executions"], 5)
        listed = self.call("GET", "/v1/sessions", "/v1/sessions").json()["sessions"]
        self.assertIn(sid, [s["session_id"] for s in listed])
        self.assertEqual(self.call("DELETE", f"/v1/sessions/{sid}").status, 204)
        self.assertError(self.call("GET", f"/v1/sessions/{sid}", "/v1/sessions/{id}"), 404, "not_found")
        self.assertError(self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                                   {"code": "1"}), 404, "not_found")

    def test_session_timeout_restarts_the_interpreter_and_keeps_files(self):
        sid = self.new_session()
        self.run_in(sid, "v = 1\nopen('/tmp/f', 'w').write('still here')")
        res = self.run_in(sid, "import time\ntime.sleep(30)", timeout=0.5)
        self.assertEqual(res["status"], "timeout")
        self.assertIn("interpreter_restarted", [a["rule"] for a in res["alerts"]])
        res = self.run_in(sid, "print(open('/tmp/f').read())\nprint('v' in globals())")
        self.assertEqual(res["stdout"], "still here\nFalse\n")
        self.assertError(self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                                   {"code": "1", "timeout": 300}), 403, "forbidden", "timeout")
        self.assertError(self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                                   {"code": "1", "policy": "x"}), 400, "bad_request", "policy")
        self.call("DELETE", f"/v1/sessions/{sid}")

    def test_busy_session_is_a_conflict(self):
        sid = self.new_session()
        t = threading.Thread(target=self.run_in, args=(sid, "import time\ntime.sleep(1.5)"))
        t.start()
        time.sleep(0.5)
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute", {"code": "1"})
        t.join()
        self.assertError(r, 409, "conflict")
        self.call("DELETE", f"/v1/sessions/{sid}")

    def test_non_python_session_runs_fresh_programs_in_the_same_box(self):
        sid = self.new_session(policy="bash-tools", language="bash")
        res = self.run_in(sid, "echo hi > /tmp/h; echo done")
        self.assertEqual(res["stdout"], "done\n", res)
        self.assertEqual(self.run_in(sid, "cat /tmp/h")["stdout"], "hi\n")
        # Files go through init's file worker: no python is needed in the box.
        r = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/h", "/v1/sessions/{id}/files")
        self.assertEqual((r.status, r.body), (200, b"hi\n"))
        self.call("DELETE", f"/v1/sessions/{sid}")

    def test_ten_sessions_are_isolated_from_each_other(self):
        n = 10
        sids = [self.new_session() for _ in range(n)]
        try:
            def setup(i):
                # A file, a long-lived process carrying the session's token in its argv, a listener.
                self.run_in(sids[i], f"""
import subprocess, socket
open('/tmp/secret-{i}', 'w').write('token-{i}')
p = subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(120)', 'proc-token-{i}'])
try:
    srv = socket.socket(); srv.bind(('127.0.0.1', 7000 + {i})); srv.listen()
except OSError as e:
    srv = None
print('ready')
""")
            threads = [threading.Thread(target=setup, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            probe = """
import os, socket
files = sorted(f for f in os.listdir('/tmp') if f.startswith('secret-'))
seen = []
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            seen.append(open('/proc/%s/cmdline' % pid, 'rb').read().replace(b'\\0', b' ').decode())
        except OSError:
            pass
tokens = sorted(set(t for c in seen for t in c.split() if t.startswith('proc-token-')))
reach = []
for j in range(10):
    s = socket.socket(); s.settimeout(0.5)
    try:
        s.connect(('127.0.0.1', 7000 + j)); reach.append(j)
    except OSError:
        pass
    finally:
        s.close()
others = []
for j in range(10):
    try:
        others.append(open('/tmp/secret-%d' % j).read())
    except OSError:
        pass
print(files, tokens, reach, others)
"""
            results = [None] * n

            def check(i):
                results[i] = self.run_in(sids[i], probe)

            threads = [threading.Thread(target=check, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for i, res in enumerate(results):
                self.assertEqual(res["status"], "ok", res)
                self.assertEqual(
                    res["stdout"], f"['secret-{i}'] ['proc-token-{i}'] [] ['token-{i}']\n",
                    f"session {i} saw another session's files, processes or network: {res}")
        finally:
            for sid in sids:
                self.call("DELETE", f"/v1/sessions/{sid}")


class DaemonAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()

    def test_tokens_are_required_when_configured(self):
        with tempfile.NamedTemporaryFile("w", prefix="lsb-tokens-", suffix=".tokens", delete=False) as f:
            self.addCleanup(os.unlink, f.name)
            f.write("# comment\nsecret-one\n")
        d = Daemon("--token-file", f.name, env={"LLM_SANDBOX_TOKENS": "env-two,env-three"})
        self.addCleanup(d.close)
        try:
            r = request(d.base, "GET", "/v1/policies")
            self.assertEqual(r.status, 401)
            self.assertIn("Bearer", r.headers.get("WWW-Authenticate", ""))
            self.api.check("GET", "/v1/execute" if False else "/v1/policies", 200,
                           request(d.base, "GET", "/v1/policies", token="secret-one").json())
            self.assertEqual(request(d.base, "GET", "/v1/policies", token="wrong").status, 401)
            self.assertEqual(request(d.base, "GET", "/v1/policies", token="env-three").status, 200)
            r = request(d.base, "POST", "/v1/execute", {"code": "print(1)"})
            self.assertEqual(r.status, 401)
            self.assertEqual(r.json()["error"]["code"], "unauthorized")
            self.assertEqual(request(d.base, "GET", "/healthz").status, 200)
        finally:
            d.stop()

    def test_refuses_to_listen_beyond_loopback_without_tokens(self):
        d = Daemon(host="0.0.0.0", wait=False)
        try:
            d.proc.wait(timeout=20)
            self.assertEqual(d.proc.returncode, 2)
            self.assertIn("without tokens", d.log())
        finally:
            d.close()


class DaemonLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()

    def test_full_queue_answers_429_with_retry_after(self):
        d = Daemon("--max-concurrency", "1", "--queue", "1")
        self.addCleanup(d.close)
        try:
            statuses, lock = [], threading.Lock()

            def one():
                r = request(d.base, "POST", "/v1/execute", {"code": "import time\ntime.sleep(1)"})
                with lock:
                    statuses.append((r.status, r.headers.get("Retry-After"), r.json()))

            threads = [threading.Thread(target=one) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            codes = [s for s, _, _ in statuses]
            self.assertIn(200, codes)
            self.assertIn(429, codes)
            for s, retry, body in statuses:
                self.api.check("POST", "/v1/execute", s, body)
                if s == 429:
                    self.assertTrue(retry and int(retry) >= 1)
                    self.assertEqual(body["error"]["code"], "too_many_requests")
        finally:
            d.stop()

    def test_sighup_reloads_and_a_bad_file_keeps_the_old_set(self):
        pdir = tempfile.mkdtemp(prefix="lsb-policies-")
        try:
            shutil.copy(os.path.join(POLICY_DIR, "code-sandbox.yaml"), pdir)
            d = Daemon(policies=pdir)
            self.addCleanup(d.close)  # also when d.stop() fails
            try:
                self.assertEqual(request(d.base, "GET", "/v1/policies/extra").status, 404)
                with open(os.path.join(POLICY_DIR, "code-sandbox.yaml")) as f:
                    text = f.read().replace("name: code-sandbox", "name: extra")
                with open(os.path.join(pdir, "extra.yaml"), "w") as f:
                    f.write(text)
                d.proc.send_signal(signal.SIGHUP)
                deadline = time.time() + 10
                while request(d.base, "GET", "/v1/policies/extra").status != 200 and time.time() < deadline:
                    time.sleep(0.1)
                self.assertEqual(request(d.base, "GET", "/v1/policies/extra").status, 200)
                with open(os.path.join(pdir, "bad.yaml"), "w") as f:
                    f.write('version: "1.0"\nname: bad\nresources:\n  memory: "lots"\n')
                d.proc.send_signal(signal.SIGHUP)
                deadline = time.time() + 10
                while "reload failed" not in d.log() and time.time() < deadline:
                    time.sleep(0.1)
                self.assertRegex(d.log(), r"bad\.yaml:\d+:\d+")
                self.assertEqual(request(d.base, "GET", "/v1/policies/extra").status, 200)
                self.assertEqual(request(d.base, "GET", "/v1/policies/bad").status, 404)
            finally:
                d.stop()
        finally:
            shutil.rmtree(pdir)

    def test_pool_size_sets_the_pool_of_any_backend_and_native_pool_is_its_alias(self):
        # One knob for every backend's warm pool (docs/api.md "Warm pool"); /readyz and /v1/overview
        # report the pool whoever keeps it. --native-pool is the older name of the same option.
        for flags, per_policy in ((["--pool-size", "0"], None), (["--native-pool", "0"], None),
                                  (["--pool-size", "0", "--native-pool", "1"], 1), (["--native-pool=3"], 3)):
            d = Daemon(*flags)
            try:
                overview = request(d.base, "GET", "/v1/overview").json()
                ready = request(d.base, "GET", "/readyz").json()
                if per_policy is None:
                    self.assertIsNone(overview["pool"], (flags, overview))
                    self.assertEqual(ready["warm_boxes"], 0, (flags, ready))
                else:
                    self.assertEqual(overview["pool"]["per_policy"], per_policy, (flags, overview))
                    self.assertIn("pool_hits", ready, ready)
                self.assertEqual(d.stop(signal.SIGTERM, timeout=30), 0, d.log())
            finally:
                d.close()

    def test_native_pool_hands_out_fresh_boxes_and_drains_on_sighup(self):
        d = Daemon()
        try:
            def warm(n):
                deadline = time.time() + 30
                while time.time() < deadline:
                    r = request(d.base, "GET", "/readyz").json()
                    if r.get("warm_boxes", 0) >= n and r.get("reaping", 0) == 0:
                        return r
                    time.sleep(0.1)
                self.fail(f"the pool did not fill: {r}")

            def run(body):
                r = request(d.base, "POST", "/v1/execute", body, timeout=60)
                self.assertEqual(r.status, 200, r.body[:300])
                return r.json()

            warm(2)
            # A box is never reused: what one execution left in /tmp is not in the next one's.
            self.assertEqual(run({"code": "open('/tmp/mark', 'w').write('x'); print('w')"})["stdout"], "w\n")
            for _ in range(3):
                res = run({"code": "import os; print(os.path.exists('/tmp/mark'))"})
                self.assertEqual(res["stdout"], "False\n", res)
            # A lower timeout applies to a pooled box; a lower memory limit gets a box of its own.
            warm(2)
            res = run({"code": "import time; time.sleep(20)", "timeout": 1})
            self.assertEqual(res["status"], "timeout", res)
            self.assertLess(res["duration_ms"], 8000, res)
            res = run({"code": "x = bytearray(200 << 20); print(len(x))", "memory": "64M"})
            self.assertEqual(res["status"], "oom", res)
            stats = request(d.base, "GET", "/readyz").json()
            self.assertGreaterEqual(stats["pool_hits"], 4, stats)
            self.assertGreaterEqual(stats["pool_misses"], 1, stats)
            # SIGHUP: the warm boxes of the previous policies are destroyed and replaced.
            warm(2)
            before = set(d.descendants())
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 30
            while time.time() < deadline and (before & set(d.descendants())):
                time.sleep(0.1)
            self.assertEqual(before & set(d.descendants()), set(), "warm boxes survived SIGHUP")
            warm(2)
            self.assertEqual(run({"code": "print(1)"})["stdout"], "1\n")
            boxes = d.descendants()
            self.assertEqual(d.stop(signal.SIGTERM, timeout=30), 0, d.log())
            self.assertEqual([p for p in boxes if os.path.exists(f"/proc/{p}")], [], d.log())
            self.assertIn("boxes left: 0", d.log())
        finally:
            d.close()

    def test_sigterm_finishes_or_kills_and_leaves_no_box(self):
        d = Daemon("--shutdown-grace", "1")
        try:
            sids = [request(d.base, "POST", "/v1/sessions", {}).json()["session_id"] for _ in range(2)]
            request(d.base, "POST", f"/v1/sessions/{sids[0]}/execute", {"code": "x = 1"})
            answers = []

            def long_run():
                answers.append(request(d.base, "POST", "/v1/execute", {"code": "import time\ntime.sleep(20)"},
                                       timeout=60))

            t = threading.Thread(target=long_run)
            t.start()
            deadline = time.time() + 10
            while request(d.base, "GET", "/readyz").json().get("running", 0) < 1 and time.time() < deadline:
                time.sleep(0.05)
            boxes = d.descendants()
            self.assertGreaterEqual(len(boxes), 3, "two sessions and one run should hold boxes")
            start = time.time()
            self.assertEqual(d.stop(signal.SIGTERM, timeout=30), 0, d.log())
            self.assertLess(time.time() - start, 15)
            t.join(timeout=30)
            self.assertFalse(t.is_alive(), "the in-flight request hung")
            alive = [p for p in boxes if os.path.exists(f"/proc/{p}")]
            self.assertEqual(alive, [], f"processes left behind after SIGTERM: {alive}\n{d.log()}")
            self.assertIn("boxes left: 0", d.log())
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
