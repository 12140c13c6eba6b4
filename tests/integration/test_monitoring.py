"""Monitoring on the real daemon (docs/monitoring.md), on the backend in $LLM_SANDBOX_BACKEND
(CTest: integration_monitoring on native, integration_monitoring_docker on Docker): each built-in
alert rule triggered by a real program in a real box, seen in the result, the audit log, the live
event stream and a signed webhook; live usage samples; trace mode; `llm-sandbox logs`. Backend-
independent daemon behaviour (webhook retries, the audit log's durability when the daemon is
SIGKILLed, rotation) runs on native only."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from harness import BINARY
from monitoring_harness import (BACKEND, SECRET, Daemon, EventReader, WebhookReceiver, policy_dir, read_audit,
                                request, skip_unless_monitoring_suite, skip_unless_native)

# rule -> (program, expected status, fields the alert must carry)
RULES = {
    "network_attempt": ("import socket\ns = socket.socket()\ntry:\n    s.connect(('127.0.0.1', 6379))\n"
                        "except OSError as e:\n    print('refused', e.errno)\n",
                        "ok", {"address": "127.0.0.1:6379", "severity": "critical", "decision": "denied"}),
    "denied_exec": ("import os\ntry:\n    os.execv('/bin/sh', ['sh', '-c', 'echo hi'])\n"
                    "except OSError as e:\n    print('denied', e.errno)\n",
                    "ok", {"path": "/bin/sh", "argv": ["sh", "-c", "echo hi"], "severity": "warning"}),
    "escape_syscall": ("import os\ntry:\n    os.chroot('/tmp')\nexcept OSError as e:\n    print('refused', e.errno)\n",
                       "ok", {"severity": "critical", "decision": "denied"}),
    "oom_kill": ("chunks = []\nwhile True:\n    chunks.append(bytearray(8 << 20))\n", "oom", {"severity": "critical"}),
    "pids_limit": ("import os, time\nkids = []\nfor i in range(40):\n    try:\n        pid = os.fork()\n"
                   "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(1)\n        os._exit(0)\n"
                   "    kids.append(pid)\nfor k in kids:\n    os.waitpid(k, 0)\nprint('forked', len(kids))\n",
                   "ok", {"severity": "critical"}),
    "timeout": ("import time\ntime.sleep(60)\n", "timeout", {"severity": "warning"}),
    "output_flood": ("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n", "output_limit", {"severity": "warning"}),
}


class MonitoringAlerts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_monitoring_suite()
        cls.tmp = tempfile.mkdtemp(prefix="lsb-mon-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.audit = os.path.join(cls.tmp, "audit.log")
        secret_file = os.path.join(cls.tmp, "secret")
        with open(secret_file, "w") as f:
            f.write(SECRET + "\n")
        cls.hook = WebhookReceiver()
        cls.addClassCleanup(cls.hook.close)
        cls.daemon = Daemon("--audit-log", cls.audit, "--webhook", cls.hook.url, "--webhook-secret-file",
                            secret_file, "--webhook-min-severity", "info", "--usage-interval", "200",
                            "--default-policy", "mon", policies=policy_dir(cls.addClassCleanup))
        cls.addClassCleanup(cls.daemon.close)
        cls.events = EventReader(cls.daemon.port)

    @classmethod
    def tearDownClass(cls):
        cls.events.close()
        cls.daemon.stop()

    def execute(self, code, policy="mon", **extra):
        r = request(self.daemon.base, "POST", "/v1/execute", {"code": code, "policy": policy, **extra})
        self.assertEqual(r.status, 200, r.body)
        res = r.json()
        self.assertEqual(res["backend"], BACKEND, "the daemon did not run the backend under test")
        return res

    def check_rule(self, rule):
        code, status, fields = RULES[rule]
        res = self.execute(code)
        self.assertEqual(res["status"], status, res)
        alerts = [a for a in res["alerts"] if a["rule"] == rule]
        self.assertTrue(alerts, f"no {rule} alert in {res['alerts']}")
        alert = alerts[0]
        for k, v in fields.items():
            self.assertEqual(alert[k], v, alert)
        xid = res["execution_id"]
        # The live stream
        ev = self.events.wait_for("alert", lambda d: d["execution_id"] == xid and d["rule"] == rule)
        for k, v in fields.items():
            self.assertEqual(ev[k], v, ev)
        # The signed webhook
        hook = self.hook.wait_for(lambda b: b["alert"]["execution_id"] == xid and b["alert"]["rule"] == rule)
        self.assertEqual(hook["headers"]["X-LLM-Sandbox-Event"], "alert")
        for k, v in fields.items():
            self.assertEqual(hook["body"]["alert"][k], v)
        # The audit log: durable before the answer, so already there.
        records = read_audit(self.audit)
        execs = [r for r in records if r["type"] == "execution" and r["execution_id"] == xid]
        self.assertEqual(len(execs), 1, records[-3:])
        self.assertEqual(execs[0]["status"], status)
        self.assertEqual(execs[0]["policy"], "mon")
        self.assertEqual(len(execs[0]["code_sha256"]), 64)
        self.assertEqual(execs[0]["code_bytes"], len(code.encode()))
        self.assertIn(rule, [a["rule"] for a in execs[0]["alerts"]])
        self.assertIn("duration_ms", execs[0]["usage"])
        recs = [r for r in records if r["type"] == "alert" and r["execution_id"] == xid and r["rule"] == rule]
        self.assertTrue(recs, f"no alert record for {rule}")
        for k, v in fields.items():
            self.assertEqual(recs[0][k], v)
        return res

    def test_network_attempt(self):
        res = self.check_rule("network_attempt")
        self.assertIn("refused", res["stdout"])

    def test_denied_exec(self):
        self.check_rule("denied_exec")

    def test_escape_syscall(self):
        res = self.check_rule("escape_syscall")
        alert = [a for a in res["alerts"] if a["rule"] == "escape_syscall"][0]
        self.assertIn("chroot", alert["message"])
        self.assertIn("refused 1", res["stdout"])  # EPERM, as the kernel filter says

    def test_oom_kill(self):
        self.check_rule("oom_kill")

    def test_pids_limit(self):
        self.check_rule("pids_limit")

    def test_timeout(self):
        self.check_rule("timeout")

    def test_output_flood(self):
        self.check_rule("output_flood")

    def test_usage_samples_on_the_streams(self):
        code = "import time\nx = bytearray(20 << 20)\nend = time.time() + 1.5\nwhile time.time() < end: pass\nprint('done')\n"
        r = request(self.daemon.base, "POST", "/v1/execute?stream=true", {"code": code})
        self.assertEqual(r.status, 200)
        text = r.body.decode()
        usage = [json.loads(line[6:]) for block in text.split("\n\n") if block.startswith("event: usage")
                 for line in block.split("\n") if line.startswith("data: ")]
        self.assertGreaterEqual(len(usage), 2, text[:500])
        self.assertTrue(any((u["memory_bytes"] or 0) >= 20 << 20 for u in usage), usage)
        self.assertTrue(any((u["cpu_ms"] or 0) > 0 for u in usage), usage)
        ev = self.events.wait_for("usage", lambda d: (d.get("memory_bytes") or 0) >= 20 << 20)
        self.assertEqual(ev["policy"], "mon")

    def test_lifecycle_events_and_executions_view(self):
        res = self.execute("print('hello')")
        xid = res["execution_id"]
        self.events.wait_for("execution_started", lambda d: d["execution_id"] == xid)
        fin = self.events.wait_for("execution_finished", lambda d: d["execution_id"] == xid)
        self.assertEqual(fin["status"], "ok")
        view = request(self.daemon.base, "GET", "/v1/executions/" + xid).json()
        self.assertEqual(view["stdout"], "hello\n")
        listing = request(self.daemon.base, "GET", "/v1/executions").json()
        self.assertIn(xid, [e["execution_id"] for e in listing["recent"]])
        s = request(self.daemon.base, "POST", "/v1/sessions", {"policy": "mon"})
        self.assertEqual(s.status, 201, s.body)
        sid = s.json()["session_id"]
        self.events.wait_for("session_created", lambda d: d["session_id"] == sid)
        r = request(self.daemon.base, "POST", f"/v1/sessions/{sid}/execute", {"code": "print(6*7)"}).json()
        rec = [x for x in read_audit(self.audit) if x.get("execution_id") == r["execution_id"]]
        self.assertEqual(rec[0]["kind"], "session")
        self.assertEqual(rec[0]["session_id"], sid)
        request(self.daemon.base, "DELETE", f"/v1/sessions/{sid}")
        self.events.wait_for("session_closed", lambda d: d["session_id"] == sid)

    def test_trace_mode_records_exec_connect_and_open(self):
        code = ("import socket, os\nopen('/etc/hostname').read()\ns = socket.socket()\n"
                "try: s.connect(('127.0.0.1', 6379))\nexcept OSError: pass\n")
        res = self.execute(code, policy="mon-trace")
        xid = res["execution_id"]
        rec = [r for r in read_audit(self.audit) if r["type"] == "execution" and r["execution_id"] == xid][0]
        kinds = {t["kind"] for t in rec["trace"]}
        self.assertIn("execve", kinds)
        # A connect with the network off is an alert (network_attempt), not a trace record.
        self.assertIn("network_attempt", [a["rule"] for a in rec["alerts"]])
        opens = [t for t in rec["trace"] if t["kind"] in ("open", "openat", "openat2")]
        self.assertIn("/etc/hostname", [t["path"] for t in opens])
        view = request(self.daemon.base, "GET", "/v1/executions/" + xid).json()
        self.assertTrue(view["trace"])

    def test_logs_command_filters(self):
        res = self.execute(RULES["network_attempt"][0])
        xid = res["execution_id"]
        out = subprocess.run([BINARY, "logs", "--file", self.audit, "--execution", xid, "--json"],
                             capture_output=True, text=True, check=True).stdout
        recs = [json.loads(x) for x in out.splitlines()]
        self.assertEqual({r["type"] for r in recs}, {"execution", "alert"})
        out = subprocess.run([BINARY, "logs", "--file", self.audit, "--rule", "network_attempt", "--type", "alert",
                              "--since", "10m", "--json"], capture_output=True, text=True, check=True).stdout
        self.assertIn(xid, [json.loads(x)["execution_id"] for x in out.splitlines()])
        out = subprocess.run([BINARY, "logs", "--file", self.audit, "--status", "timeout", "--json"],
                             capture_output=True, text=True, check=True).stdout
        self.assertTrue(all(json.loads(x)["status"] == "timeout" for x in out.splitlines()))
        # Follow: a record appended later shows up.
        f = subprocess.Popen([BINARY, "logs", "--file", self.audit, "-f", "--policy", "mon", "--type", "execution",
                              "--json", "--since", "1s"], stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)
            later = self.execute("print('later')")["execution_id"]
            seen = []
            t = threading.Timer(20, f.kill)
            t.start()
            for line in f.stdout:
                seen.append(json.loads(line)["execution_id"])
                if later in seen:
                    break
            t.cancel()
            self.assertIn(later, seen)
        finally:
            f.kill()
            f.wait()

    def test_metrics_move(self):
        before = request(self.daemon.base, "GET", "/metrics", raw=True).body.decode()
        self.execute(RULES["denied_exec"][0])
        after = request(self.daemon.base, "GET", "/metrics", raw=True).body.decode()

        def value(text, prefix):
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))
        self.assertEqual(value(after, 'lsb_alerts_total{rule="denied_exec"') -
                         value(before, 'lsb_alerts_total{rule="denied_exec"'), 1)
        self.assertGreater(value(after, 'lsb_executions_total{status="ok",policy="mon"}'),
                           value(before, 'lsb_executions_total{status="ok",policy="mon"}'))


class WebhookRetry(unittest.TestCase):
    def setUp(self):
        skip_unless_monitoring_suite()
        skip_unless_native("webhook delivery")

    def test_retried_with_backoff_and_never_blocking(self):
        hook = WebhookReceiver(fail_first=2)  # two 503s, then accepted
        self.addCleanup(hook.close)
        tmp = tempfile.mkdtemp(prefix="lsb-mon-secret-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "s"), "w") as f:
            f.write(SECRET)
        d = Daemon("--webhook", hook.url, "--webhook-secret-file", os.path.join(tmp, "s"),
                   policies=policy_dir(self.addCleanup))
        self.addCleanup(d.close)
        try:
            start = time.time()
            res = request(d.base, "POST", "/v1/execute", {"code": RULES["network_attempt"][0], "policy": "mon"}).json()
            self.assertLess(time.time() - start, 5)  # the execution did not wait for the receiver
            got = hook.wait_for(lambda b: b["alert"]["execution_id"] == res["execution_id"])
            self.assertEqual(got["body"]["alert"]["rule"], "network_attempt")
            # The sender counts the delivery after the receiver answered: poll briefly for it.
            deadline = time.time() + 10
            while True:
                m = request(d.base, "GET", "/metrics", raw=True).body.decode()
                if 'lsb_webhook_deliveries_total{outcome="delivered"} 1' in m or time.time() > deadline:
                    break
                time.sleep(0.05)
            self.assertIn('lsb_webhook_retries_total 2', m)
            self.assertIn('lsb_webhook_deliveries_total{outcome="delivered"} 1', m)
        finally:
            d.stop()


class AuditDurability(unittest.TestCase):
    def setUp(self):
        skip_unless_monitoring_suite()
        skip_unless_native("the audit log's writer")

    def test_every_acknowledged_execution_survives_sigkill(self):
        tmp = tempfile.mkdtemp(prefix="lsb-audit-")
        self.addCleanup(shutil.rmtree, tmp, True)
        audit = os.path.join(tmp, "audit.log")
        d = Daemon("--audit-log", audit, "--max-concurrency", "4", policies=policy_dir(self.addCleanup))
        self.addCleanup(d.close)
        acked, lock, stop = [], threading.Lock(), threading.Event()

        def client():
            while not stop.is_set():
                try:
                    r = request(d.base, "POST", "/v1/execute", {"code": "print(1)", "policy": "mon"}, timeout=30)
                except OSError:
                    return
                if r.status == 200:
                    with lock:
                        acked.append(r.json()["execution_id"])
        threads = [threading.Thread(target=client) for _ in range(6)]
        for t in threads:
            t.start()
        deadline = time.time() + 30
        while time.time() < deadline and len(acked) < 25:
            time.sleep(0.1)
        d.proc.send_signal(signal.SIGKILL)  # mid-flight: executions running, records being written
        stop.set()
        for t in threads:
            t.join(60)
        d.proc.wait()
        d.close()
        self.assertGreaterEqual(len(acked), 25)
        records = read_audit(audit)  # asserts: every line whole JSON, no torn last line
        logged = {r["execution_id"] for r in records if r["type"] == "execution"}
        missing = [x for x in acked if x not in logged]
        self.assertEqual(missing, [], f"{len(missing)} acknowledged executions not in the audit log")

    def test_rotation_by_size(self):
        tmp = tempfile.mkdtemp(prefix="lsb-audit-")
        self.addCleanup(shutil.rmtree, tmp, True)
        audit = os.path.join(tmp, "audit.log")
        d = Daemon("--audit-log", audit, "--audit-max-size", "2k", "--audit-keep", "2",
                   policies=policy_dir(self.addCleanup))
        self.addCleanup(d.close)
        try:
            ids = [request(d.base, "POST", "/v1/execute", {"code": "print(1)", "policy": "mon"}).json()["execution_id"]
                   for _ in range(8)]
        finally:
            d.stop()
        self.assertTrue(os.path.exists(audit + ".1"))
        self.assertFalse(os.path.exists(audit + ".3"))
        for fn in (audit, audit + ".1"):
            self.assertLessEqual(os.path.getsize(fn), 2048 + 1024)
        out = subprocess.run([BINARY, "logs", "--file", audit, "--json"], capture_output=True, text=True,
                             check=True).stdout
        self.assertEqual([json.loads(x)["execution_id"] for x in out.splitlines()], ids[-len(out.splitlines()):])


if __name__ == "__main__":
    unittest.main()
