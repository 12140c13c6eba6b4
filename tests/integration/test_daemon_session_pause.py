"""Pause and resume (docs/api.md "Pause and resume") through the real `llm-sandbox serve`: a
paused session's box is gone and its record is on disk (mode 0700); a NEW daemon process with the
same --paused-dir resumes it with the same id, its variables and files intact and none of its
processes; another token's resume is 404; hostile ids never become paths; with --paused-dir none
both routes answer 501 naming why. Bounded (issue 32, class 4): one token's share of the paused
records leaves room for another's, a record expires (at once, and when a restart finds it), its
owner deletes it (another token gets 404), and a record past the byte bound is refused."""
import json
import os
import shutil
import stat
import tempfile
import time
import unittest

from daemon_harness import Daemon, request, skip_unless_daemon_suite

ALICE, BOB = "alice-pause-token-0123456789", "bob-pause-token-9876543210"
TOKENS = {"LLM_SANDBOX_TOKENS": f"{ALICE},{BOB}"}

STATE = r"""
import subprocess, sys
x = 41
notes = {'kept': [1, 2, 3]}
open('/tmp/work.txt', 'w').write('before the pause')
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)  # lsbpausemarker'], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def helper():
    return 1
print('ready')
"""
LOOK = r"""
import json, os
procs = 0
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            procs += b'lsbpausemarker' in open('/proc/%s/cmdline' % p, 'rb').read()
        except OSError:
            pass
print(json.dumps({'x': globals().get('x'), 'notes': globals().get('notes'), 'helper': 'helper' in globals(),
                  'file': open('/tmp/work.txt').read() if os.path.exists('/tmp/work.txt') else None,
                  'procs': procs}))
"""


class PauseResumeTest(unittest.TestCase):
    def setUp(self):
        skip_unless_daemon_suite()
        self.dir = tempfile.mkdtemp(prefix="lsb-paused-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def daemon(self, *extra):
        d = Daemon("--paused-dir", self.dir, *extra, env=TOKENS)
        self.addCleanup(d.close)
        return d

    def test_a_new_daemon_resumes_the_paused_session_with_its_variables(self):
        d = self.daemon()
        sid = request(d.base, "POST", "/v1/sessions", {"language": "python", "setup": "import decimal"},
                      token=ALICE).json()["session_id"]
        r = request(d.base, "POST", f"/v1/sessions/{sid}/execute", {"code": STATE}, token=ALICE)
        self.assertEqual(r.json()["stdout"], "ready\n", r.body[:500])
        self.assertEqual(request(d.base, "POST", f"/v1/sessions/{sid}/pause", token=BOB).status, 404)
        p = request(d.base, "POST", f"/v1/sessions/{sid}/pause", token=ALICE)
        self.assertEqual(p.status, 200, p.body[:500])
        self.assertEqual(p.json()["state"], "paused")
        self.assertIn("processes", p.json()["pause"]["not_kept"])
        self.assertGreater(p.json()["pause"]["bytes"], 0)
        self.assertEqual(request(d.base, "GET", f"/v1/sessions/{sid}", token=ALICE).status, 404, "the box is gone")
        self.assertEqual(stat.S_IMODE(os.stat(self.dir).st_mode), 0o700)
        self.assertEqual(os.listdir(self.dir), [sid])
        self.assertEqual(d.stop(), 0, d.log())

        d2 = self.daemon()
        self.assertEqual(request(d2.base, "POST", f"/v1/sessions/{sid}/resume", token=BOB).status, 404,
                         "another token's paused session is not there")
        r = request(d2.base, "POST", f"/v1/sessions/{sid}/resume", token=ALICE)
        self.assertEqual(r.status, 200, r.body[:1000])
        self.addCleanup(request, d2.base, "DELETE", f"/v1/sessions/{sid}", token=ALICE)
        self.assertEqual(r.json()["session_id"], sid)
        self.assertIn("helper", r.json()["resume"]["not_carried"]["globals"])
        got = json.loads(request(d2.base, "POST", f"/v1/sessions/{sid}/execute", {"code": LOOK},
                                 token=ALICE).json()["stdout"])
        self.assertEqual(got, {"x": 41, "notes": {"kept": [1, 2, 3]}, "helper": False,
                               "file": "before the pause", "procs": 0})
        self.assertEqual(os.listdir(self.dir), [], "the record goes once resumed")
        again = request(d2.base, "POST", f"/v1/sessions/{sid}/resume", token=ALICE)
        self.assertEqual(again.status, 409, "a running session is not resumed twice")

    def test_hostile_ids_and_planted_records(self):
        d = self.daemon()
        for bad in ("..", "ses-..%2F..%2Fetc", "ses-0123456789abcdeg", "ses-0123456789ABCDEF", "x" * 300):
            r = request(d.base, "POST", f"/v1/sessions/{bad}/resume", token=ALICE)
            self.assertEqual(r.status, 404, (bad, r.body[:300]))
        # A record whose owner is someone else is invisible; a broken one is an error, not a crash.
        os.makedirs(os.path.join(self.dir, "ses-00000000000000aa"))
        with open(os.path.join(self.dir, "ses-00000000000000aa", "meta.json"), "w") as f:
            json.dump({"version": 1, "id": "ses-00000000000000aa", "owner": "tok-someone-else"}, f)
        self.assertEqual(request(d.base, "POST", "/v1/sessions/ses-00000000000000aa/resume", token=ALICE).status, 404)
        os.makedirs(os.path.join(self.dir, "ses-00000000000000bb"))
        with open(os.path.join(self.dir, "ses-00000000000000bb", "meta.json"), "w") as f:
            f.write("{not json")
        r = request(d.base, "POST", "/v1/sessions/ses-00000000000000bb/resume", token=ALICE)
        self.assertEqual(r.status, 502, r.body[:300])
        self.assertIn("record", r.json()["error"]["message"])

    def test_without_a_paused_dir_both_routes_answer_501_naming_why(self):
        d = Daemon("--paused-dir", "none", env=TOKENS)
        self.addCleanup(d.close)
        sid = request(d.base, "POST", "/v1/sessions", {"language": "python"}, token=ALICE).json()["session_id"]
        for op in ("pause", "resume"):
            r = request(d.base, "POST", f"/v1/sessions/{sid}/{op}", token=ALICE)
            self.assertEqual(r.status, 501, r.body[:300])
            self.assertEqual(r.json()["error"]["code"], "not_implemented")
            self.assertIn("state directory", r.json()["error"]["message"])
        self.assertEqual(request(d.base, "GET", f"/v1/sessions/{sid}", token=ALICE).status, 200, "still running")


class PausedBoundsTest(unittest.TestCase):
    """Issue 32, class 4: paused records are a per-token share that expires and can be deleted."""

    def setUp(self):
        skip_unless_daemon_suite()
        self.dir = tempfile.mkdtemp(prefix="lsb-paused-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def daemon(self, *extra):
        d = Daemon("--paused-dir", self.dir, *extra, env=TOKENS)
        self.addCleanup(d.close)
        return d

    def paused(self, d, token, code="x = 1"):
        sid = request(d.base, "POST", "/v1/sessions", {"language": "python"}, token=token).json()["session_id"]
        self.assertEqual(request(d.base, "POST", f"/v1/sessions/{sid}/execute", {"code": code}, token=token).status, 200)
        return sid, request(d.base, "POST", f"/v1/sessions/{sid}/pause", token=token)

    def test_token_b_can_pause_after_token_a_filled_its_share(self):
        d = self.daemon("--max-paused", "4", "--max-paused-per-owner", "2")
        for _ in range(2):
            _, p = self.paused(d, ALICE)
            self.assertEqual(p.status, 200, p.body[:300])
        sid, p = self.paused(d, ALICE)
        self.assertEqual(p.status, 429, p.body[:300])
        msg = p.json()["error"]["message"]
        self.assertIn("--max-paused-per-owner 2", msg)
        self.assertIn("DELETE", msg, "the error names the fix")
        self.assertGreater(int(p.headers["Retry-After"]), 0)
        self.assertEqual(request(d.base, "GET", f"/v1/sessions/{sid}", token=ALICE).status, 200,
                         "a refused pause leaves the session running")
        for _ in range(2):
            _, p = self.paused(d, BOB)
            self.assertEqual(p.status, 200, ("token B still pauses", p.body[:300]))
        self.assertEqual(len(os.listdir(self.dir)), 4)

    def test_a_paused_record_expires_also_when_a_restart_finds_it(self):
        d = self.daemon("--paused-ttl", "2")
        sid, p = self.paused(d, ALICE)
        self.assertEqual(p.status, 200, p.body[:300])
        time.sleep(2.5)
        r = request(d.base, "POST", f"/v1/sessions/{sid}/resume", token=ALICE)
        self.assertEqual(r.status, 404, ("expired", r.body[:300]))
        self.assertEqual(os.listdir(self.dir), [])
        _, p = self.paused(d, ALICE)
        self.assertEqual(p.status, 200, p.body[:300])
        self.assertEqual(d.stop(), 0, d.log())
        time.sleep(2.5)
        d2 = self.daemon("--paused-ttl", "2")
        self.assertEqual(os.listdir(self.dir), [], "a restart removes what expired while it was down")
        self.assertIn("expired paused session", d2.log())

    def test_its_owner_deletes_a_paused_record_and_another_token_gets_404(self):
        d = self.daemon()
        sid, p = self.paused(d, ALICE)
        self.assertEqual(p.status, 200, p.body[:300])
        self.assertEqual(request(d.base, "DELETE", f"/v1/sessions/{sid}", token=BOB).status, 404)
        self.assertEqual(os.listdir(self.dir), [sid], "another token's DELETE leaves it")
        self.assertEqual(request(d.base, "DELETE", f"/v1/sessions/{sid}", token=ALICE).status, 204)
        self.assertEqual(os.listdir(self.dir), [])
        self.assertEqual(request(d.base, "POST", f"/v1/sessions/{sid}/resume", token=ALICE).status, 404)
        self.assertEqual(request(d.base, "DELETE", f"/v1/sessions/{sid}", token=ALICE).status, 404)

    def test_a_record_past_the_byte_bound_is_refused_naming_it(self):
        d = self.daemon("--max-paused-bytes", "1M")
        sid, p = self.paused(d, ALICE, "open('/tmp/big', 'wb').write(b'x' * (2 << 20))")
        self.assertEqual(p.status, 413, p.body[:300])
        self.assertIn("--max-paused-bytes", p.json()["error"]["message"])
        self.assertEqual(request(d.base, "GET", f"/v1/sessions/{sid}", token=ALICE).status, 200)
        self.assertEqual(os.listdir(self.dir), [])


if __name__ == "__main__":
    unittest.main()
