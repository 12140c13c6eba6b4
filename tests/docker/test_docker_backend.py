"""The Docker backend through the real binary (`llm-sandbox run --backend docker`), on a real engine.

setUpModule makes the engine and the test image exist (scripts/ensure-docker.sh and
scripts/build-test-image.sh); without root and without an engine every test is skipped with the
reason. LSB_BUILD_DIR / LSB_SOURCE_DIR locate the binary and the repo (the CTest entry sets them).
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from daemon_util import BINARY, BUILD_DIR, IMAGES, SOURCE_DIR, Daemon, Leftovers, owned_by_pid, request
from daemon_util import SEED_POLICY as SEED
OWNER_LABEL = "io.llm-sandbox.owner"
SKIP_REASON = None


def engine_answers():
    return subprocess.run(["docker", "version"], capture_output=True, timeout=30).returncode == 0


def setUpModule():
    global SKIP_REASON
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest(f"{BINARY} not built")
    if os.geteuid() != 0 and not engine_answers():
        SKIP_REASON = "no Docker engine answers and we are not root (run: sudo scripts/ensure-docker.sh)"
        raise unittest.SkipTest(SKIP_REASON)
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "ensure-docker.sh")], check=True, timeout=600)
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "build-test-image.sh")], check=True, timeout=900)


def run(code, policy=SEED, extra=(), env=None, timeout=120):
    """(parsed --json result or None, the finished process with .pid) of one CLI execution."""
    args = [BINARY, "run", "--backend", "docker", "--json", "--policy", policy, "--images", IMAGES]
    args += list(extra) + ["-"]
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=SOURCE_DIR)
    try:
        out, err = p.communicate(code, timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    proc = subprocess.CompletedProcess(args, p.returncode, out, err)
    proc.pid = p.pid
    try:
        return json.loads(proc.stdout), proc
    except json.JSONDecodeError:
        return None, proc


def our_containers(pid):
    """Containers of the CLI process `pid` (its owner label names it). The engine is shared: other
    engineers' suites have labelled containers of their own, which a test must neither count nor touch."""
    return owned_by_pid(pid)


def policy_variant(replacements, extra_container_lines=()):
    """A temp copy of the seed policy with text replaced / container: lines added."""
    with open(SEED) as f:
        text = f.read()
    for old, new in replacements:
        text = text.replace(old, new)
    if extra_container_lines:
        text = text.replace("container:\n", "container:\n" + "".join(
            f"  {line}\n" for line in extra_container_lines), 1)
    fd, path = tempfile.mkstemp(suffix=".yaml", prefix="code-sandbox-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class SeedPolicy(unittest.TestCase):
    def test_seed_policy_verbatim_prints_hi(self):
        r, proc = run('print("hi")')
        self.assertIsNotNone(r, proc.stderr)
        self.assertEqual(r["status"], "ok", proc.stderr)
        self.assertEqual(r["stdout"], "hi\n")
        self.assertEqual(r["backend"], "docker")

    def test_outer_box_controls(self):
        code = (
            "import os, socket\n"
            "print('uid', os.getuid())\n"
            "for p in ('/pwned', '/usr/bin/pwned'):\n"
            "    try: open(p, 'w'); print('write', p, 'OK')\n"
            "    except OSError as e: print('write', p, e.errno)\n"
            "try: open('/etc/shadow').read(); print('shadow OK')\n"
            "except OSError as e: print('shadow', e.errno)\n"
            "print('docker.sock', os.path.exists('/var/run/docker.sock'))\n"
            "s = socket.socket(); s.settimeout(2)\n"
            "try: s.connect(('169.254.169.254', 80)); print('connect OK')\n"
            "except OSError as e: print('connect failed')\n"
            "try: print('ifaces', sorted(os.listdir('/sys/class/net')))\n"
            "except OSError: print('ifaces', ['lo'])\n")
        r, proc = run(code)
        self.assertIsNotNone(r, proc.stderr)
        out = r["stdout"]
        self.assertIn("uid 1000", out)
        self.assertIn("write /pwned 30", out)          # EROFS
        self.assertIn("write /usr/bin/pwned 30", out)
        self.assertNotIn("shadow OK", out)
        self.assertIn("docker.sock False", out)
        self.assertIn("connect failed", out)
        self.assertIn("ifaces ['lo']", out)             # NetworkMode none

    def test_tmp_is_noexec_and_sized(self):
        code = (
            "import os, shutil\n"
            "shutil.copy('/usr/bin/python3', '/tmp/py'); os.chmod('/tmp/py', 0o755)\n"
            "try: os.execv('/tmp/py', ['py', '-c', '1']); print('exec OK')\n"
            "except OSError as e: print('exec', e.errno)\n"
            "st = os.statvfs('/tmp'); print('tmp_mb', st.f_blocks * st.f_frsize // (1 << 20))\n")
        r, proc = run(code)
        self.assertIsNotNone(r, proc.stderr)
        self.assertIn("exec 13", r["stdout"])            # EACCES: noexec
        self.assertIn("tmp_mb 100", r["stdout"])

    def test_denied_shell_is_refused_with_alert(self):
        r, proc = run("import os\nprint('rc', os.system('/bin/sh -c \"echo pwned\"'))\n")
        self.assertIsNotNone(r, proc.stderr)
        self.assertNotIn("pwned", r["stdout"])
        self.assertTrue(any(a.get("rule") == "denied_exec" for a in r["alerts"]), r["alerts"])


class Limits(unittest.TestCase):
    def test_memory_hog_is_oom(self):
        r, proc = run("x = []\nwhile True: x.append(b'x' * (16 << 20))\n")
        self.assertIsNotNone(r, proc.stderr)
        self.assertEqual(r["status"], "oom", r)

    def test_fork_bomb_is_contained(self):
        code = ("import os, time\n"
                "n = 0\n"
                "try:\n"
                "    for _ in range(10000):\n"
                "        if os.fork() == 0:\n"
                "            time.sleep(30); os._exit(0)\n"
                "        n += 1\n"
                "except OSError as e: print('fork stopped', e.errno, n)\n")
        r, proc = run(code, extra=["--timeout", "10"])
        self.assertIsNotNone(r, proc.stderr)
        self.assertIn("fork stopped 11", r["stdout"])    # EAGAIN at the pids limit

    def test_timeout_kills(self):
        t0 = time.monotonic()
        r, proc = run("while True: pass\n", extra=["--timeout", "2"])
        self.assertIsNotNone(r, proc.stderr)
        self.assertEqual(r["status"], "timeout")
        self.assertLess(time.monotonic() - t0, 20)

    def test_timeout_sigterm_then_grace_keeps_the_summary(self):
        # The same init as native (issue 16): SIGTERM at the timeout, SIGKILL after the grace, 124.
        code = ("import signal, sys, time\n"
                "def done(*_):\n"
                "    print('=== 3 passed ===')\n"
                "    sys.exit(1)\n"
                "signal.signal(signal.SIGTERM, done)\n"
                "time.sleep(100)\n")
        r, proc = run(code, extra=["--timeout", "2"])
        self.assertIsNotNone(r, proc.stderr)
        self.assertEqual((r["status"], r["exit_code"], proc.returncode), ("timeout", 124, 124), r)
        self.assertEqual(r["stdout"], "=== 3 passed ===\n", r)
        t0 = time.monotonic()
        r, proc = run("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(100)\n",
                      extra=["--timeout", "2"])
        self.assertEqual((r["status"], r["exit_code"], r["signal"]), ("timeout", 124, 9), r)
        self.assertGreaterEqual(time.monotonic() - t0, 3.9)  # timeout 2 s + the seed's grace 2 s


class Faults(unittest.TestCase):
    def test_engine_down_is_a_clear_fast_error(self):
        env = dict(os.environ, DOCKER_HOST="unix:///nonexistent/docker.sock")
        t0 = time.monotonic()
        r, proc = run('print(1)', env=env)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("unix:///nonexistent/docker.sock", proc.stderr)
        self.assertIn("ensure-docker", proc.stderr)
        self.assertLess(time.monotonic() - t0, 10)

    def test_missing_image_names_it_and_how_to_provide_it(self):
        path = policy_variant([("python:3.12-slim", "llm-sandbox/absent:0")])
        try:
            r, proc = run('print(1)', policy=path)
        finally:
            os.unlink(path)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("llm-sandbox/absent:0", proc.stderr)
        self.assertIn("build-test-image.sh", proc.stderr)

    def test_container_killed_from_outside_is_reported(self):
        args = [BINARY, "run", "--backend", "docker", "--json", "--policy", SEED, "--images", IMAGES, "-"]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=SOURCE_DIR)
        proc.stdin.write("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
        proc.stdin.close()
        deadline = time.monotonic() + 30
        mine = []
        while time.monotonic() < deadline and not mine:
            mine = our_containers(proc.pid)
            time.sleep(0.2)
        self.assertTrue(mine, "no running sandbox container appeared")
        time.sleep(1)
        subprocess.run(["docker", "kill", mine[0]], capture_output=True, timeout=30)
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        try:
            r = json.loads(out)
            self.assertIn(r["status"], ("killed", "error"))
        except json.JSONDecodeError:
            self.assertTrue(err.strip(), "no error reported")

    def test_sigkill_of_the_cli_leaves_orphans_that_the_next_start_removes(self):
        tmp = private_tmpdir(self)
        env = dict(os.environ, TMPDIR=tmp)
        before = Leftovers(private_tmp=tmp)
        args = [BINARY, "run", "--backend", "docker", "--policy", SEED, "--images", IMAGES, "-"]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=SOURCE_DIR, env=env)
        proc.stdin.write(b"import time\nprint('started', flush=True)\ntime.sleep(60)\n")
        proc.stdin.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not our_containers(proc.pid):
            time.sleep(0.2)
        self.assertTrue(our_containers(proc.pid), "no sandbox container appeared")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        self.assertTrue(our_containers(proc.pid), "the container should outlive a SIGKILLed CLI")
        proc.stdout.close()
        proc.stderr.close()
        r, p2 = run('print("after")', env=env)
        self.assertIsNotNone(r, p2.stderr)
        self.assertEqual(r["stdout"], "after\n")
        self.assertEqual(our_containers(proc.pid), [], "the orphan was not removed by the next start")
        self.assertEqual(before.report(pids=[proc.pid, p2.pid]), {}, "left behind after SIGKILL + restart")


def private_tmpdir(test):
    """A fresh TMPDIR for the processes under test, removed after the test: what they leave in it
    is named by Leftovers.report."""
    path = tempfile.mkdtemp(prefix="lsb-test-tmpdir.")
    test.addCleanup(shutil.rmtree, path, True)
    return path


class Hygiene(unittest.TestCase):
    """No container, volume or temp file left after many executions: LSB_DOCKER_HYGIENE_RUNS (200)
    through the daemon's HTTP API and its warm pool (the way most executions run), plus
    LSB_DOCKER_HYGIENE_CLI_RUNS (20) cold CLI runs, each a process of its own."""

    def test_no_leftovers_after_many_cli_runs(self):
        n = int(os.environ.get("LSB_DOCKER_HYGIENE_CLI_RUNS", "20"))
        tmp = private_tmpdir(self)
        env = dict(os.environ, TMPDIR=tmp)
        before = Leftovers(private_tmp=tmp)
        pids = []
        for i in range(n):
            r, proc = run(f'print({i})', env=env)
            pids.append(proc.pid)
            self.assertIsNotNone(r, proc.stderr)
            self.assertEqual(r["stdout"], f"{i}\n")
        self.assertEqual(before.report(pids=pids), {})

    def test_no_leftovers_after_many_daemon_executions(self):
        n = int(os.environ.get("LSB_DOCKER_HYGIENE_RUNS", "200"))
        clients = 3
        t0 = time.monotonic()
        tmp = private_tmpdir(self)
        logs = tempfile.mkdtemp(prefix="hygiene-logs.")
        self.addCleanup(shutil.rmtree, logs, True)
        before = Leftovers(private_tmp=tmp)
        d = Daemon(pool_size=2, env=dict(os.environ, TMPDIR=tmp), log_dir=logs)
        self.addCleanup(d.close)
        failures, done = [], []
        lock = threading.Lock()
        todo = iter(range(n))

        def client():
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                status, r = request(d.base, "POST", "/v1/execute", {"code": f"print({i})"})
                with lock:
                    if status != 200 or r.get("stdout") != f"{i}\n" or r.get("backend") != "docker":
                        failures.append((i, status, r))
                    done.append(i)

        try:
            threads = [threading.Thread(target=client) for _ in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=600)
            self.assertFalse(any(t.is_alive() for t in threads), "clients hung")
            self.assertEqual(failures[:3], [], d.output()[-3000:])
            self.assertEqual(len(done), n)
        finally:
            d.stop()
        self.assertEqual(d.proc.returncode, 0, d.output()[-3000:])
        self.assertEqual(before.report(pids=[d.proc.pid]), {}, d.output()[-3000:])
        print(f"\n{n} executions through the daemon in {time.monotonic() - t0:.1f} s", end=" ")


class Gvisor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        info = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"],
                              capture_output=True, text=True, timeout=30).stdout
        if "runsc" not in info:
            raise unittest.SkipTest("runsc is not registered with the engine (apt-get install runsc; "
                                    "scripts/ensure-docker.sh)")

    def test_runsc_without_acceptance_is_refused_clearly(self):
        path = policy_variant([], ["runtime: runsc"])
        try:
            r, proc = run('print(1)', policy=path)
        finally:
            os.unlink(path)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("gvisor_accept_weaker", proc.stderr)

    # The backend passes the acceptance to init (BoxSetup.gvisor_accept_weaker), which then runs
    # without Landlock and the watch instead of refusing.
    def test_runsc_with_acceptance_runs(self):
        path = policy_variant([], ["runtime: runsc", "gvisor_accept_weaker: true"])
        try:
            r, proc = run('print("hi")', policy=path)
        finally:
            os.unlink(path)
        self.assertIsNotNone(r, proc.stderr)
        self.assertEqual(r["stdout"], "hi\n")


if __name__ == "__main__":
    unittest.main()
