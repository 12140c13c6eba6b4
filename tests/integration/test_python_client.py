"""The Python client (clients/python, package llm_sandbox) against the REAL daemon, on either backend.

Starts `$LSB_BUILD_DIR/llm-sandbox serve --listen 127.0.0.1:<free port> --policies <repo>/policies
--images <repo>/config/images.yaml --backend $LSB_TEST_BACKEND` (native by default; docker adds
--pool-size, and setUpModule first makes the engine and the test image exist), waits for /healthz,
then runs the requirements' example verbatim, sessions, files, batch, streaming, the asyncio client,
the error classes and 10 isolated sessions side by side through it. Every result must name the
backend asked for. Skipped only when the binary is missing or has no `serve` command, or (docker)
when we are not root and no engine answers.
"""
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from harness import (BINARY, SOURCE_DIR, TEST_BACKEND, boxes_left_by,  # noqa: E402
                     prepare_test_backend, serve_backend_args)

sys.path.insert(0, os.path.join(SOURCE_DIR, "clients", "python"))

import llm_sandbox  # noqa: E402

from llm_sandbox import (AsyncSandboxClient, BadRequest, Conflict, ConnectionFailed,  # noqa: E402
                         Forbidden, NotFound, PayloadTooLarge, RateLimited, RequestTimedOut,
                         SandboxClient, SandboxError, Unauthorized, output_bytes)

RESULT_KEYS = {"stdout", "stderr", "exit_code", "status", "duration_ms", "cpu_ms",
               "memory_peak_bytes", "alerts", "truncated", "execution_id", "backend", "policy"}
STARTUP_S = 60


def setUpModule():
    if serve_missing_reason() is None:
        prepare_test_backend()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_missing_reason():
    """Why the daemon cannot be tested, or None. Only a missing binary or command skips."""
    if not os.access(BINARY, os.X_OK):
        return f"{BINARY} not built (set LSB_BUILD_DIR)"
    proc = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        return (f"{BINARY} has no `serve` command yet (serve --help exited {proc.returncode}: "
                f"{(proc.stderr or proc.stdout).strip().splitlines()[0][:200] if (proc.stderr or proc.stdout).strip() else ''})")
    return None


class Daemon:
    """One `llm-sandbox serve` process on a free loopback port, stopped with SIGTERM."""

    def __init__(self, env=None, args=(), policies=os.path.join(SOURCE_DIR, "policies")):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile(mode="w+")
        full_env = dict(os.environ)
        full_env.pop("LLM_SANDBOX_TOKENS", None)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--listen", f"127.0.0.1:{self.port}",
             "--policies", policies,
             "--images", os.path.join(SOURCE_DIR, "config", "images.yaml"), *serve_backend_args(), *args],
            cwd=SOURCE_DIR, env=full_env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_S
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"llm-sandbox serve exited with {self.proc.returncode} "
                                     f"before answering /healthz:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"no /healthz answer within {STARTUP_S}s:\n{self.output()}")
            time.sleep(0.1)

    def output(self):
        self.log.seek(0)
        return self.log.read()[-5000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"llm-sandbox serve ignored SIGTERM for 30s:\n{self.output()}")
        left = boxes_left_by(self.proc.pid)
        if left:
            raise AssertionError(f"boxes left after SIGTERM: {left}\n{self.output()}")
        self.log.close()


class DaemonTestCase(unittest.TestCase):
    daemon_env = None
    daemon_args = ()
    extra_policies = {}  # file name -> YAML text, served next to the repo's policies

    @classmethod
    def setUpClass(cls):
        reason = serve_missing_reason()
        if reason:
            raise unittest.SkipTest(reason)
        os.environ.pop("LLM_SANDBOX_TOKEN", None)
        policies = os.path.join(SOURCE_DIR, "policies")
        if cls.extra_policies:
            cls.policy_dir = tempfile.TemporaryDirectory(prefix="lsb-policies-")
            cls.addClassCleanup(cls.policy_dir.cleanup)  # also when the daemon fails to start or stop
            for name in os.listdir(policies):
                shutil.copy(os.path.join(policies, name), cls.policy_dir.name)
            for name, text in cls.extra_policies.items():
                with open(os.path.join(cls.policy_dir.name, name), "w") as f:
                    f.write(text)
            policies = cls.policy_dir.name
        cls.daemon = Daemon(cls.daemon_env, cls.daemon_args, policies)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def client(self, **kw):
        kw.setdefault("policy", "code-sandbox")
        return SandboxClient(base_url=self.daemon.url, **kw)

    def explain(self, result):
        """Context for a failed assertion: what the sandbox said."""
        return f"result: {result}"


class PythonClientTest(DaemonTestCase):
    def test_requirements_example_verbatim(self):
        client = SandboxClient(base_url=self.daemon.url, policy="code-sandbox")

        def run_python_code(code: str) -> str:
            """Execute Python code in a secure sandbox."""
            response = client.execute(code)
            return response["stdout"]

        self.assertEqual(run_python_code("print(6 * 7)"), "42\n")

    def test_result_shape_and_failure_is_a_result(self):
        r = self.client().execute(
            "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
        self.assertTrue(RESULT_KEYS <= set(r), f"missing {RESULT_KEYS - set(r)}: {r}")
        self.assertEqual((r["stdout"], r["stderr"], r["exit_code"]), ("out\n", "err\n", 3), r)
        self.assertEqual(r["status"], "error", r)
        self.assertEqual(r["policy"], "code-sandbox", r)
        self.assertEqual(r["backend"], TEST_BACKEND, r)
        # Both backends measure the box (native: its cgroup; Docker: the container's cgroup files).
        self.assertGreater(r["memory_peak_bytes"] or 0, 0, r)
        self.assertIsInstance(r["cpu_ms"], int)
        self.assertIsInstance(r["alerts"], list)
        self.assertIsInstance(r["execution_id"], str)
        self.assertTrue(r["execution_id"])

    def test_stdin_env_files(self):
        r = self.client().execute(
            "import os, sys\n"
            "print(sys.stdin.read().upper())\n"
            "print(os.environ['MODE'])\n"
            "print(open('/tmp/data.csv').read().strip())\n"
            "print(open('/tmp/blob.bin', 'rb').read().hex())\n",
            stdin="hello", env={"MODE": "test"},
            files={"/tmp/data.csv": "a,b\n1,2\n", "/tmp/blob.bin": b"\x00\xff\x10"})
        self.assertEqual(r["stdout"], "HELLO\ntest\na,b\n1,2\n00ff10\n", r)

    def test_tightening_allowed_loosening_forbidden(self):
        r = self.client().execute("print('ok')", timeout=5, memory="128M")
        self.assertEqual(r["stdout"], "ok\n", r)
        with self.assertRaises(Forbidden) as cm:
            self.client().execute("print(1)", timeout=3600)
        self.assertEqual(cm.exception.status, 403)
        self.assertIn("timeout", cm.exception.message)
        with self.assertRaises(Forbidden) as cm:
            self.client().execute("print(1)", memory="4G")
        self.assertIn("memory", cm.exception.message)

    def test_timeout_is_a_result(self):
        r = self.client().execute("while True: pass", timeout=1)
        self.assertEqual(r["status"], "timeout", r)

    def test_timeout_is_exit_code_124_and_the_sigterm_summary_is_kept(self):
        code = ("import signal, sys, time\n"
                "def done(*_):\n"
                "    print('=== 3 passed ===')\n"
                "    sys.exit(1)\n"
                "signal.signal(signal.SIGTERM, done)\n"
                "time.sleep(100)\n")
        r = self.client().execute(code, timeout=1)
        self.assertEqual((r["status"], r["exit_code"]), ("timeout", 124), r)
        self.assertEqual(r["stdout"], "=== 3 passed ===\n", r)
        last = list(self.client().stream(code, timeout=1))[-1]
        self.assertEqual((last.data["status"], last.data["exit_code"]), ("timeout", 124), last)
        self.assertEqual(last.data["stdout"], "=== 3 passed ===\n")

    def test_binary_output_decodes_to_the_exact_bytes(self):
        code = "import sys\nsys.stdout.buffer.write(bytes(range(256)))\nsys.stderr.write('caf\u00e9')\n"
        c = self.client()
        r = c.execute(code)
        self.assertEqual(output_bytes(r, "stdout"), bytes(range(256)), r)
        self.assertEqual(output_bytes(r, "stderr"), "caf\u00e9".encode(), r)
        self.assertEqual(output_bytes(c.batch([code])[0]), bytes(range(256)))
        with c.session(language="python") as s:
            self.assertEqual(output_bytes(s.execute(code)), bytes(range(256)))
        events = list(c.stream(code))
        self.assertEqual(b"".join(ev.data_bytes for ev in events if ev.kind == "stdout"), bytes(range(256)))
        self.assertEqual(output_bytes(events[-1].data), bytes(range(256)))

    def test_stream_yields_whole_lines(self):
        events = list(self.client().stream("for i in range(100):\n    print('line', i)\n"))
        outs = [d for k, d in events if k == "stdout"]
        self.assertEqual("".join(outs), "".join(f"line {i}\n" for i in range(100)))
        self.assertLessEqual(len(outs), 100)
        self.assertTrue(all(o.endswith("\n") for o in outs), outs)

    def test_network_attempt_alert(self):
        r = self.client().execute(
            "import socket\n"
            "try:\n"
            "    socket.create_connection(('127.0.0.1', 6379), timeout=2)\n"
            "    print('connected')\n"
            "except OSError as e:\n"
            "    print('refused', e.errno)\n")
        self.assertIn("refused", r["stdout"], r)
        self.assertTrue(any("127.0.0.1:6379" in str(a.get("address", "")) + str(a.get("message", ""))
                            for a in r["alerts"]), r)

    def test_not_found_and_bad_request(self):
        # A policy named in a request body that does not exist is a bad request (400, the
        # message lists the daemon's policies); GET /v1/policies/{name} of it is a 404.
        with self.assertRaises(BadRequest) as cm:
            self.client().execute("print(1)", policy="no-such-policy")
        self.assertIn("no-such-policy", cm.exception.message)
        with self.assertRaises(BadRequest):
            self.client().execute("print(1)", files={"/etc/evil": "x"})
        with self.assertRaises(NotFound):
            self.client().get_policy("no-such-policy")

    def test_policies_and_health(self):
        c = self.client()
        self.assertEqual(c.health().get("status"), "ok")
        self.assertEqual(c.ready().get("backend"), TEST_BACKEND)
        names = [p["name"] for p in c.policies()]
        self.assertIn("code-sandbox", names)
        p = c.get_policy("code-sandbox")
        self.assertEqual(c.policy, "code-sandbox")  # the client's default policy, by name
        self.assertEqual(p["name"], "code-sandbox")
        self.assertIsInstance(p["explain"], list)
        self.assertTrue(p["explain"])

    def test_session_state_files_and_close(self):
        c = self.client()
        with c.session(language="python", idle_timeout=60, max_lifetime=300) as s:
            self.assertTrue(s.id)
            r1 = s.execute("counter = 41")
            self.assertEqual(r1["exit_code"], 0, r1)
            r2 = s.execute("raise ValueError('boom')")
            self.assertNotEqual(r2["exit_code"], 0, r2)
            self.assertIn("boom", r2["stderr"], r2)
            r3 = s.execute("counter += 1\nprint(counter)")
            self.assertEqual(r3["stdout"], "42\n", r3)
            self.assertEqual(s.upload("/tmp/in.txt", "hello")["size"], 5)
            s.upload("/tmp/in.bin", b"\x00\x01\xfe")
            r4 = s.execute("data = open('/tmp/in.txt').read()\n"
                           "open('/tmp/out.txt', 'w').write(data.upper())\n"
                           "print(open('/tmp/in.bin', 'rb').read().hex())")
            self.assertEqual(r4["stdout"], "0001fe\n", r4)
            self.assertEqual(s.download("/tmp/out.txt"), b"HELLO")
            with self.assertRaises(NotFound):
                s.download("/tmp/absent.txt")
            with self.assertRaises(BadRequest):
                s.upload("/tmp/../etc/passwd", "x")
            info = s.info()
            self.assertEqual(info["session_id"], s.id)
            self.assertGreaterEqual(info["executions"], 4)
            self.assertIn(s.id, [x["session_id"] for x in c.list_sessions()])
        self.assertTrue(s.closed)
        self.assertNotIn(s.id, [x["session_id"] for x in c.list_sessions()])
        with self.assertRaises(NotFound):
            s.info()

    def test_upload_dir_command_collect_and_download_dir(self):
        # A project tree with things upload_dir must leave out (.git, node_modules, a link out).
        with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dst:
            os.makedirs(os.path.join(src, "pkg", "sub"))
            os.makedirs(os.path.join(src, ".git"))
            os.makedirs(os.path.join(src, "node_modules", "x"))
            with open(os.path.join(src, "pkg", "sub", "mod.py"), "w") as f:
                f.write("VALUE = 7\n")
            with open(os.path.join(src, "pkg", "__init__.py"), "w") as f:
                f.write("")
            with open(os.path.join(src, ".git", "HEAD"), "w") as f:
                f.write("ref")
            with open(os.path.join(src, "node_modules", "x", "i.js"), "w") as f:
                f.write("1")
            os.symlink("/etc/passwd", os.path.join(src, "leak"))
            os.symlink("pkg/sub/mod.py", os.path.join(src, "alias.py"))
            c = self.client()
            with c.session(language="python") as s:
                up = s.upload_dir(src, "/tmp/work")
                self.assertEqual(up["format"], "tar+gzip", up)
                r = s.execute(command=["python3", "-c", "import os, sys; sys.path.insert(0, '/tmp/work'); "
                                       "from pkg.sub.mod import VALUE; print(VALUE, sorted(os.listdir('/tmp/work')))"],
                              collect=["/tmp/work/*.py"])
                self.assertEqual(r["status"], "ok", r)
                self.assertEqual(r["stdout"], "7 ['alias.py', 'pkg']\n", r)
                self.assertEqual(r["collected"], [{"path": "/tmp/work/alias.py", "size": 10, "content": "VALUE = 7\n"}])
                s.execute("open('/tmp/work/pkg/out.txt', 'w').write('made in the box')")
                written = s.download_dir("/tmp/work", dst)
                self.assertIn(os.path.join(os.path.realpath(dst), "pkg", "out.txt"), written)
                with open(os.path.join(dst, "pkg", "out.txt")) as f:
                    self.assertEqual(f.read(), "made in the box")
            one = c.execute(command=["python3", "-c", "print(open('/tmp/w/pkg/sub/mod.py').read())"],
                            files=[llm_sandbox.archive_entry("/tmp/w", src)])
            self.assertEqual(one["stdout"], "VALUE = 7\n\n", one)
    def test_file_system_api_and_changes_in_a_bash_session(self):
        # bash-tools allows no python: every file call is init's (docs/api.md "Files in every box").
        if TEST_BACKEND != "native":
            self.skipTest("bash-tools runs on the host's root, which only the native backend serves; the "
                          "file worker on Docker: tests/adversarial/test_file_op_attacks.py")
        with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as pristine:
            for root in (src, pristine):
                os.makedirs(os.path.join(root, "lib"))
                with open(os.path.join(root, "lib", "a.txt"), "w") as f:
                    f.write("one\n")
            with self.client(policy="bash-tools").session(changes=True) as s:
                s.upload_dir(src, "/tmp/proj")
                r = s.execute("cd /tmp/proj && echo two >> lib/a.txt && X=kept")
                self.assertEqual(r["status"], "ok", r)
                s.mkdir("/tmp/proj/out/deep", parents=True)
                s.upload("/tmp/proj/out/deep/r.txt", "report\n")
                s.rename("/tmp/proj/out/deep/r.txt", "/tmp/proj/out/report.txt")
                s.remove("/tmp/proj/out/deep")
                listing = s.list_dir("/tmp/proj/out")
                self.assertEqual([(e["name"], e["type"], e["size"]) for e in listing["entries"]],
                                 [("report.txt", "file", 7)], listing)
                self.assertEqual(s.stat("/tmp/proj/lib")["type"], "dir")
                with self.assertRaises(llm_sandbox.NotFound):
                    s.stat("/tmp/proj/nope")
                self.assertEqual(s.execute("echo $X; pwd")["stdout"], "kept\n/tmp/proj\n")
                # The file-system API's own calls are changes too; the upload is not.
                ch = s.changes("/tmp/proj")
                self.assertEqual({f["path"]: f["change"] for f in ch["files"]},
                                 {"/tmp/proj/lib/a.txt": "modified", "/tmp/proj/out/report.txt": "renamed",
                                  "/tmp/proj/out/deep": "deleted"}, ch)
                ch = s.changes("/tmp/proj/lib")
            patch = os.path.join(pristine, "p.patch")
            with open(patch, "w") as f:
                f.write(ch["patch"])
            subprocess.run(["git", "apply", "../p.patch"], cwd=os.path.join(pristine, "lib"), check=True)
            with open(os.path.join(pristine, "lib", "a.txt")) as f:
                self.assertEqual(f.read(), "one\ntwo\n")

    def test_session_reset_returns_to_the_setup_and_snapshot_state(self):
        with self.client().session(language="python", setup="import decimal\nBASE = 1") as s:
            s.execute("kept = 2\nopen('/tmp/kept.txt', 'w').write('k')")
            self.assertEqual(s.snapshot()["snapshots"], 1)
            s.execute("episode = 3\nopen('/tmp/episode.txt', 'w').write('e')")
            info = s.reset()
            self.assertEqual(info["reset"]["mode"], "interpreter", info)
            r = s.execute("import os\nprint(BASE, kept, 'episode' in globals(), sorted(os.listdir('/tmp')))")
            self.assertEqual(r["stdout"], "1 2 False ['kept.txt']\n")

    def test_session_survives_a_timeout_and_an_exit_with_its_files(self):
        # A timeout kills the persistent interpreter (docs/architecture.md): its variables are
        # lost and an interpreter_restarted alert says so; the box and its tmpfs files stay. The
        # same for a program that ends the interpreter itself.
        with self.client().session(language="python") as s:
            s.upload("/tmp/kept.txt", "still here")
            self.assertEqual(s.execute("x = 1\nprint(x)")["stdout"], "1\n")
            r = s.execute("import time\ntime.sleep(30)", timeout=1)
            self.assertEqual(r["status"], "timeout", r)
            self.assertIn("interpreter_restarted", [a.get("rule") for a in r["alerts"]], r)
            r = s.execute("print(open('/tmp/kept.txt').read(), 'x' in globals())\ny = 2")
            self.assertEqual((r["status"], r["stdout"]), ("ok", "still here False\n"), r)
            r = s.execute("import os\nopen('/tmp/more.txt', 'w').write('more')\nos._exit(5)")
            self.assertEqual(r["exit_code"], 5, r)
            r = s.execute("print(open('/tmp/more.txt').read(), 'y' in globals())")
            self.assertEqual((r["status"], r["stdout"]), ("ok", "more False\n"), r)
            self.assertEqual(s.download("/tmp/kept.txt"), b"still here")
            self.assertEqual(r["backend"], TEST_BACKEND, r)

    def test_sessions_are_isolated(self):
        c = self.client()
        with c.session(language="python") as a, c.session(language="python") as b:
            a.upload("/tmp/secret.txt", "A's secret")
            r = b.execute("import os\nprint(os.path.exists('/tmp/secret.txt'))")
            self.assertEqual(r["stdout"], "False\n", r)
            with self.assertRaises(NotFound):
                b.download("/tmp/secret.txt")

    def test_ten_sub_agent_sessions_are_isolated(self):
        """10 sub-agents side by side, each in its own session: A cannot read B's files (in the box
        or through the files API), see B's processes, or reach B over the network: neither B's
        loopback TCP listener nor B's abstract unix socket (both are per network namespace; its own
        unix socket answering is the control that the probe works)."""
        n, c = 10, self.client()
        sessions = []
        try:
            for _ in range(n):
                sessions.append(c.session(language="python"))

            def setup(i):
                s = sessions[i]
                s.upload(f"/tmp/secret-{i}", f"token-{i}")
                return s.execute(f"""
import socket, subprocess
sleeper = subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(300)', 'proc-token-{i}'])
tcp = socket.socket(); tcp.bind(('127.0.0.1', 7100 + {i})); tcp.listen()
unix = socket.socket(socket.AF_UNIX); unix.bind('\\0lsb-agent-{i}'); unix.listen()
print('ready')
""")

            def probe(i):
                return sessions[i].execute("""
import json, os, socket
N = N_AGENTS
files = sorted(f for f in os.listdir('/tmp') if f.startswith('secret-'))
others = []
for j in range(N):
    try:
        others.append(open('/tmp/secret-' + str(j)).read())
    except OSError:
        pass
tokens = set()
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            argv = open('/proc/' + pid + '/cmdline', 'rb').read().split(b'\\0')
        except OSError:
            continue
        tokens.update(a.decode() for a in argv if a.startswith(b'proc-token-'))
tcp_reach, unix_reach = [], []
for j in range(N):
    for family, addr, reach in ((socket.AF_INET, ('127.0.0.1', 7100 + j), tcp_reach),
                                (socket.AF_UNIX, '\\0lsb-agent-' + str(j), unix_reach)):
        s = socket.socket(family); s.settimeout(0.5)
        try:
            s.connect(addr); reach.append(j)
        except OSError:
            pass
        finally:
            s.close()
print(json.dumps({"files": files, "others": others, "tokens": sorted(tokens), "tcp": tcp_reach,
                  "unix": unix_reach, "listening": unix.fileno() >= 0}))
""".replace("N_AGENTS", str(n)))

            def in_parallel(fn):
                out = [None] * n

                def one(i):
                    try:
                        out[i] = fn(i)
                    except SandboxError as e:  # an error answer is a failure of session i, said so
                        out[i] = e
                threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                failed = {i: r for i, r in enumerate(out) if not isinstance(r, dict)}
                self.assertEqual(failed, {}, "sessions that got no result")
                return out

            for i, r in enumerate(in_parallel(setup)):
                self.assertEqual((r["status"], r["stdout"]), ("ok", "ready\n"), f"session {i}: {r}")
            for i, r in enumerate(in_parallel(probe)):
                self.assertEqual(r["status"], "ok", f"session {i}: {r}")
                seen = json.loads(r["stdout"])
                self.assertEqual(seen["files"], [f"secret-{i}"], f"session {i} saw another's files: {seen}")
                self.assertEqual(seen["others"], [f"token-{i}"], f"session {i} read another's file: {seen}")
                self.assertEqual(seen["tokens"], [f"proc-token-{i}"], f"session {i} saw processes: {seen}")
                # The policy's network is off: init refuses every inet connect, its own listener's too,
                # and says so (on Docker the box's loopback is up, on native it is its own, down).
                self.assertEqual(seen["tcp"], [], f"session {i} reached a TCP listener: {seen}")
                refused = {a.get("address") for a in r["alerts"] if a.get("rule") == "network_attempt"}
                self.assertEqual(refused, {f"127.0.0.1:{7100 + j}" for j in range(n)}, r["alerts"])
                self.assertEqual(seen["unix"], [i], f"session {i}: abstract unix sockets: {seen}")
                self.assertTrue(seen["listening"], seen)
            for i in range(n):
                with self.assertRaises(NotFound):
                    sessions[i].download(f"/tmp/secret-{(i + 1) % n}")
            self.assertEqual(len({s.id for s in sessions}), n)
        finally:
            for s in sessions:
                s.close()

    def test_batch_in_order(self):
        tokens = [f"tok-{i}-{os.getpid()}" for i in range(5)]
        tasks = [f"print({t!r})" for t in tokens[:4]] + [{"code": f"print({tokens[4]!r})",
                                                          "timeout": 10}]
        results = self.client().batch(tasks, concurrency=3)
        self.assertEqual([r.get("stdout") for r in results], [t + "\n" for t in tokens], results)
        results = self.client().batch(["print(1)", {"code": "print(2)", "timeout": 3600}])
        self.assertEqual(results[0]["stdout"], "1\n", results)
        self.assertEqual(results[1]["error"]["code"], "forbidden", results)
        with self.assertRaises(Forbidden):
            self.client().batch(["print(1)", {"code": "print(2)", "timeout": 3600}],
                                raise_on_error=True)

    def test_stream(self):
        code = ("import sys, time\n"
                "for i in range(3):\n"
                "    print('line', i, flush=True)\n"
                "    time.sleep(0.2)\n"
                "print('oops', file=sys.stderr)\n")
        events = list(self.client().stream(code))
        kinds = [k for k, _ in events]
        self.assertEqual(kinds[-1], "result", events)
        self.assertEqual(kinds.count("result"), 1, events)
        out = "".join(d for k, d in events if k == "stdout")
        err = "".join(d for k, d in events if k == "stderr")
        self.assertEqual(out, "line 0\nline 1\nline 2\n", events)
        self.assertEqual(err, "oops\n", events)
        self.assertEqual(events[-1][1]["exit_code"], 0, events)

    def test_connection_failed(self):
        url = f"http://127.0.0.1:{free_port()}"
        with self.assertRaises(ConnectionFailed) as cm:
            SandboxClient(base_url=url).execute("print(1)")
        self.assertIn("llm-sandbox serve", str(cm.exception))


class AsyncPythonClientTest(DaemonTestCase):
    def test_async_surface(self):
        async def go():
            c = AsyncSandboxClient(base_url=self.daemon.url, policy="code-sandbox")
            self.assertEqual((await c.health())["status"], "ok")
            results = await asyncio.gather(*(c.execute(f"print({i} * {i})") for i in range(4)))
            self.assertEqual([r["stdout"] for r in results], ["0\n", "1\n", "4\n", "9\n"], results)
            async with c.session(language="python") as s:
                await s.execute("x = 20")
                await s.upload("/tmp/a.txt", b"async")
                r = await s.execute("print(x * 2 + 2, open('/tmp/a.txt').read())")
                self.assertEqual(r["stdout"], "42 async\n", r)
                self.assertEqual(await s.download("/tmp/a.txt"), b"async")
            self.assertTrue(s.closed)
            events = [ev async for ev in c.stream("print('streamed')")]
            self.assertEqual(events[-1].kind, "result", events)
            self.assertEqual("".join(d for k, d in events if k == "stdout"), "streamed\n")
            batch = await c.batch(["print('b1')", "print('b2')"])
            self.assertEqual([r["stdout"] for r in batch], ["b1\n", "b2\n"], batch)
            with self.assertRaises(Forbidden):
                await c.execute("print(1)", timeout=3600)
        asyncio.run(go())


class ExecutionIdBeforeTheResultTest(DaemonTestCase):
    """execute_async returns a handle at once; the daemon keeps the result for get_execution /
    wait_execution, so a caller whose HTTP wait is short loses nothing."""

    def test_execute_async_then_fetch_the_result_later(self):
        c = self.client(timeout=1)
        handle = c.execute_async("import time; time.sleep(1.5); print('kept')")
        xid = handle.id  # a handle like submit's (issue 37); get/wait_execution take it or its id
        self.assertTrue(xid.startswith("ex-"), xid)
        self.assertEqual(str(handle), xid)
        self.assertIn(c.get_execution(xid)["state"], ("queued", "running", "finished"))
        with self.assertRaises(RequestTimedOut):
            c.wait_execution(xid, timeout=0.2)
        r = c.wait_execution(handle, timeout=60)
        self.assertEqual((r["stdout"], r["execution_id"]), ("kept\n", xid), r)
        self.assertEqual(c.get_execution(xid)["result"]["stdout"], "kept\n")
        self.assertEqual(handle.result(timeout=5)["stdout"], "kept\n")
        with self.assertRaises(NotFound):
            c.get_execution("ex-00000000deadbeef")
        with self.assertRaises(BadRequest):
            c.execute_async("print(1)", policy="no-such-policy")

    def test_the_asyncio_client_too(self):
        async def go():
            c = AsyncSandboxClient(base_url=self.daemon.url, policy="code-sandbox")
            handle = await c.execute_async("print('aio')")
            return handle.id, await handle.result(timeout=60)
        xid, r = asyncio.run(go())
        self.assertEqual((r["stdout"], r["execution_id"]), ("aio\n", xid), r)


class within:
    """Fails the test (AssertionError, from SIGALRM) when its block takes longer than `seconds`:
    an event stream that never delivers must not hang the suite."""

    def __init__(self, seconds, what):
        self.seconds, self.what = seconds, what

    def _expired(self, *_):
        raise AssertionError(f"{self.what}: nothing within {self.seconds} s")

    def __enter__(self):
        self.old = signal.signal(signal.SIGALRM, self._expired)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.old)


class ParityWithTheApiTest(DaemonTestCase):
    """Issue 37: pause/resume, fork's report, the monitoring routes, /v1/images and the event
    streams, through both Python clients against the real daemon."""

    @classmethod
    def setUpClass(cls):
        # Its own state directory: the paused sessions and the audit log (history) go there.
        cls.state = tempfile.mkdtemp(prefix="lsb-state-")
        cls.addClassCleanup(shutil.rmtree, cls.state, True)
        cls.daemon_env = {"LLM_SANDBOX_STATE_DIR": cls.state,
                          "LLM_SANDBOX_AUDIT_LOG": os.path.join(cls.state, "audit.jsonl")}
        super().setUpClass()

    def test_pause_resume_and_resume_by_id(self):
        c = self.client()
        with c.session(language="python") as s:
            s.execute("x = 41")
            paused = s.pause()
            self.assertEqual((paused["session_id"], paused["state"]), (s.id, "paused"), paused)
            self.assertIn("processes", paused["pause"]["not_kept"])
            info = s.resume()
            self.assertEqual(info["session_id"], s.id)
            self.assertIn("x", info["resume"]["carried"]["globals"], info)
            self.assertEqual(s.execute("print(x + 1)")["stdout"], "42\n")
            s.pause()
            again = c.resume_session(s.id)  # e.g. another process, or after a restart
            self.assertEqual(again.execute("print(x)")["stdout"], "41\n")

    def test_fork_returns_the_children_and_the_report(self):
        c = self.client()
        with c.session(language="python") as s:
            s.execute("y = [1, 2]\nimport json")
            children = s.fork(2)
            try:
                self.assertEqual(len(children), 2)
                self.assertEqual(children.report["parent"], s.id, children.report)
                self.assertIn("y", children.report["carried"]["globals"])
                self.assertIn("json", children.report["carried"]["modules"])
                self.assertIn("processes", children.report["not_carried"])
                self.assertIs(children[1].fork_report, children.report)
                self.assertEqual(children[0].execute("print(y)")["stdout"], "[1, 2]\n")
            finally:
                for child in children:
                    child.close()

    def test_monitoring_routes_images_and_history(self):
        c = self.client()
        done = c.execute("print('seen')")
        listed = c.list_executions(limit=5)
        self.assertIn(done["execution_id"], [e["execution_id"] for e in listed["recent"]], listed)
        self.assertIn("executor", c.overview())
        self.assertIsInstance(c.images(), list)
        page = c.history(limit=5)
        self.assertIn(done["execution_id"], [e["execution_id"] for e in page["executions"]], page)
        with self.assertRaises(BadRequest):  # the daemon checks the filter's values
            c.history(status="no-such-status")

    def test_events_and_watch_streams(self):
        c = self.client()
        later = threading.Timer(0.5, lambda: c.execute("print('evented')"))
        events = c.events(types=["execution_finished"])
        later.start()
        try:
            with within(30, "GET /v1/events"):
                kind, data = next(events)
        finally:
            events.close()
            later.join()
        self.assertEqual(kind, "execution_finished", data)
        with c.session(language="python") as s:
            s.execute("import os; os.makedirs('/tmp/w', exist_ok=True)")
            writer = threading.Timer(0.5, lambda: s.upload("/tmp/w/new.txt", "x"))
            changes = s.watch("/tmp/w")
            writer.start()
            try:
                with within(30, "GET .../fs/watch"):
                    _, change = next(e for e in changes if e[1] and e[1].get("path") == "/tmp/w/new.txt")
            finally:
                changes.close()
                writer.join()
            self.assertIn(change["op"], ("create", "modify", "close_write"), change)

    def test_the_asyncio_client_too(self):
        async def go():
            c = AsyncSandboxClient(base_url=self.daemon.url, policy="code-sandbox")
            s = await c.session(language="python")
            try:
                await s.execute("z = 7")
                children = await s.fork(1)
                report = children.report
                await children[0].close()
                await s.pause()
                resumed = await s.resume()
                out = (await s.execute("print(z)"))["stdout"]
            finally:
                await s.close()
            return report, resumed, out, await c.overview(), await c.list_executions(), await first_event(c)

        async def first_event(c):
            events = c.events(types=["execution_finished"])
            later = asyncio.ensure_future(asyncio.sleep(0.5))
            later.add_done_callback(lambda _: asyncio.ensure_future(c.execute("print('evented')")))
            try:
                return await asyncio.wait_for(events.__anext__(), 30)
            finally:
                await events.aclose()
        report, resumed, out, overview, listed, event = asyncio.run(go())
        self.assertEqual(event[0], "execution_finished", event)
        page = asyncio.run(AsyncSandboxClient(base_url=self.daemon.url).history(limit=1))
        self.assertEqual(len(page["executions"]), 1, page)  # this class's executions are in the audit log
        self.assertIn("z", report["carried"]["globals"], report)
        self.assertIn("z", resumed["resume"]["carried"]["globals"], resumed)
        self.assertEqual(out, "7\n")
        self.assertIn("sessions", overview)
        self.assertIn("recent", listed)


def slow_policy():
    """code-sandbox renamed `long-runs`, with a 6 s timeout: longer than the client's own."""
    with open(os.path.join(SOURCE_DIR, "policies", "code-sandbox.yaml")) as f:
        text = f.read()
    return (text.replace("name: code-sandbox", "name: long-runs")
            .replace("timeout: 30", "timeout: 6"))


class ClientWaitsForThePolicyTest(DaemonTestCase):
    """A call that names no timeout runs under its policy's; the client must wait that long (plus
    a margin) even when its own timeout is shorter, or the daemon finishes a program whose
    result nobody receives."""
    extra_policies = {"long-runs.yaml": slow_policy()}

    def test_sync_execute_session_and_batch_outlast_the_client_timeout(self):
        # 2 s, not less: creating the session (a box) must fit in it on a loaded CI machine.
        c = self.client(policy="long-runs", timeout=2)
        code = "import time; time.sleep(3.5); print('finished')"
        r = c.execute(code)
        self.assertEqual((r["status"], r["stdout"]), ("ok", "finished\n"), r)
        with c.session(language="python") as s:
            r = s.execute(code)
            self.assertEqual(r["stdout"], "finished\n", r)
        self.assertEqual([x["stdout"] for x in c.batch([code])], ["finished\n"])
        events = list(c.stream(code))
        self.assertEqual(events[-1].data["stdout"], "finished\n", events)

    def test_async_execute_outlasts_the_client_timeout(self):
        async def go():
            c = AsyncSandboxClient(base_url=self.daemon.url, policy="long-runs", timeout=1)
            return await c.execute("import time; time.sleep(2.5); print('finished')")
        self.assertEqual(asyncio.run(go())["stdout"], "finished\n")

    def test_a_timed_out_program_is_still_a_result(self):
        # The policy's deadline (6 s) fires in the daemon, before the client's wait (6 + 15 s).
        r = self.client(policy="long-runs", timeout=1).execute("while True: pass")
        self.assertEqual(r["status"], "timeout", r)


NET_ON_POLICY = """\
version: "1.0"
name: net-on
description: "Sub-agents that need the network (every name: Docker's bridge, or the native egress proxy)"
backend: docker
container:
  image: python:3.12-slim
  read_only: true
  tmpfs:
    /tmp: "size=16M,noexec,nosuid"
network:
  enabled: true
  allow: ["*"]
commands:
  allow: ["/usr/bin/python3"]
resources:
  memory: "128M"
  timeout: 10
"""


class NetworkOnSubAgentsTest(DaemonTestCase):
    """Sub-agents under a policy that turns the network on for every name (docs/network.md)."""
    extra_policies = {"net-on.yaml": NET_ON_POLICY}

    # Issue 19: the native backend no longer refuses the network; it gives the box only its egress
    # proxy (docs/network.md), so a direct connection still reaches nothing.
    def test_native_serves_a_network_on_policy_through_the_egress_proxy(self):
        if TEST_BACKEND != "native":
            self.skipTest("the Docker backend serves network-on policies on its bridge: "
                          "test_docker_network_on_sub_agents_cannot_reach_each_other")
        r = self.client(policy="net-on").execute(
            "import os, socket\n"
            "print(os.environ['HTTPS_PROXY'])\n"
            "s = socket.socket(); s.settimeout(2)\n"
            "try:\n"
            "    s.connect(('192.0.2.1', 80)); print('reached')\n"
            "except OSError as e:\n"
            "    print('unreachable')\n")
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"], "http://127.0.0.1:3128\nunreachable\n", r)

    # Network-on boxes join the backend's own bridge network, llm-sandbox-isolated, whose
    # inter-container traffic is off (com.docker.network.bridge.enable_icc=false): sub-agent B must
    # not reach sub-agent A's listener at A's address (on the engine's default bridge it did).
    def test_docker_network_on_sub_agents_cannot_reach_each_other(self):
        if TEST_BACKEND != "docker":
            self.skipTest("the native backend serves network-on policies through its egress proxy: "
                          "test_native_serves_a_network_on_policy_through_the_egress_proxy")
        c = self.client(policy="net-on")
        a = c.session(language="python")
        with a, c.session(language="python") as b:
            r = a.execute(
                "import socket\n"
                "srv = socket.socket(); srv.bind(('0.0.0.0', 7300)); srv.listen()\n"
                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('192.0.2.1', 9))\n"
                "print(s.getsockname()[0])\n")
            self.assertEqual(r["status"], "ok", r)
            ip = r["stdout"].strip()
            self.assertNotIn(ip, ("", "0.0.0.0", "127.0.0.1"), r)
            r = b.execute(
                "import socket\n"
                "s = socket.socket(); s.settimeout(2)\n"
                "try:\n"
                f"    s.connect(({ip!r}, 7300)); print('reached')\n"
                "except OSError as e:\n"
                "    print('unreachable', e)\n")
            self.assertEqual(r["status"], "ok", r)
            self.assertTrue(r["stdout"].startswith("unreachable"),
                            f"sub-agent B reached sub-agent A at {ip}:7300: {r}")


class AuthTest(DaemonTestCase):
    daemon_env = {"LLM_SANDBOX_TOKENS": "secret-one,secret-two"}

    def test_tokens(self):
        with self.assertRaises(Unauthorized) as cm:
            self.client().execute("print(1)")
        self.assertEqual(cm.exception.status, 401)
        with self.assertRaises(Unauthorized):
            self.client(token="wrong").execute("print(1)")
        self.assertEqual(self.client(token="secret-two").execute("print(1)")["stdout"], "1\n")
        self.assertEqual(self.client().health()["status"], "ok")  # /healthz needs no token


class LimitsTest(DaemonTestCase):
    """The busy and too-large error classes, on a daemon with tiny limits."""
    daemon_args = ("--max-concurrency", "1", "--queue", "1", "--max-file", "64K")

    def test_rate_limited_then_retried(self):
        code = "import time; time.sleep(1); print('done')"

        def burst(client, n):
            out = [None] * n
            def one(i):
                try:
                    out[i] = client.execute(code)
                except SandboxError as e:
                    out[i] = e
            threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return out

        # Without retries a burst beyond one worker and one queue place is refused (429)...
        out = burst(self.client(retries=0), 5)
        limited = [e for e in out if isinstance(e, RateLimited)]
        self.assertTrue(limited, out)
        self.assertEqual(limited[0].status, 429)
        self.assertIsNotNone(limited[0].retry_after)
        self.assertTrue(all(isinstance(r, dict) or isinstance(r, RateLimited) for r in out), out)
        # ... and with the client's defaults every one of them waits its turn and runs once.
        t0 = time.monotonic()
        out = burst(self.client(), 5)
        self.assertEqual([r["stdout"] if isinstance(r, dict) else r for r in out], ["done\n"] * 5)
        self.assertLess(time.monotonic() - t0, 30)

    def test_async_burst_with_default_retries(self):
        async def go():
            c = AsyncSandboxClient(base_url=self.daemon.url, policy="code-sandbox")
            return await asyncio.gather(*(c.execute(f"import time; time.sleep(0.5); print({i})")
                                          for i in range(6)), return_exceptions=True)
        out = asyncio.run(go())
        self.assertEqual([r["stdout"] if isinstance(r, dict) else r for r in out],
                         [f"{i}\n" for i in range(6)])

    def test_clients_at_capacity_are_never_refused(self):
        # One worker and one queue place: two sessions, each waiting for its answer before the
        # next request, never have more in flight than that. None may be refused (429): the
        # daemon frees a worker's place before it answers (scheduler/executor.h, Then).
        def loop(s, out):
            for _ in range(100):
                try:
                    out.append(s.execute("print(1)")["stdout"])
                except RateLimited as e:
                    out.append(e)
        c = self.client(retries=0)  # a refusal must show, not be retried away
        with c.session(language="python") as a, c.session(language="python") as b:
            outs = ([], [])
            threads = [threading.Thread(target=loop, args=(s, o)) for s, o in zip((a, b), outs)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        refused = [e for o in outs for e in o if isinstance(e, RateLimited)]
        self.assertEqual(refused, [], f"{len(refused)} of 200 refused at capacity")
        self.assertEqual(outs, (["1\n"] * 100, ["1\n"] * 100))

    def test_payload_too_large_and_conflict(self):
        with self.client().session(language="python") as s:
            with self.assertRaises(PayloadTooLarge) as cm:
                s.upload("/tmp/big.bin", b"x" * (65 * 1024))
            self.assertEqual(cm.exception.status, 413)
            self.assertEqual(s.upload("/tmp/ok.bin", b"x" * 1024)["size"], 1024)
            busy = threading.Thread(target=s.execute, args=("import time; time.sleep(1.5)",))
            busy.start()
            time.sleep(0.5)
            try:
                with self.assertRaises(Conflict):
                    s.execute("print(1)")
            finally:
                busy.join()


if __name__ == "__main__":
    unittest.main()
