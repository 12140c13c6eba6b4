"""The warm session pool (docs/api.md "Warm session pool") through the real `llm-sandbox serve
--session-pool 2` on the native backend: the first session of a (policy, setup) key starts cold,
later ones take a box whose setup already ran (`warm`: true, the setup's state there), a warm box
is never handed out twice (nothing of one session is in the next), a warm session resets to its
setup, a fork's children come warm and still do not see each other's writes or processes, the
counts are in /readyz and /metrics, a setup that fails is not pooled, and the flag is bounded."""
import json
import subprocess
import time
import unittest

from daemon_harness import BINARY, Daemon, request, skip_unless_daemon_suite

SETUP = "import decimal, json\nWARM = 'set up'"

LOOK = r"""
import json, os, sys
procs = 0
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            procs += b'lsbpoolmarker' in open('/proc/%s/cmdline' % p, 'rb').read()
        except OSError:
            pass
print(json.dumps({'WARM': globals().get('WARM'), 'decimal': 'decimal' in sys.modules, 'x': globals().get('x'),
                  'files': sorted(n for n in os.listdir('/tmp') if not n.startswith('.')), 'procs': procs}))
"""
DIRTY = ("x = 1\nopen('/tmp/dirty.txt', 'w').write('d')\nimport subprocess, sys\n"
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)  # lsbpoolmarker'], "
         "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)")


class SessionPoolTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--session-pool", "2", "--max-concurrency", "4")
        cls.addClassCleanup(cls.d.close)

    def call(self, method, path, body=None):
        return request(self.d.base, method, path, body)

    def create(self, setup=SETUP, status=201):
        r = self.call("POST", "/v1/sessions", {"language": "python", "setup": setup})
        self.assertEqual(r.status, status, r.body[:1000])
        if status == 201:
            self.addCleanup(self.call, "DELETE", f"/v1/sessions/{r.json()['session_id']}")
        return r.json()

    def look(self, sid, code=LOOK):
        r = self.call("POST", f"/v1/sessions/{sid}/execute", {"code": code})
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.json()["exit_code"], 0, r.json())
        return json.loads(r.json()["stdout"].strip().splitlines()[-1]) if code is LOOK else r.json()

    def pool(self):
        return self.call("GET", "/readyz").json()["session_pool"]

    def wait_full(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.pool()["full"]:
                return
            time.sleep(0.2)
        self.fail(f"the pool did not fill: {self.pool()} {self.d.log()[-2000:]}")

    def test_warm_sessions_start_set_up_and_share_nothing(self):
        before = self.pool()
        setup = SETUP + "\nKEY = 'warm-sessions'"
        cold = self.create(setup)
        self.assertFalse(cold["warm"], "the first session of a key is started on the request's path")
        self.wait_full()
        first = self.create(setup)
        self.assertTrue(first["warm"], first)
        self.assertIsInstance(first["setup_ms"], int)
        got = self.look(first["session_id"])
        self.assertEqual((got["WARM"], got["decimal"], got["files"], got["procs"]), ("set up", True, [], 0), got)
        self.look(first["session_id"], DIRTY)
        second = self.create(setup)
        self.assertTrue(second["warm"], second)
        got = self.look(second["session_id"])
        self.assertEqual((got["x"], got["files"], got["procs"]), (None, [], 0), "a warm box is handed out once")
        # A warm session resets to its setup, by the zygote the pool started.
        r = self.call("POST", f"/v1/sessions/{first['session_id']}/reset")
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.json()["reset"]["mode"], "interpreter", r.json())
        got = self.look(first["session_id"])
        self.assertEqual((got["WARM"], got["x"], got["files"], got["procs"]), ("set up", None, [], 0), got)
        after = self.pool()
        self.assertGreaterEqual(after["hits"] - before["hits"], 2, after)
        self.assertGreaterEqual(after["misses"] - before["misses"], 1, after)
        metrics = self.call("GET", "/metrics").body.decode()
        self.assertIn("lsb_session_pool_hits_total", metrics)

    def test_fork_children_come_warm_and_stay_apart(self):
        setup = SETUP + "\nKEY = 'fork'"
        parent = self.create(setup)["session_id"]
        self.look(parent, "x = 41\nopen('/tmp/a.txt', 'w').write('parent')")
        self.wait_full()
        r = self.call("POST", f"/v1/sessions/{parent}/fork", {"count": 2})
        self.assertEqual(r.status, 201, r.body[:1000])
        kids = [c["session_id"] for c in r.json()["sessions"]]
        for k in kids:
            self.addCleanup(self.call, "DELETE", f"/v1/sessions/{k}")
        self.assertTrue(all(c["warm"] for c in r.json()["sessions"]), r.json())
        self.assertEqual(r.json()["fork"]["warm_children"], 2, r.json()["fork"])
        for k in kids:
            got = self.look(k)
            self.assertEqual((got["x"], got["WARM"], got["files"], got["procs"]), (41, "set up", ["a.txt"], 0), got)
        self.look(kids[0], DIRTY)
        got = self.look(kids[1])
        self.assertEqual((got["x"], got["files"], got["procs"]), (41, ["a.txt"], 0), "a sibling's write or process")
        got = self.look(kids[0])
        self.assertEqual((got["x"], got["files"], got["procs"]), (1, ["a.txt", "dirty.txt"], 1), got)

    def test_a_failing_setup_is_not_pooled(self):
        bad = "raise SystemExit('setup says no')  # pool-fail"
        r = self.create(bad, status=400)
        self.assertIn("setup", json.dumps(r))
        self.wait_full()  # the refill tried the key and failed: it is not retried for a while
        before = self.pool()
        r = self.create(bad, status=400)
        self.assertIn("setup says no", json.dumps(r))
        after = self.pool()
        self.assertEqual((after["hits"], after["misses"]), (before["hits"], before["misses"] + 1),
                         "no box of a failing setup is handed out")

    def test_the_flag_is_bounded(self):
        p = subprocess.run([BINARY, "serve", "--listen", "127.0.0.1:0", "--session-pool", "17"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--session-pool wants a count from 0 to 16", p.stderr + p.stdout)


if __name__ == "__main__":
    unittest.main()
