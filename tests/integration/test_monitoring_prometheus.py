"""GET /metrics checked by Debian's `promtool check metrics` and scraped by a real Prometheus
(Debian's `prometheus`, on a free loopback port with a temporary config and storage, scraping every
second): the counters move as executions run."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from daemon_harness import free_port
from monitoring_harness import Daemon, policy_dir, request, skip_unless_monitoring_suite


def ensure_prometheus():
    """Installs Debian's prometheus (prometheus and promtool) when missing, idempotently; as root a
    failed install fails the suite (CI starts from a fresh machine), without root the suite is
    skipped."""
    def present():
        return bool(shutil.which("prometheus") and shutil.which("promtool"))
    if present():
        return True
    if os.getuid() != 0:
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        # A fresh machine has no (or stale) package lists.
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        subprocess.run(install, env=env, capture_output=True)
    if not present():
        raise RuntimeError("Debian's prometheus package could not be installed (apt-get install prometheus)")
    return True


class Prometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_monitoring_suite()
        if not ensure_prometheus():
            raise unittest.SkipTest("Debian's prometheus package is not installed and this is not root")
        cls.daemon = Daemon(policies=policy_dir(cls.addClassCleanup))
        cls.addClassCleanup(cls.daemon.close)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def run_some(self, n):
        for _ in range(n):
            r = request(self.daemon.base, "POST", "/v1/execute", {"code": "print(1)", "policy": "mon"})
            self.assertEqual(r.status, 200, r.body)

    def test_promtool_accepts_the_exposition(self):
        self.run_some(2)
        request(self.daemon.base, "POST", "/v1/execute",
                {"code": "import os\ntry: os.execv('/bin/sh', ['sh'])\nexcept OSError: pass\n", "policy": "mon"})
        r = request(self.daemon.base, "GET", "/metrics", raw=True)
        self.assertEqual(r.status, 200)
        self.assertTrue(r.headers.get("Content-Type", r.headers.get("content-type", "")).startswith("text/plain"))
        text = r.body.decode()
        for name in ("lsb_executions_total", "lsb_execution_duration_seconds_bucket", "lsb_alerts_total",
                     "lsb_queue_depth", "lsb_executor_workers", "lsb_sessions_active", "lsb_boxes_live"):
            self.assertIn(name, text)
        p = subprocess.run(["promtool", "check", "metrics"], input=r.body, capture_output=True)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())

    def test_a_real_prometheus_scrapes_and_sees_counters_move(self):
        tmp = tempfile.mkdtemp(prefix="lsb-prom-")
        self.addCleanup(shutil.rmtree, tmp, True)
        port = free_port()
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                    f"  - job_name: llm-sandbox\n    static_configs:\n      - targets: ['127.0.0.1:{self.daemon.port}']\n")
        prom = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/data",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))
        base = f"http://127.0.0.1:{port}"

        def query(q):
            url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
            with urllib.request.urlopen(url, timeout=5) as r:
                d = json.load(r)
            res = d["data"]["result"]
            return float(res[0]["value"][1]) if res else None

        def wait_value(q, pred, timeout=40):
            deadline = time.time() + timeout
            last = None
            while time.time() < deadline:
                try:
                    last = query(q)
                    if last is not None and pred(last):
                        return last
                except OSError:
                    pass
                time.sleep(0.5)
            raise AssertionError(f"{q}: last value {last}")
        try:
            q = 'sum(lsb_executions_total{policy="mon",status="ok"})'
            wait_value('up{job="llm-sandbox"}', lambda v: v == 1)
            before = wait_value(q + " or vector(0)", lambda v: True)
            self.run_some(3)
            wait_value(q, lambda v: v >= before + 3)
            wait_value('sum(lsb_execution_duration_seconds_count{policy="mon"})', lambda v: v >= 3)
        finally:
            prom.terminate()
            prom.wait(20)


if __name__ == "__main__":
    unittest.main()
