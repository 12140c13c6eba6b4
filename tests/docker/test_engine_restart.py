"""The engine restarted mid-run (issue 3, Faults): the execution that was running reports an error
naming the engine, within a bound (not a hang); the next execution works; nothing is left behind.

Never the machine's shared dockerd: the module starts a private engine (private_engine.py: its own
socket, data root, exec root, no bridge, no iptables), imports the test image into it, points the
CLI and the daemon at it with DOCKER_HOST, restarts it under a running execution, and removes it
in tearDownModule whatever happened.
"""
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from daemon_util import BINARY, IMAGES, SOURCE_DIR, Daemon, Leftovers, owned_by_pid, prepare_engine_or_skip, request
from private_engine import PrivateEngine

SEED = os.path.join(SOURCE_DIR, "policies", "code-sandbox.yaml")
ENGINE = None
# How long the interrupted execution may take to report, from the moment the engine is told to stop
# (dockerd gives a container 10 s to stop before it kills it, then the engine is gone).
REPORT_BOUND_S = 45
LONG = "import time\nprint('started', flush=True)\ntime.sleep(120)\nprint('finished')\n"


def setUpModule():
    global ENGINE
    prepare_engine_or_skip()  # root or an engine; the cached image tarball
    if os.geteuid() != 0:
        raise unittest.SkipTest("a private dockerd needs root")
    ENGINE = PrivateEngine()
    try:
        ENGINE.start()
        ENGINE.load_test_image()
    except Exception:
        ENGINE.destroy()
        raise


def tearDownModule():
    if ENGINE is not None:
        ENGINE.destroy()


def cli(code, env, extra=()):
    args = [BINARY, "run", "--backend", "docker", "--policy", SEED, "--images", IMAGES, *extra, "-"]
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=SOURCE_DIR)
    p.stdin.write(code)
    p.stdin.close()
    return p


class Reader:
    """Reads a stream to its end in a thread; `wait_line` waits (bounded) for a line."""

    def __init__(self, stream):
        self.lines = []
        self.cv = threading.Condition()
        self.thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self.thread.start()

    def _run(self, stream):
        for line in stream:
            with self.cv:
                self.lines.append(line)
                self.cv.notify_all()

    def wait_line(self, want, seconds):
        with self.cv:
            return self.cv.wait_for(lambda: any(line.strip() == want for line in self.lines), seconds)

    def text(self, seconds=10):
        self.thread.join(seconds)
        with self.cv:
            return "".join(self.lines)


class EngineRestartedMidRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="engine-restart-tmp.")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = dict(ENGINE.env, TMPDIR=self.tmp)
        self.before = Leftovers(env=ENGINE.env, private_tmp=self.tmp)

    def restart_engine(self):
        t0 = time.monotonic()
        ENGINE.stop()
        stopped = time.monotonic()
        ENGINE.start()
        return t0, stopped

    def test_cli_execution_reports_the_engine_error_and_the_next_one_works(self):
        p = cli(LONG, self.env)
        out_r, err_r = Reader(p.stdout), Reader(p.stderr)
        self.assertTrue(out_r.wait_line("started", 60), f"the execution did not start: {p.poll()} {err_r.text(1)}")
        t0, stopped = self.restart_engine()
        try:
            p.wait(timeout=max(1, REPORT_BOUND_S - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            self.fail(f"the CLI hung: no report {REPORT_BOUND_S} s after the engine was stopped")
        reported = time.monotonic() - t0
        out, err = out_r.text(), err_r.text()
        p.stdout.close()
        p.stderr.close()
        print(f"\nengine stopped in {stopped - t0:.1f} s; the CLI reported after {reported:.1f} s: "
              f"exit {p.returncode}: {err.strip()!r}", end=" ")
        self.assertNotEqual(p.returncode, 0, out + err)
        self.assertNotIn("finished", out)
        self.assertRegex(err, r"(?i)docker engine|engine at unix://", "the error does not name the engine")
        self.assertIn(ENGINE.host, err, "the error does not name the engine's address")
        # The next execution works, and its start removes the dead CLI's container.
        p2 = cli('print("after")', self.env)
        out2, err2 = p2.stdout.read(), p2.stderr.read()
        p2.wait(timeout=120)
        p2.stdout.close()
        p2.stderr.close()
        self.assertEqual((p2.returncode, out2), (0, "after\n"), err2)
        self.assertEqual(self.before.report(pids=[p.pid, p2.pid]), {}, "left behind after the restart")

    def test_daemon_execution_reports_the_engine_error_and_later_ones_work(self):
        logs = tempfile.mkdtemp(prefix="engine-restart-logs.")
        self.addCleanup(shutil.rmtree, logs, True)
        d = Daemon(pool_size=2, env=self.env, log_dir=logs)
        self.addCleanup(d.close)
        status, r = request(d.base, "POST", "/v1/execute", {"code": 'print("warm")'})
        self.assertEqual((status, r.get("stdout")), (200, "warm\n"), r)
        results = []

        def client():
            results.append(request(d.base, "POST", "/v1/execute", {"code": LONG}, timeout=REPORT_BOUND_S + 60))
        t = threading.Thread(target=client)
        t.start()
        deadline = time.monotonic() + 30
        # The running box plus the refilled pool: wait until the execution is under way.
        while time.monotonic() < deadline and len(owned_by_pid(d.proc.pid, env=ENGINE.env)) < 3:
            time.sleep(0.1)
        time.sleep(1)
        t0, stopped = self.restart_engine()
        t.join(timeout=REPORT_BOUND_S)
        self.assertFalse(t.is_alive(), f"the daemon's execution hung after the engine restart\n{d.output()[-3000:]}")
        reported = time.monotonic() - t0
        status, r = results[0]
        print(f"\nengine stopped in {stopped - t0:.1f} s; the daemon answered after {reported:.1f} s: "
              f"{status} {r}", end=" ")
        self.assertNotIn("finished", str(r))
        self.assertTrue(status != 200 or r.get("status") not in ("ok",), r)
        self.assertRegex(str(r), r"(?i)docker engine|engine at unix://", "the answer does not name the engine")
        # Later executions work: the pool's boxes died with the engine and must not be handed out.
        for i in range(4):
            status, r = request(d.base, "POST", "/v1/execute", {"code": f"print({i})"})
            self.assertEqual((status, r.get("stdout")), (200, f"{i}\n"), f"{r}\n{d.output()[-3000:]}")
        pid = d.proc.pid
        d.stop()
        self.assertEqual(d.proc.returncode, 0, d.output()[-3000:])
        self.assertEqual(self.before.report(pids=[pid]), {}, d.output()[-3000:])


if __name__ == "__main__":
    unittest.main()
