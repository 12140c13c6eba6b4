"""Issue 15, classes 2 and 5: what a box costs the host is bounded, and its timeout never waits
for a reader.

- 10 concurrent executions that flood alerts (refused connect, denied exec, refused unshare) for
  their whole timeout leave the daemon's RSS within 64 MiB of where it started, with a streaming
  client and a /v1/events subscriber that never read; the audit log and the recent view stay
  bounded; the CLI under the same flood stays within 64 MiB.       (bounds.daemon_flood_rss,
                                                                    bounds.cli_flood_rss)
- The coalesced count is the real number of attempts.             (bounds.alert_count)
- A streaming client that stops reading still sees the box killed at its timeout; so does
  `llm-sandbox run` whose stdout nobody drains.                    (bounds.stalled_sse,
                                                                    bounds.cli_undrained_stdout)
- A batch of programs printing NULs gets an answer under the documented cap.  (bounds.batch_nul)

Runs on the native backend and on docker/runc when an engine and the test image are present
(it never starts or prepares an engine). Numbers are printed to stderr.
Run: python3 -m unittest tests/adversarial/test_daemon_bounds.py -v (CTest: adversarial_host).
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from backends import BINARY, BUILD_DIR, IMAGES, SEED_POLICY, SOURCE_DIR, TEST_IMAGE  # noqa: E402
from test_host_health import free_port, status_kb  # noqa: E402

MIB = 1 << 20
RSS_GROWTH_BOUND_KB = 64 * 1024


def sanitized_build():
    try:
        with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
            return any(line.strip() == "LSB_SANITIZE:BOOL=ON" for line in f)
    except OSError:
        return False


# Under ASan (scripts/sanitize.sh) freed memory sits in its quarantine (256 MiB by default) and
# counts as resident: the bound is then 64 MiB on top of that, for the daemon and the CLI.
RSS_BOUND_KB = RSS_GROWTH_BOUND_KB + (256 * 1024 if sanitized_build() else 0)
BATCH_RESPONSE_CAP = 16 * MIB      # ServerLimits.max_batch_response_bytes (docs/api.md)
ALERTS_PER_EXECUTION = 100         # AlertBounds.total (docs/monitoring.md)
KILL_SLACK_S = 2.0

# Every flood names its process (comm) so the test can see whether it is still alive on the host.
NAME = '''
import ctypes
ctypes.CDLL(None).prctl(15, {token!r}.encode(), 0, 0, 0)
'''
FLOODS = {
    "connect": '''
import socket
n = 0
while True:
    s = socket.socket()
    try: s.connect(("127.0.0.1", 6379 + n % 1000))  # many keys: the total bound, not only per key
    except OSError: pass
    s.close()
    n += 1
''',
    "exec": '''
import os
while True:
    try: os.execv("/bin/sh", ["sh", "-c", "true"])
    except OSError: pass
''',
    "unshare": '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
while True: libc.unshare(0x00020000)
''',
}
# A count, not a rate: under CI load a native connect (a seccomp notification answered by the
# daemon) took 2.6 ms, so a 2 s loop made only 755; 2000 attempts (20x the alert cap) or 10 s.
COUNTED_CONNECTS = '''
import socket, time
n = 0
end = time.time() + 10
while n < 2000 and time.time() < end:
    s = socket.socket()
    try: s.connect(("127.0.0.1", 6379 + n % 7))
    except OSError: pass
    s.close()
    n += 1
print(n)
'''
NULS_THEN_FLOOD = '''
import sys, socket
sys.stdout.write("\\0" * 1000000); sys.stdout.flush()
while True:
    s = socket.socket()
    try: s.connect(("127.0.0.1", 6379))
    except OSError: pass
    s.close()
'''


def flood(kind, token):
    return NAME.format(token=token) + FLOODS[kind]


def token():
    return "lsb" + uuid.uuid4().hex[:10]  # comm holds 15 bytes


def alive(tok):
    """Pids of host processes named `tok` (a flood of this test, in any box)."""
    pids = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/comm") as f:
                    if f.read().strip() == tok:
                        pids.append(int(e))
            except OSError:
                pass
    return pids


def attempts(result, rule):
    """Alerts of `rule` in a result, a summary counting for as many as it stands for."""
    return sum(a.get("count", 0) if a.get("kind") == "summary" else 1
               for a in result.get("alerts", []) if a.get("rule") == rule)


class Backend:
    def __init__(self, name, arg):
        self.name, self.arg = name, arg

    def unavailable(self):
        if not os.access(BINARY, os.X_OK):
            return f"{BINARY} not built"
        if self.arg == "native":
            return None if os.geteuid() == 0 else "the native backend needs root here"
        try:
            if subprocess.run(["docker", "version"], capture_output=True, timeout=30).returncode != 0:
                return "no Docker engine answers"
            if subprocess.run(["docker", "image", "inspect", TEST_IMAGE], capture_output=True,
                              timeout=30).returncode != 0:
                return f"the test image {TEST_IMAGE} is missing (scripts/build-test-image.sh)"
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e)
        return None


class Daemon:
    def __init__(self, backend, concurrency=10):
        self.port = free_port()
        self.tmp = tempfile.mkdtemp(prefix="lsb-bounds-")
        self.audit = os.path.join(self.tmp, "audit.jsonl")
        self.logf = open(os.path.join(self.tmp, "serve.log"), "w")
        env = dict(os.environ)
        env.pop("LLM_SANDBOX_TOKENS", None)
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--listen", f"127.0.0.1:{self.port}", "--policies",
             os.path.join(SOURCE_DIR, "policies"), "--images", IMAGES, "--backend", backend.arg,
             "--max-concurrency", str(concurrency), "--queue", "32", "--audit-log", self.audit],
            stdout=self.logf, stderr=subprocess.STDOUT, cwd=SOURCE_DIR, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url("/healthz"), timeout=1).read()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise AssertionError("the daemon did not come up")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def call(self, method, path, data=None, json_body=None, timeout=120):
        """(status, body) of one request, an HTTP error included; raw `data` or a JSON body."""
        headers = {}
        if json_body is not None:
            data, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
        elif data is not None:
            headers["Content-Type"] = "application/octet-stream"
        req = urllib.request.Request(self.url(path), data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def post(self, path, body, timeout=300):
        req = urllib.request.Request(self.url(path), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read()

    def execute(self, code, timeout_s=None):
        body = {"code": code}
        if timeout_s:
            body["timeout"] = timeout_s
        return json.loads(self.post("/v1/execute", body))

    def get_json(self, path):
        with urllib.request.urlopen(self.url(path), timeout=30) as r:
            return json.loads(r.read())

    def stalled(self, method, path, body=None):
        """Sends a request on a socket with a tiny receive buffer and never reads the answer."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", self.port))
        data = json.dumps(body).encode() if body is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
        s.sendall(head.encode() + data)
        return s

    def rss_kb(self):
        return status_kb(self.proc.pid, "VmRSS")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        subprocess.run(["rm", "-rf", self.tmp])


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, status_kb(self.pid, "VmRSS"))
            except OSError:
                return
            self.stop.wait(0.05)


class Bounds:
    backend = None

    @classmethod
    def setUpClass(cls):
        reason = cls.backend.unavailable()
        if reason:
            raise unittest.SkipTest(reason)

    def report(self, text):
        print(f"\n[{self.backend.name}] {text}", file=sys.stderr)

    # bounds.daemon_flood_rss
    def test_ten_alert_floods_leave_the_daemon_rss_bounded(self):
        d = Daemon(self.backend)
        stalled = []
        try:
            for _ in range(3):
                d.execute('print("warm")')
            rss0 = d.rss_kb()
            sampler = RssSampler(d.proc.pid)
            sampler.start()
            # A live-events subscriber and a streaming client that never read.
            stalled.append(d.stalled("GET", "/v1/events"))
            tokens = [token() for _ in range(10)]
            stalled.append(d.stalled("POST", "/v1/execute?stream=true",
                                     {"code": flood("connect", token()), "timeout": 6}))
            results = {}
            kinds = ["connect", "exec", "unshare"]
            threads = [threading.Thread(target=lambda i=i: results.__setitem__(
                i, d.execute(flood(kinds[i % 3], tokens[i]), 6))) for i in range(10)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
            took = time.monotonic() - t0
            time.sleep(1)
            rss1 = d.rss_kb()
            sampler.stop.set()
            sampler.join()
            recent = json.dumps(d.get_json("/v1/executions?limit=1000"))
        finally:
            for s in stalled:
                s.close()
            audit_bytes = os.path.getsize(d.audit) if os.path.exists(d.audit) else 0
            with open(d.audit) as f:
                audit_lines = sum(1 for _ in f)
            d.stop()
        rules = {"connect": "network_attempt", "exec": "denied_exec", "unshare": "escape_syscall"}
        counts = [(kinds[i % 3], attempts(results[i], rules[kinds[i % 3]]), len(results[i]["alerts"]))
                  for i in range(10)]
        self.report(f"10 floods of 6 s in {took:.1f} s, (kind, attempts, alerts) per execution {counts}; "
                    f"daemon RSS {rss0} -> {rss1} kB (peak {sampler.peak} kB, +{sampler.peak - rss0} kB); "
                    f"audit log {audit_bytes} bytes in {audit_lines} lines; /v1/executions {len(recent)} bytes")
        for i in range(10):
            r = results[i]
            rule = rules[kinds[i % 3]]
            self.assertEqual(r["status"], "timeout", r)
            self.assertLessEqual(len(r["alerts"]), ALERTS_PER_EXECUTION + 20, "alerts per execution")
            self.assertTrue(any(a.get("kind") == "summary" and a.get("rule") == rule for a in r["alerts"]),
                            f"no {rule} summary: {r['alerts'][-3:]}")
        self.assertGreater(sum(n for _, n, _ in counts), 10 * ALERTS_PER_EXECUTION * 5, "the floods did not flood")
        self.assertLess(sampler.peak - rss0, RSS_BOUND_KB, "daemon RSS grew past 64 MiB during the floods")
        self.assertLess(rss1 - rss0, RSS_BOUND_KB, "daemon RSS stayed 64 MiB above its start")
        # Audit: at most an execution record and 100 alert records + one summary per rule each.
        self.assertLess(audit_lines, 14 * (1 + ALERTS_PER_EXECUTION + 16))
        self.assertLess(audit_bytes, 14 * 4 * MIB)
        for tok in tokens:
            self.assertEqual(alive(tok), [], "a flood outlived its execution")

    # bounds.alert_count
    def test_the_summary_counts_every_attempt(self):
        d = Daemon(self.backend, concurrency=2)
        try:
            r = d.execute(COUNTED_CONNECTS, timeout_s=20)
            events = d.get_json(f"/v1/executions/{r['execution_id']}")
        finally:
            d.stop()
        self.assertEqual(r["status"], "ok", r)
        made = int(r["stdout"].split()[-1])
        seen = attempts(r, "network_attempt")
        self.report(f"{made} connects made, {seen} accounted for in {len(r['alerts'])} alerts")
        self.assertGreater(made, 5 * ALERTS_PER_EXECUTION, "too few attempts to pass the alert cap")
        self.assertLessEqual(len(r["alerts"]), ALERTS_PER_EXECUTION + 5)
        self.assertEqual(seen, made, "summary count + alerts != attempts")
        self.assertIn("summary", [a.get("kind") for a in events.get("alerts", [])])

    # bounds.session_flood
    def test_a_session_flood_is_bounded_per_execution_and_later_alerts_still_come(self):
        d = Daemon(self.backend, concurrency=2)
        try:
            sid = json.loads(d.post("/v1/sessions", {"language": "python"}))["session_id"]
            first = json.loads(d.post(f"/v1/sessions/{sid}/execute", {"code": COUNTED_CONNECTS}))
            second = json.loads(d.post(f"/v1/sessions/{sid}/execute", {"code": (
                "import socket, time\ntime.sleep(0.3)\ntry: socket.create_connection(('10.9.8.7', 443), 1)\n"
                "except OSError as e: print(type(e).__name__)\n")}))
        finally:
            d.stop()
        made = int(first["stdout"].split()[-1])
        self.report(f"session: {made} connects, {len(first['alerts'])} alerts in the first execution; "
                    f"second: {[a.get('address') for a in second['alerts']]}")
        self.assertGreater(made, 1000)
        self.assertLessEqual(len(first["alerts"]), ALERTS_PER_EXECUTION + 5)
        self.assertTrue(any(a.get("address") == "10.9.8.7:443" for a in second["alerts"]), second["alerts"])

    # bounds.stalled_sse
    def test_a_stream_client_that_stops_reading_does_not_delay_the_kill(self):
        d = Daemon(self.backend, concurrency=2)
        tok = token()
        try:
            s = d.stalled("POST", "/v1/execute?stream=true", {"code": NAME.format(token=tok) + NULS_THEN_FLOOD,
                                                              "timeout": 2})
            t0 = time.monotonic()
            seen = False
            while time.monotonic() - t0 < 20:
                if alive(tok):
                    seen = True
                elif seen:
                    break
                time.sleep(0.05)
            gone_after = time.monotonic() - t0
            time.sleep(1)
            recent = d.get_json("/v1/executions?limit=10")["recent"]
            s.close()
        finally:
            d.stop()
        self.report(f"stalled SSE client: box gone {gone_after:.2f} s after the request (timeout 2 s)")
        self.assertTrue(seen, "the flood never ran")
        self.assertLess(gone_after, 2 + KILL_SLACK_S, "the box outlived its timeout behind a stalled client")
        self.assertTrue(recent and recent[0].get("status") == "timeout", recent[:1])

    # bounds.batch_nul
    def test_a_batch_of_nul_printers_gets_an_answer_under_the_cap(self):
        d = Daemon(self.backend, concurrency=4)
        try:
            code = 'import sys; sys.stdout.write("\\0" * 1000000)'
            raw = d.post("/v1/batch", {"tasks": [{"code": code} for _ in range(20)]})
        finally:
            d.stop()
        body = json.loads(raw)
        self.report(f"batch of 20 x 1 MB of NULs: answer {len(raw)} bytes (cap {BATCH_RESPONSE_CAP}; "
                    f"uncut it would be ~{20 * 6 * 1000000})")
        self.assertLessEqual(len(raw), BATCH_RESPONSE_CAP)
        self.assertEqual(len(body["results"]), 20)
        for r in body["results"]:
            self.assertEqual(r.get("status"), "ok", r.get("error"))
            self.assertTrue(r["truncated"] and r["response_truncated"])
            self.assertGreater(len(r["stdout"]), 10000)

    def cli(self, code, timeout_s, stdout):
        args = [BINARY, "run", "--backend", self.backend.arg, "--policy", SEED_POLICY, "--images", IMAGES,
                "--timeout", str(timeout_s), "-"]
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE, cwd=SOURCE_DIR)
        p.stdin.write(code.encode())
        p.stdin.close()
        return p

    # bounds.cli_flood_rss, bounds.cli_undrained_stdout
    def test_the_cli_stays_bounded_and_its_timeout_holds_with_stdout_undrained(self):
        tok = token()
        # stdout is a pipe nobody reads (`llm-sandbox run | sleep 100`); stderr is read (alerts).
        p = self.cli(NAME.format(token=tok) + 'import sys\nsys.stdout.write("x" * 900000)\nsys.stdout.flush()\n'
                     + FLOODS["connect"], 3, subprocess.PIPE)
        err = []
        reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
        reader.start()
        t0 = time.monotonic()
        seen = False
        peak = 0
        while time.monotonic() - t0 < 30:
            peak = max(peak, status_kb(p.pid, "VmRSS"))  # 0 once it is a zombie
            if alive(tok):
                seen = True
            elif seen:
                break
            time.sleep(0.05)
        gone_after = time.monotonic() - t0
        still_waiting = status_kb(p.pid, "VmRSS") > 0  # for its reader, as any tool does
        hwm = status_kb(p.pid, "VmHWM")  # the CLI's own peak (ru_maxrss would include the box's)
        out = p.stdout.read()             # now the reader drains: the CLI finishes
        _, status, _ = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        reader.join(timeout=30)
        p.stdout.close()
        p.stderr.close()
        stderr = err[0].decode(errors="replace") if err else ""
        self.report(f"CLI: box gone {gone_after:.2f} s after start (timeout 3 s), stdout undrained meanwhile; "
                    f"CLI peak RSS {hwm} kB (sampled {peak} kB), {len(out)} bytes of stdout, "
                    f"{stderr.count('alert [')} alert lines")
        self.assertTrue(seen, "the flood never ran: " + stderr[-2000:])
        self.assertLess(gone_after, 3 + KILL_SLACK_S, "the box outlived its timeout behind an undrained stdout")
        self.assertEqual(p.returncode, 124, stderr[-2000:])
        self.assertEqual(len(out), 900000)
        self.assertTrue(still_waiting, "the CLI ended before its stdout was drained")
        self.assertGreater(hwm, 0)
        self.assertLess(hwm, RSS_BOUND_KB, "CLI peak RSS")
        self.assertLessEqual(stderr.count("alert [network_attempt]"), ALERTS_PER_EXECUTION + 2)
        self.assertRegex(stderr, r"alert \[network_attempt\] \d+ more network_attempt alerts")


class NativeBounds(Bounds, unittest.TestCase):
    backend = Backend("native", "native")


class DockerBounds(Bounds, unittest.TestCase):
    backend = Backend("docker/runc", "docker")


if __name__ == "__main__":
    unittest.main()
