"""Session reset clears the box's IPC state and preempts a running execution (issue 32, class 3;
docs/security.md "Reset leaves state behind"), through the real `llm-sandbox serve` on the native
backend: after a reset no /dev/shm file, SysV shared memory segment, semaphore set, SysV message
queue, POSIX message queue or process of the episode remains (the setup's are kept); a reset sent
while a 60 s execution runs answers within a second and that execution ends with status "reset"
(exit code 137), on the interpreter's fast path, after a snapshot and in a plain-language session."""
import json
import os
import subprocess
import threading
import time
import unittest

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite

TOKEN = "reset-ipc-token-0123456789"

# The setup's objects: a reset returns to them, so they must stay.
SETUP = r"""
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
SETUP_SHM = _libc.shmget(0x4c53ff, 4096, 0o1000 | 0o600)
open('/dev/shm/setup-file', 'w').write('setup')
"""

# Episode 1 leaves one of each behind, plus a detached process.
EPISODE = r"""
import ctypes, json, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, IPC_PRIVATE = 0o1000, 0
open('/dev/shm/episode-hint', 'w').write('the answer is 42')
made = {
    'shm_private': libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600),
    'shm_key': libc.shmget(0x4c5301, 4096, IPC_CREAT | 0o000),
    'sem': libc.semget(0x4c5302, 1, IPC_CREAT | 0o600),
    'msg': libc.msgget(0x4c5303, IPC_CREAT | 0o600),
}
# Landlock refuses POSIX queues in a box (EACCES: the mqueue fs is under no rule); were one made,
# the reset must remove it.
mq = libc.mq_open(b'/lsb-episode-q', os.O_CREAT | os.O_RDWR, 0o600, None)
made['mq_errno'] = ctypes.get_errno() if mq < 0 else 0
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)  # lsbipcmarker'],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
print(json.dumps(made))
"""

LOOK = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
def ids(kind):
    with open('/proc/sysvipc/' + kind) as f:
        return sorted(int(l.split()[1]) for l in f.read().splitlines()[1:] if l.strip())
mq = libc.mq_open(b'/lsb-episode-q', os.O_RDONLY, 0, None)
mq_errno = ctypes.get_errno() if mq < 0 else 0
procs = 0
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            procs += b'lsbipcmarker' in open('/proc/%s/cmdline' % p, 'rb').read()
        except OSError:
            pass
print(json.dumps({'shm_files': sorted(os.listdir('/dev/shm')), 'shm': ids('shm'), 'sem': ids('sem'),
                  'msg': ids('msg'), 'mq_open': mq >= 0, 'mq_errno': mq_errno, 'procs': procs,
                  'globals': sorted(k for k in ('made', 'ep_var', 'snap_var', 'SETUP_SHM') if k in globals())}))
"""

LONG = "ep_var = 1\nimport time\nprint('begun', flush=True)\ntime.sleep(60)\nprint('never')"


class SessionResetIpcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.d = Daemon("--max-concurrency", "4", env={"LLM_SANDBOX_TOKENS": TOKEN})
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def call(self, method, path, template=None, body=None):
        r = request(self.d.base, method, path, body=body, token=TOKEN, timeout=120)
        if template and r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def new_session(self, **body):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", body)
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(self.call, "DELETE", f"/v1/sessions/{sid}")
        return sid

    def run_in(self, sid, code):
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute", {"code": code})
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def reset(self, sid):
        r = self.call("POST", f"/v1/sessions/{sid}/reset", "/v1/sessions/{id}/reset")
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def look(self, sid):
        res = self.run_in(sid, LOOK)
        self.assertEqual(res["status"], "ok", res)
        return json.loads(res["stdout"])

    def test_reset_leaves_no_ipc_object_or_process_of_the_episode(self):
        sid = self.new_session(setup=SETUP)
        base = self.look(sid)
        self.assertEqual(base["shm_files"], ["setup-file"], base)
        self.assertEqual(len(base["shm"]), 1, base)
        for episode in range(2):
            res = self.run_in(sid, EPISODE)
            self.assertEqual(res["status"], "ok", res)
            made = json.loads(res["stdout"])
            self.assertTrue(all(made[k] >= 0 for k in ('shm_private', 'shm_key', 'sem', 'msg')), made)
            self.assertIn(made["mq_errno"], (0, 13), made)
            during = self.look(sid)
            self.assertEqual(during["shm_files"], ["episode-hint", "setup-file"])
            self.assertEqual(len(during["shm"]), 3, during)
            self.assertEqual((during["mq_open"], during["procs"]), (made["mq_errno"] == 0, 1), during)
            out = self.reset(sid)
            self.assertEqual(out["reset"]["mode"], "interpreter", out)
            after = self.look(sid)
            self.assertEqual(after, {"shm_files": ["setup-file"], "shm": base["shm"], "sem": [], "msg": [],
                                     "mq_open": False, "mq_errno": made["mq_errno"] or 2, "procs": 0,
                                     "globals": ["SETUP_SHM"]},
                             f"episode {episode}: something of the episode outlived the reset")

    def test_snapshot_keeps_its_ipc_objects_and_a_reset_removes_later_ones(self):
        sid = self.new_session()
        self.run_in(sid, "import ctypes\nsnap_var = ctypes.CDLL(None).semget(0x4c5310, 1, 0o1000 | 0o600)\n"
                         "open('/dev/shm/snap-file', 'w').write('s')")
        self.call("POST", f"/v1/sessions/{sid}/snapshot", "/v1/sessions/{id}/snapshot")
        kept = self.look(sid)
        self.assertEqual(len(kept["sem"]), 1, kept)
        self.run_in(sid, EPISODE)
        self.assertEqual(self.reset(sid)["reset"]["mode"], "interpreter")
        after = self.look(sid)
        self.assertEqual((after["shm_files"], after["sem"], after["shm"], after["msg"], after["mq_open"], after["procs"]),
                         (["snap-file"], kept["sem"], [], [], False, 0), after)

    def preempt(self, sid):
        """Starts LONG in `sid`, resets it while it runs: (reset answer, seconds it took, the execution's result)."""
        got = {}

        def run():
            got["res"] = self.run_in(sid, LONG)
        t = threading.Thread(target=run)
        t.start()
        deadline = time.monotonic() + 30
        while self.call("GET", f"/v1/sessions/{sid}").json()["state"] != "busy":
            self.assertLess(time.monotonic(), deadline, "the execution did not start")
            time.sleep(0.05)
        time.sleep(0.5)  # well inside its 60 s
        start = time.monotonic()
        out = self.reset(sid)
        took = time.monotonic() - start
        t.join(10)
        self.assertFalse(t.is_alive(), "the preempted execution did not end")
        return out, took, got["res"]

    def test_reset_preempts_a_running_execution(self):
        sid = self.new_session(setup="BASE = 7")
        out, took, res = self.preempt(sid)
        self.assertLess(took, 1.0, out)
        self.assertEqual(out["reset"]["mode"], "interpreter", out)
        self.assertTrue(out["reset"]["preempted"], out)
        self.assertEqual((res["status"], res["exit_code"]), ("reset", 137), res)
        self.assertEqual(res["stdout"], "begun\n", res)
        self.assertLess(res["duration_ms"], 5000, res)
        self.assertEqual(self.look(sid)["globals"], [], "the preempted episode's variable outlived the reset")
        self.assertEqual(self.run_in(sid, "print(BASE)")["stdout"], "7\n")

    def test_preempting_reset_returns_to_the_snapshot(self):
        sid = self.new_session()
        self.run_in(sid, "snap_var = 1")
        self.call("POST", f"/v1/sessions/{sid}/snapshot", "/v1/sessions/{id}/snapshot")
        out, took, res = self.preempt(sid)
        self.assertLess(took, 1.0, out)
        self.assertEqual((out["reset"]["mode"], res["status"]), ("interpreter", "reset"), (out, res))
        self.assertNotIn("snapshot_lost", out["reset"])
        self.assertEqual(self.look(sid)["globals"], ["snap_var"])

    def test_reset_preempts_a_plain_run(self):
        sid = self.new_session(policy="bash-tools", language="bash")
        got = {}
        t = threading.Thread(target=lambda: got.update(res=self.run_in(sid, "echo begun; sleep 60")))
        t.start()
        while self.call("GET", f"/v1/sessions/{sid}").json()["state"] != "busy":
            time.sleep(0.05)
        time.sleep(0.5)
        out = self.reset(sid)
        t.join(15)
        self.assertFalse(t.is_alive())
        self.assertEqual((out["reset"]["mode"], out["reset"]["preempted"]), ("new_box", True), out)
        self.assertEqual((got["res"]["status"], got["res"]["exit_code"]), ("reset", 137), got["res"])
        self.assertEqual(self.run_in(sid, "echo again")["stdout"], "again\n")

    def test_an_episode_that_stops_its_zygote_cannot_outlive_a_reset(self):
        # Fail closed: the zygote cannot answer the preempt, so the reset kills the box after its
        # wait (3 s) and takes a new one; the execution still ends as "reset".
        sid = self.new_session(setup="BASE = 7")
        code = "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\nprint('begun', flush=True)\ntime.sleep(60)"
        got = {}
        t = threading.Thread(target=lambda: got.update(res=self.run_in(sid, code)))
        t.start()
        while self.call("GET", f"/v1/sessions/{sid}").json()["state"] != "busy":
            time.sleep(0.05)
        time.sleep(0.5)
        start = time.monotonic()
        out = self.reset(sid)
        took = time.monotonic() - start
        t.join(15)
        self.assertFalse(t.is_alive())
        self.assertLess(took, 15, out)
        self.assertEqual((out["reset"]["mode"], out["reset"]["preempted"]), ("new_box", True), out)
        self.assertEqual(got["res"]["status"], "reset", got["res"])
        self.assertEqual(self.run_in(sid, "print(BASE, 'ep' in globals())")["stdout"], "7 False\n")

    def test_an_episode_that_signals_its_zygote_is_reset_not_hung(self):
        sid = self.new_session(setup="BASE = 7")
        start = time.monotonic()
        res = self.run_in(sid, "import os, signal, sys, time\nep = 1\nprint('out')\nprint('err', file=sys.stderr)\n"
                               "os.kill(os.getppid(), signal.SIGUSR2)\ntime.sleep(60)")
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual((res["status"], res["stdout"], res["stderr"]), ("reset", "out\n", "err\n"), res)
        self.assertEqual(self.run_in(sid, "print(BASE, 'ep' in globals())")["stdout"], "7 False\n")

    def test_preempted_episode_leaves_no_process(self):
        sid = self.new_session()
        code = ("import subprocess, sys, time\n"
                "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)  # lsbipcmarker'],"
                " start_new_session=True)\ntime.sleep(60)")
        got = {}
        t = threading.Thread(target=lambda: got.update(res=self.run_in(sid, code)))
        t.start()
        deadline = time.monotonic() + 30
        while not subprocess.run(["pgrep", "-f", "lsbipcmarker"], capture_output=True).stdout:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.reset(sid)
        t.join(10)
        self.assertEqual(got["res"]["status"], "reset")
        self.assertEqual(subprocess.run(["pgrep", "-f", "lsbipcmarker"], capture_output=True).stdout, b"")


if __name__ == "__main__":
    unittest.main()
