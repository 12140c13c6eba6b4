"""While hostile programs run through `llm-sandbox serve`, the host and the daemon stay well:
/healthz answers within 100 ms during a fork bomb and a memory hog, the daemon's memory stays
bounded, and after it stops nothing is left (processes, cgroups, containers, mounts, temp dirs).

Runs on the native backend, and on docker/runc when an engine and the test image are present.
Run: python3 -m unittest discover -s tests/adversarial -p 'test_*.py' -v (CTest: adversarial_host).
"""
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from backends import BINARY, IMAGES, SOURCE_DIR, DockerRunc, Native  # noqa: E402

HEALTH_BUDGET_S = 0.100
RSS_BOUND_KB = 200 * 1024      # the daemon's peak resident set, hostile load included
# Under ASan the resident set is mostly the sanitizer's (shadow memory, a quarantine of freed blocks
# up to 256 MiB): measured 168 MiB before any load. There the bound is on the growth under the load;
# the absolute bound is checked by the release build (measured there: 11 MiB).
ASAN_PEAK_GROWTH_KB = 96 * 1024


def sanitized_build():
    """True for scripts/sanitize.sh's ASan+UBSan build (its CMakeCache says LSB_SANITIZE=ON)."""
    try:
        with open(os.path.join(os.environ.get("LSB_BUILD_DIR", ""), "CMakeCache.txt")) as f:
            return any(line.strip() == "LSB_SANITIZE:BOOL=ON" for line in f)
    except OSError:
        return False


PR_SET_CHILD_SUBREAPER = 36

FORK_BOMB = '''
import os, time
end = time.time() + 4
while time.time() < end:
    try:
        if os.fork() == 0:
            time.sleep(6); os._exit(0)
    except OSError:
        pass
'''
MEMORY_HOG = '''
chunks = []
while True: chunks.append(bytearray(16 << 20))
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def children_of(pid):
    kids = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2:].split()[1]) == pid:
                kids.append(int(e))
    return kids


def sandbox_cgroups(since):
    """cgroup dirs with 'sandbox' in their path created after `since` (ours, not other suites')."""
    out = []
    for ctrl in ("memory", "pids", "cpu", "unified"):
        base = f"/sys/fs/cgroup/{ctrl}"
        for dirpath, dirnames, _ in os.walk(base):
            if dirpath.count("/") > base.count("/") + 4:
                dirnames[:] = []
            if "sandbox" in dirpath[len(base):]:
                try:
                    if os.stat(dirpath).st_ctime >= since and dirpath != base:
                        out.append(dirpath)
                except OSError:
                    pass
    # A parent group the backend keeps for all boxes is not a leftover; only boxes are.
    return [d for d in out if not any(o.startswith(d + "/") for o in out) and not d.endswith("llm-sandbox")]


def sandbox_mounts():
    with open("/proc/self/mountinfo") as f:
        return {line.split()[4] for line in f if "sandbox" in line or "/run/job" in line}


def temp_entries():
    out = set()
    for d in ("/tmp", "/dev/shm"):
        try:
            out |= {os.path.join(d, e) for e in os.listdir(d) if e.startswith("lsb") or "sandbox" in e}
        except OSError:
            pass
    return out


class Daemon:
    def __init__(self, backend):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="adv-serve-", suffix=".log", delete=False)
        env = dict(os.environ)
        env.pop("LLM_SANDBOX_TOKENS", None)
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--listen", f"127.0.0.1:{self.port}", "--policies",
             os.path.join(SOURCE_DIR, "policies"), "--images", IMAGES, "--backend", backend,
             "--max-concurrency", "2"], stdout=self.log, stderr=subprocess.STDOUT, cwd=SOURCE_DIR, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.get("/healthz", timeout=1)
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        text = self.log_text()
        self.stop()  # nobody gets this Daemon to stop: end it and remove its log here
        raise AssertionError("the daemon did not come up: " + text)

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()[-3000:]

    def get(self, path, timeout=5):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
            return r.status, r.read()

    def execute(self, code, timeout_s=None):
        body = {"code": code}
        if timeout_s:
            body["timeout"] = timeout_s
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/execute", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=180) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        try:
            os.unlink(self.log.name)  # kept until now (delete=False) for log_text()
        except OSError:
            pass


class Prober(threading.Thread):
    """GETs /healthz every 50 ms and records each answer's latency."""

    def __init__(self, daemon):
        super().__init__(daemon=True)
        self.d = daemon
        self.latencies = []
        self.errors = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                status, _ = self.d.get("/healthz", timeout=2)
                if status != 200:
                    self.errors.append(f"status {status}")
            except OSError as e:
                self.errors.append(str(e))
            self.latencies.append(time.monotonic() - t0)
            self.stop.wait(0.05)


class HostHealth:
    """Mixed into one TestCase per backend."""
    backend = None

    @classmethod
    def setUpClass(cls):
        reason = cls.backend.unavailable()
        if reason:
            raise unittest.SkipTest(reason)
        # Orphans of the daemon's boxes would be re-parented to us: we can then see them.
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    def test_daemon_stays_well_under_hostile_load_and_leaves_nothing(self):
        since = time.time()
        mounts0, temps0 = sandbox_mounts(), temp_entries()
        d = Daemon(self.backend.backend_arg)
        pid = d.proc.pid
        try:
            d.execute('print("warm")')
            rss_before = status_kb(pid, "VmRSS")
            prober = Prober(d)
            prober.start()
            results = {}
            threads = [threading.Thread(target=lambda k=k, c=c, t=t: results.__setitem__(k, d.execute(c, t)))
                       for k, c, t in (("fork", FORK_BOMB, 8), ("hog", MEMORY_HOG, None))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=240)
            prober.stop.set()
            prober.join()
            for _ in range(10):   # a few more executions: the daemon's memory must not keep growing
                d.execute('print("x" * 100000)')
            rss_after, hwm = status_kb(pid, "VmRSS"), status_kb(pid, "VmHWM")
        finally:
            log = d.log_text()
            d.stop()
        self.assertEqual(results.get("hog", {}).get("status"), "oom", results.get("hog"))
        self.assertTrue(any(a.get("rule") == "pids_limit" for a in results.get("fork", {}).get("alerts", [])),
                        results.get("fork"))
        self.assertFalse(prober.errors, f"/healthz failed during the load: {prober.errors[:5]}")
        self.assertGreater(len(prober.latencies), 20)
        worst = max(prober.latencies)
        print(f"\n{self.backend.name}: /healthz {len(prober.latencies)} probes, worst {worst * 1000:.1f} ms; "
              f"daemon RSS {rss_before} -> {rss_after} kB, peak {hwm} kB", file=sys.stderr)
        self.assertLess(worst, HEALTH_BUDGET_S, f"/healthz took {worst * 1000:.0f} ms")
        if sanitized_build():
            self.assertLess(hwm - rss_before, ASAN_PEAK_GROWTH_KB, "daemon peak RSS growth (ASan build)")
        else:
            self.assertLess(hwm, RSS_BOUND_KB, "daemon peak RSS")
        self.assertLess(rss_after - rss_before, 64 * 1024, "daemon RSS kept growing")
        # Nothing left behind.
        time.sleep(1)
        self.assertEqual(children_of(os.getpid()), [], "processes outlived the daemon\n" + log)
        self.assertEqual(sandbox_cgroups(since), [], "cgroups left")
        self.assertEqual(sandbox_mounts() - mounts0, set(), "mounts left")
        self.assertEqual(temp_entries() - temps0, set(), "temp entries left")
        if self.backend.backend_arg == "docker":
            left = subprocess.run(["docker", "ps", "-aq", "--filter", "label=io.llm-sandbox.owner"],
                                  capture_output=True, text=True, timeout=30).stdout.split()
            mine = [c for c in left if f"/{pid}/" in subprocess.run(
                ["docker", "inspect", "--format", '{{index .Config.Labels "io.llm-sandbox.owner"}}', c],
                capture_output=True, text=True, timeout=30).stdout]
            self.assertEqual(mine, [], "containers left")


class NativeHostHealth(HostHealth, unittest.TestCase):
    backend = Native()


class DockerHostHealth(HostHealth, unittest.TestCase):
    backend = DockerRunc()


if __name__ == "__main__":
    unittest.main()
