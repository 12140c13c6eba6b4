"""Session reset and snapshot (docs/api.md "Reset and snapshot") through the real `llm-sandbox
serve` on the native backend: after a reset no global, file or process of the episode remains
while the setup's imports and the files from before the snapshot are there; a snapshot of a busy
session is a conflict (a reset preempts: test_daemon_session_reset_ipc.py); another token's session is 404; a session whose interpreter cannot be forked any more is
reset into a new box; setup errors are the caller's (400)."""
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from daemon_harness import POLICY_DIR, Daemon, OpenApi, request, skip_unless_daemon_suite

ALICE, BOB = "alice-reset-token-0123456789", "bob-reset-token-9876543210"
SETUP = "import json, decimal, asyncio, email, http.client, xml.dom.minidom, sqlite3\nBASE = 7"

# What the episode leaves behind: globals, a changed and a new file, a directory, a symlink, a
# detached grandchild (setsid + double fork, so it is nobody's child but the zygote's) and a plain
# fork that keeps writing a file.
EPISODE = r"""
import os, subprocess, sys, time
episode_var = 1
open('/tmp/pre.txt', 'w').write('changed by the episode')
open('/tmp/new.txt', 'w').write('new')
os.makedirs('/tmp/newdir/sub', exist_ok=True)
open('/tmp/newdir/sub/f', 'w').write('x')
os.symlink('/etc/passwd', '/tmp/link')
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)  # lsbresetmarker'],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            open('/tmp/writer.txt', 'w').write(str(time.time()))
            time.sleep(0.01)
    os._exit(0)
time.sleep(0.3)
print('started')
"""

CHECK = r"""
import os, sys
procs = []
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            procs.append(open('/proc/%s/cmdline' % p, 'rb').read().replace(b'\0', b' ').decode())
        except OSError:
            pass
print(sorted(k for k in ('episode_var', 'snap_var', 'BASE') if k in globals()))
print('decimal' in sys.modules, 'sqlite3' in sys.modules)
print(sorted(os.listdir('/tmp')))
print(open('/tmp/pre.txt').read() if os.path.exists('/tmp/pre.txt') else '-')
print(sum('lsbresetmarker' in c for c in procs))
"""


def sleepers():
    """Host-side: processes of any box still running the episode's detached sleeper."""
    out = subprocess.run(["pgrep", "-f", "lsbresetmarker"], capture_output=True, text=True).stdout
    return [p for p in out.split() if p]


class SessionResetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.tmp = tempfile.mkdtemp(prefix="lsb-reset-")
        cls.policies = os.path.join(cls.tmp, "policies")
        shutil.copytree(POLICY_DIR, cls.policies)
        with open(os.path.join(POLICY_DIR, "code-sandbox.yaml"), encoding="utf-8") as f:
            text = f.read().replace("name: code-sandbox", "name: warm-python")
        with open(os.path.join(cls.policies, "warm-python.yaml"), "w", encoding="utf-8") as f:
            f.write(text + '\nsession:\n  setup: "import decimal\\nPOLICY_WARM = 1"\n')
        cls.d = Daemon("--max-concurrency", "4", policies=cls.policies,
                       env={"LLM_SANDBOX_TOKENS": f"{ALICE},{BOB}"})
        cls.addClassCleanup(cls.d.close)
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def call(self, method, path, template=None, body=None, token=ALICE, **kw):
        r = request(self.d.base, method, path, body=body, token=token, **kw)
        if template and r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def new_session(self, status=201, **body):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", body)
        self.assertEqual(r.status, status, r.body)
        if status == 201:
            self.addCleanup(self.call, "DELETE", f"/v1/sessions/{r.json()['session_id']}")
        return r.json()

    def run_in(self, sid, code):
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute", {"code": code})
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def reset(self, sid, status=200):
        r = self.call("POST", f"/v1/sessions/{sid}/reset", "/v1/sessions/{id}/reset")
        self.assertEqual(r.status, status, r.body)
        return r.json()

    def snapshot(self, sid, status=200):
        r = self.call("POST", f"/v1/sessions/{sid}/snapshot", "/v1/sessions/{id}/snapshot")
        self.assertEqual(r.status, status, r.body)
        return r.json()

    def check(self, sid):
        res = self.run_in(sid, CHECK)
        self.assertEqual(res["status"], "ok", res)
        return res["stdout"].splitlines()

    def test_reset_leaves_no_global_file_or_process_of_the_episode(self):
        s = self.new_session(setup=SETUP)
        sid = s["session_id"]
        self.assertIsInstance(s["setup_ms"], int)
        self.run_in(sid, "snap_var = 2\nopen('/tmp/pre.txt', 'w').write('before the snapshot')")
        self.assertEqual(self.snapshot(sid)["snapshots"], 1)
        for episode in range(2):
            res = self.run_in(sid, EPISODE)
            self.assertEqual(res["stdout"], "started\n", res)
            self.assertTrue(sleepers(), "the episode's background process did not start")
            out = self.reset(sid)
            self.assertEqual(out["reset"]["mode"], "interpreter", out)
            self.assertEqual(out["resets"], episode + 1)
            self.assertEqual(sleepers(), [], "a process of the episode outlived the reset")
            time.sleep(0.1)  # the forked writer, were it alive, would recreate its file by now
            self.assertEqual(self.check(sid), ["['BASE', 'snap_var']", "True True", "['pre.txt']",
                                               "before the snapshot", "0"])

    def test_reset_without_a_snapshot_returns_to_the_creation_state(self):
        sid = self.new_session(setup=SETUP)["session_id"]
        self.run_in(sid, EPISODE)
        self.assertEqual(self.reset(sid)["reset"]["mode"], "interpreter")
        self.assertEqual(self.check(sid), ["['BASE']", "True True", "[]", "-", "0"])

    def test_snapshot_of_a_busy_session_is_a_conflict(self):
        # A reset preempts the execution instead (test_daemon_session_reset_ipc.py).
        sid = self.new_session()["session_id"]
        t = threading.Thread(target=self.run_in, args=(sid, "import time\ntime.sleep(1.5)"))
        t.start()
        time.sleep(0.5)
        r2 = self.call("POST", f"/v1/sessions/{sid}/snapshot", "/v1/sessions/{id}/snapshot")
        t.join()
        self.assertEqual((r2.status, r2.json()["error"]["code"]), (409, "conflict"))

    def test_reset_and_snapshot_of_another_tokens_session_are_not_found(self):
        sid = self.new_session()["session_id"]
        for op in ("reset", "snapshot"):
            r = self.call("POST", f"/v1/sessions/{sid}/{op}", f"/v1/sessions/{{id}}/{op}", token=BOB)
            self.assertEqual((r.status, r.json()["error"]["code"]), (404, "not_found"), r.body)
            self.assertNotIn(sid, r.body.decode().replace(f"no session {sid}", ""))
        self.assertEqual(self.call("GET", f"/v1/sessions/{sid}").json()["resets"], 0)

    def test_reset_after_the_interpreter_ended_uses_a_new_box(self):
        sid = self.new_session(setup=SETUP)["session_id"]
        self.run_in(sid, "open('/tmp/f', 'w').write('x')\nsnap_var = 1")
        self.snapshot(sid)
        res = self.run_in(sid, "import os\nos._exit(3)")
        self.assertIn("interpreter_restarted", [a["rule"] for a in res["alerts"]])
        out = self.reset(sid)
        self.assertEqual(out["reset"]["mode"], "new_box", out)
        self.assertTrue(out["reset"]["snapshot_lost"])
        self.assertIn("ended", out["reset"]["why"])
        # A new box is the creation state: the setup ran again, the snapshot's file is gone.
        self.assertEqual(self.check(sid), ["['BASE']", "True True", "[]", "-", "0"])
        self.assertEqual(self.reset(sid)["reset"]["mode"], "interpreter")

    def test_non_python_session_reset_uses_a_new_box_and_cannot_snapshot(self):
        sid = self.new_session(policy="bash-tools", language="bash")["session_id"]
        r = self.call("POST", f"/v1/sessions/{sid}/execute", body={"code": "echo hi > /tmp/h"})
        self.assertEqual(r.status, 200, r.body)
        out = self.reset(sid)
        self.assertEqual(out["reset"]["mode"], "new_box")
        r = self.call("POST", f"/v1/sessions/{sid}/execute", body={"code": "ls /tmp; echo end"})
        self.assertEqual(r.json()["stdout"], "end\n")
        err = self.snapshot(sid, status=400)["error"]
        self.assertIn("python", err["message"])

    def test_setup_errors_are_bad_requests(self):
        err = self.new_session(status=400, setup="1/0")["error"]
        self.assertIn("ZeroDivisionError", err["message"])
        err = self.new_session(status=400, setup="import os", policy="bash-tools", language="bash")["error"]
        self.assertIn("setup", err["message"])
        err = self.new_session(status=400, setup=5)["error"]
        self.assertIn("setup", err["message"])
        r = self.call("POST", "/v1/sessions/ses-0000/reset", body={"bogus": 1})
        self.assertEqual(r.status, 404)

    def test_reset_takes_no_body(self):
        sid = self.new_session()["session_id"]
        r = self.call("POST", f"/v1/sessions/{sid}/reset", "/v1/sessions/{id}/reset", {"hard": True})
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, "bad_request"))
        self.assertIn("hard", r.json()["error"]["message"])

    def test_policy_session_setup_runs_before_the_requests_and_survives_reset(self):
        sid = self.new_session(policy="warm-python", setup="REQ = POLICY_WARM + 1")["session_id"]
        self.run_in(sid, "del POLICY_WARM, REQ")
        self.reset(sid)
        res = self.run_in(sid, "import sys\nprint(POLICY_WARM, REQ, 'decimal' in sys.modules)")
        self.assertEqual(res["stdout"], "1 2 True\n", res)

    def test_snapshots_are_bounded(self):
        sid = self.new_session()["session_id"]
        for n in range(16):
            self.run_in(sid, f"v{n} = {n}")
            self.snapshot(sid)
        err = self.snapshot(sid, status=400)["error"]
        self.assertIn("16", err["message"])
        self.run_in(sid, "late = 1")
        self.assertEqual(self.reset(sid)["reset"]["mode"], "interpreter")
        res = self.run_in(sid, "print(v15, 'late' in globals())")
        self.assertEqual(res["stdout"], "15 False\n")


if __name__ == "__main__":
    unittest.main()
