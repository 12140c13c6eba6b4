"""Session fork (docs/api.md "Fork") through the real `llm-sandbox serve` on the native backend:
children start with the parent's globals, imported modules and files, not its processes; each is
its own box, so forks do not see each other's (or the parent's) later writes or processes; what
could not be carried is named; children belong to the parent's owner; bad counts are refused."""
import json
import os
import time
import unittest

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite

ALICE, BOB = "alice-fork-token-0123456789", "bob-fork-token-9876543210"

PARENT = r"""
import decimal, subprocess, sys
x = 41
label = {'name': 'parent', 'items': [1, 2, 3]}
D = decimal.Decimal('1.5')
def helper():
    return 'defined in the session'
open('/tmp/a.txt', 'w').write('parent')
import os
os.makedirs('/tmp/dir/sub', exist_ok=True)
open('/tmp/dir/sub/f.bin', 'wb').write(bytes(range(256)))
proc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)  # lsbforkmarker'],
                        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
print('ready')
"""

LOOK = r"""
import json, os, sys
procs = 0
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            procs += b'lsbforkmarker' in open('/proc/%s/cmdline' % p, 'rb').read()
        except OSError:
            pass
print(json.dumps({
    'x': globals().get('x'), 'label': globals().get('label'), 'D': str(globals().get('D')),
    'decimal': 'decimal' in globals() and 'decimal' in sys.modules, 'helper': 'helper' in globals(),
    'a': open('/tmp/a.txt').read() if os.path.exists('/tmp/a.txt') else None,
    'bin': open('/tmp/dir/sub/f.bin', 'rb').read() == bytes(range(256)) if os.path.exists('/tmp/dir/sub/f.bin') else False,
    'state_files': [n for n in os.listdir('/tmp') if n.startswith('.lsb-fork-')],
    'procs': procs, 'mark': globals().get('mark')}))
"""


class SessionForkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon(env={"LLM_SANDBOX_TOKENS": f"{ALICE},{BOB}"})
        cls.addClassCleanup(cls.d.close)

    def call(self, method, path, body=None, token=ALICE):
        return request(self.d.base, method, path, body, token=token)

    def session(self, **extra):
        r = self.call("POST", "/v1/sessions", {"language": "python", **extra})
        self.assertEqual(r.status, 201, r.body[:500])
        sid = r.json()["session_id"]
        self.addCleanup(self.call, "DELETE", f"/v1/sessions/{sid}")
        return sid

    def run_in(self, sid, code, token=ALICE):
        r = self.call("POST", f"/v1/sessions/{sid}/execute", {"code": code}, token=token)
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.json()["exit_code"], 0, r.json())
        return r.json()["stdout"]

    def look(self, sid):
        return json.loads(self.run_in(sid, LOOK).strip().splitlines()[-1])

    def fork(self, sid, count, token=ALICE):
        r = self.call("POST", f"/v1/sessions/{sid}/fork", {"count": count}, token=token)
        if r.status == 201:
            for c in r.json()["sessions"]:
                self.addCleanup(self.call, "DELETE", f"/v1/sessions/{c['session_id']}")
        return r

    def test_children_carry_state_and_files_not_processes_and_stay_apart(self):
        parent = self.session(setup="import json")
        self.assertIn("ready", self.run_in(parent, PARENT))
        r = self.fork(parent, 2)
        self.assertEqual(r.status, 201, r.body[:1000])
        OpenApi().check("POST", "/v1/sessions/{id}/fork", 201, r.json())
        body = r.json()
        kids = [c["session_id"] for c in body["sessions"]]
        self.assertEqual(len(set(kids + [parent])), 3)
        fork = body["fork"]
        self.assertIn("x", fork["carried"]["globals"])
        self.assertIn("decimal", fork["carried"]["modules"])
        self.assertIn("helper", fork["not_carried"]["globals"], "a function defined in the session is named, not carried")
        self.assertIn("proc", fork["not_carried"]["globals"])
        for k in kids:
            got = self.look(k)
            self.assertEqual((got["x"], got["label"], got["D"]), (41, {"name": "parent", "items": [1, 2, 3]}, "1.5"), got)
            self.assertTrue(got["decimal"], got)
            self.assertFalse(got["helper"])
            self.assertEqual(got["a"], "parent")
            self.assertTrue(got["bin"], "files are byte-exact")
            self.assertEqual(got["state_files"], [], "the state file does not stay behind")
            self.assertEqual(got["procs"], 0, "no process of the parent is in a child")
        self.assertEqual(self.look(parent)["state_files"], [])
        self.assertEqual(self.look(parent)["procs"], 1)

        # Later writes and processes stay where they were made.
        self.run_in(kids[0], "x = 1\nmark = 'first'\nopen('/tmp/a.txt', 'w').write('first')\n"
                             "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                             "'import time; time.sleep(1000)  # lsbforkmarker'], start_new_session=True, "
                             "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)")
        self.run_in(parent, "x = 2\nopen('/tmp/a.txt', 'w').write('parent later')")
        second = self.look(kids[1])
        self.assertEqual((second["x"], second["a"], second["mark"], second["procs"]), (41, "parent", None, 0), second)
        first = self.look(kids[0])
        self.assertEqual((first["x"], first["a"], first["mark"], first["procs"]), (1, "first", "first", 1), first)
        self.assertEqual(self.look(parent)["a"], "parent later")

        # A child is a session like any other: it resets to its own start (the setup), and forks.
        grandchild = self.fork(kids[1], 1)
        self.assertEqual(grandchild.status, 201, grandchild.body[:500])
        self.assertEqual(self.look(grandchild.json()["sessions"][0]["session_id"])["x"], 41)

    def test_children_are_the_owners_and_strangers_get_404(self):
        parent = self.session()
        self.run_in(parent, "y = 'secret'")
        self.assertEqual(self.fork(parent, 1, token=BOB).status, 404)
        kid = self.fork(parent, 1).json()["sessions"][0]["session_id"]
        self.assertEqual(self.call("GET", f"/v1/sessions/{kid}", token=BOB).status, 404)
        self.assertEqual(self.call("POST", f"/v1/sessions/{kid}/execute", {"code": "print(y)"}, token=BOB).status, 404)
        listed = [s["session_id"] for s in self.call("GET", "/v1/sessions", token=BOB).json()["sessions"]]
        self.assertNotIn(kid, listed)
        self.assertEqual(self.run_in(kid, "print(y)"), "secret\n")

    def test_bad_requests_are_refused_naming_the_field(self):
        parent = self.session()
        for bad in (0, -1, 17, "2", 1.5, None, True):
            r = self.call("POST", f"/v1/sessions/{parent}/fork", {"count": bad})
            self.assertEqual(r.status, 400, (bad, r.body[:300]))
            self.assertIn("count", r.json()["error"]["message"])
        r = self.call("POST", f"/v1/sessions/{parent}/fork", {"count": 1, "deep": True})
        self.assertEqual(r.status, 400)
        self.assertIn("deep", r.json()["error"]["message"])
        self.assertEqual(self.call("POST", "/v1/sessions/ses-0000000000000000/fork", {"count": 1}).status, 404)

    def test_hostile_parent_state_hurts_only_its_forks(self):
        # The parent plants a value whose unpickling calls a function (open: it creates a file), a FIFO and a symlink out of
        # the box. The value is unpickled inside the child's box only (the same owner's, under the
        # same policy: nothing the owner could not run there anyway), never on the host; only
        # regular files and directories are copied.
        marker = f"/tmp/lsb-fork-pwned-{os.getpid()}-{time.time_ns()}"
        parent = self.session()
        self.run_in(parent, "import os\nos.mkfifo('/tmp/fifo')\nos.symlink('/etc/shadow', '/tmp/link')\n"
                            "class Evil:\n    def __reduce__(self):\n"
                            f"        return (open, ('{marker}', 'w'))\n"
                            "evil = Evil()\nplain = 3")
        r = self.fork(parent, 1)
        self.assertEqual(r.status, 201, r.body[:500])
        self.assertFalse(os.path.exists(marker), "the parent's state was unpickled on the host")
        kid = r.json()["sessions"][0]["session_id"]
        out = self.run_in(kid, "import os\nprint(plain, sorted(n for n in os.listdir('/tmp') if not n.startswith('.')))")
        self.assertEqual(out, f"3 ['{os.path.basename(marker)}']\n", "no FIFO, no symlink; the load ran in the box")


if __name__ == "__main__":
    unittest.main()
