"""The fork server (`serve --fork-server`, docs/architecture.md "Fork server") through the real daemon
on the native backend, tried as an attacker would: a python run's box is made by a fork of the
policy's interpreter, started once, and must be every bit the box a run gets without it. Each case
runs code that tries to keep something for the next run, to reach the interpreter it was forked
from, or to escape the confinement the copy took; the next run must see nothing of it."""
import hashlib
import json
import os
import secrets
import signal
import threading
import time
import unittest

from daemon_harness import Daemon, request, skip_unless_daemon_suite

# The zygote's source names this (its command line, to find it among the daemon's processes).
ZYGOTE_MARK = "lsb_fork_enter"

PROBE = r"""
import json, os, socket, sys
st = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)
open_fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        open_fds.append(fd)
    except OSError:
        pass
cmdline = open('/proc/self/cmdline', 'rb').read().split(b'\0')[:-1]
print(json.dumps({
    # A copy of the zygote has its modules (ctypes among them) before the program imports any.
    'adopted': '_ctypes' in sys.modules,
    'cmdline_is_runs': [a.decode() for a in cmdline] == sys.orig_argv and sys.orig_argv[-1] == sys.argv[0],
    'seccomp': st['Seccomp'].strip(), 'nnp': st['NoNewPrivs'].strip(), 'capeff': st['CapEff'].strip(),
    'ids': [os.getuid(), os.geteuid(), os.getgid()], 'fds': open_fds,
    'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
    'hostname': socket.gethostname(), 'pid': os.getpid(), 'argv': sys.argv, 'name': __name__,
    'limits': [open('/proc/sys/user/' + n).read().strip() for n in ('max_user_namespaces', 'max_inotify_instances')],
}))
"""


class ForkServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        if os.geteuid() != 0:
            raise unittest.SkipTest("the fork server test runs the daemon as root")
        cls.d = Daemon("--backend", "native", "--fork-server", "--pool-size", "2")

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def run_code(self, code, **extra):
        r = request(self.d.base, "POST", "/v1/execute", {"code": code, **extra})
        self.assertEqual(r.status, 200, r.body[:500])
        return r.json()

    def probe(self, **extra):
        r = self.run_code(PROBE, **extra)
        self.assertEqual(r["exit_code"], 0, r)
        return json.loads(r["stdout"])

    def test_a_run_is_a_fork_confined_as_a_box(self):
        p = self.probe()
        self.assertTrue(p["adopted"], "the run did not come from the fork server")
        self.assertTrue(p["cmdline_is_runs"], "/proc/self/cmdline or sys.orig_argv is not the run's command")
        self.assertEqual(p["seccomp"], "2")  # filter mode
        self.assertEqual(p["nnp"], "1")
        self.assertEqual(p["capeff"], "0000000000000000")
        self.assertEqual(p["ids"], [1000, 1000, 1000])
        self.assertEqual(p["fds"], [], "a descriptor of the zygote's (or init's) is open in the program")
        self.assertEqual(p["pids"], [1, 2], "the program sees processes other than its box's init")
        self.assertEqual(p["pid"], 2)
        self.assertEqual(p["hostname"], "sandbox")
        self.assertEqual(p["limits"], ["0", "16"], "the box's own per-user limits are not in force")
        self.assertEqual(p["name"], "__main__")
        self.assertTrue(p["argv"][0].endswith("main.py"), p["argv"])

    def test_exit_codes_errors_and_output_are_a_programs(self):
        r = self.run_code("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), (3, "out\n", "err\n"))
        r = self.run_code("def f():\n    raise ValueError('boom')\nf()")
        self.assertEqual(r["exit_code"], 1)
        self.assertIn("ValueError: boom", r["stderr"])
        self.assertNotIn("fork", r["stderr"].lower(), "the zygote's frames show in the program's traceback")
        r = self.run_code("import sys; sys.exit('bye')")
        self.assertEqual((r["exit_code"], r["stderr"]), (1, "bye\n"))
        r = self.run_code("import atexit, threading, time\n"
                          "atexit.register(lambda: print('atexit ran'))\n"
                          "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()")
        self.assertEqual(r["stdout"], "thread done\natexit ran\n")

    def test_alerts_and_refusals_are_a_boxs(self):
        r = self.run_code("import os, socket\n"
                          "try:\n    os.execv('/bin/sh', ['sh', '-c', 'id'])\nexcept OSError as e:\n    print('exec', e.errno)\n"
                          "try:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\nexcept OSError as e:\n    print('net', e.errno)\n"
                          "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                          "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"  # CLONE_NEWUSER
                          "print('setns', libc.setns(0, 0), ctypes.get_errno())\n"
                          "print('ptrace', libc.ptrace(16, 1, 0, 0), ctypes.get_errno())\n"  # PTRACE_ATTACH init
                          "try:\n    open('/proc/1/environ').read()\nexcept OSError as e:\n    print('init', e.errno)\n")
        out = r["stdout"].split("\n")
        self.assertIn("exec 13", out)
        self.assertIn("net 101", out)
        self.assertIn("unshare -1 1", out)  # EPERM
        self.assertTrue(any(l.startswith("setns -1") for l in out), out)
        self.assertIn("init 13", out)
        rules = {a["rule"] for a in r["alerts"]}
        self.assertIn("denied_exec", rules)
        self.assertIn("network_attempt", rules)
        self.assertIn("ptrace -1 1", out)
        self.assertIn("escape_syscall", rules, "the zygote's filter hid an escape attempt from the box's watch")
        exec_alert = next(a for a in r["alerts"] if a["rule"] == "denied_exec")
        self.assertIn("/bin/sh", exec_alert["message"], "init could not read the program's memory")

    def test_nothing_of_a_run_reaches_the_next(self):
        leave = r"""
import ctypes, os, socket, subprocess, sys, time
open('/tmp/left', 'w').write('x')
open('/dev/shm/left', 'w').write('x')
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(0x4c5342, 4096, 0o1000 | 0o666)  # IPC_CREAT: a SysV segment outlives its maker
print('shm', shmid)
s = socket.socket(socket.AF_UNIX)
s.bind('\0lsb-left-behind')
s.listen()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        s2 = s
        time.sleep(1000)
    os._exit(0)
time.sleep(0.2)
"""
        r = self.run_code(leave)
        self.assertEqual(r["exit_code"], 0, r)
        self.assertNotIn("shm -1", r["stdout"])
        for _ in range(3):  # whichever warm box the next run gets
            r = self.run_code(r"""
import os, socket
print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))
print(open('/proc/sysvipc/shm').read().count('\n') - 1)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('\0lsb-left-behind'); print('connected')
except OSError:
    print('alone')
print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
""")
            self.assertEqual(r["stdout"], "[] []\n0\nalone\n[1, 2]\n", r)

    def test_a_run_holds_nothing_of_earlier_runs_code(self):
        # The zygote never sees a run's code (init hands it to the copy after the fork): a later
        # copy's memory, all of it, holds no trace of an earlier run's secret.
        secret = "SECRET-" + secrets.token_hex(16)
        self.assertEqual(self.run_code(f"x = {secret!r}\nprint(len(x))")["exit_code"], 0)
        digest = hashlib.sha256(secret.encode()).hexdigest()
        scan = r"""
import hashlib, re
found = 0
with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', 0) as mem:
    for line in maps:
        a, b = (int(x, 16) for x in line.split()[0].split('-'))
        if 'r' not in line.split()[1] or b - a > 1 << 28:
            continue
        try:
            mem.seek(a); chunk = mem.read(b - a)
        except OSError:
            continue
        for m in re.finditer(rb'SECRET-[0-9a-f]{32}', chunk):
            found += hashlib.sha256(m.group(0)).hexdigest() == %r
print(found)
""" % digest
        for _ in range(3):
            r = self.run_code(scan)
            self.assertEqual(r["stdout"], "0\n", r)

    def test_timeouts_kills_and_oom_then_the_next_run(self):
        r = self.run_code("while True: pass", timeout=1)
        self.assertEqual(r["status"], "timeout", r)
        r = self.run_code("import os, signal\nos.kill(-1, signal.SIGKILL)\nimport time; time.sleep(1)")
        self.assertNotEqual(r["status"], "ok")  # it killed its own box, nothing else
        r = self.run_code("b = bytearray(600 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1")
        self.assertIn(r["status"], ("oom", "killed", "error"), r)
        self.assertTrue(self.probe()["adopted"], "the fork server did not survive its boxes' ends")

    def test_a_run_it_cannot_become_gets_its_own_python(self):
        p = self.probe(env={"PYTHONDONTWRITEBYTECODE": "1"})
        self.assertFalse(p["adopted"], "a run with another environment was adopted")
        self.assertEqual(p["pids"], [1, 3], p)  # the waiting copy (pid 2) ended, a new python is 3

    def test_concurrent_runs(self):
        results, errors = [], []

        def worker():
            try:
                for _ in range(4):
                    results.append(self.probe()["adopted"])
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(results, [True] * 32)

    def test_the_zygote_runs_under_its_own_filter(self):
        self.run_code("pass")
        zygotes = [pid for pid in self.d.descendants() if ZYGOTE_MARK in _cmdline(pid)]
        self.assertTrue(zygotes, "no zygote among the daemon's processes")
        for pid in zygotes:
            with open(f"/proc/{pid}/status") as f:
                status = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            self.assertEqual(status["Seccomp"].strip(), "2", "the zygote runs without a seccomp filter")

    def test_z_a_killed_zygote_is_started_again(self):
        zygotes = [pid for pid in self.d.descendants() if ZYGOTE_MARK in _cmdline(pid)]
        self.assertTrue(zygotes, "no zygote among the daemon's processes")
        for pid in zygotes:
            try:  # the list holds the boxes' waiting copies too (the zygote's cmdline): gone with it
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # Its boxes end with it (a run in one of them then would fail); the pool drops them.
        time.sleep(1)
        deadline = time.time() + 30
        adopted = False
        while time.time() < deadline and not adopted:
            r = self.run_code(PROBE)
            self.assertEqual(r["exit_code"], 0, r)  # a run never fails for it: its own box then
            adopted = json.loads(r["stdout"])["adopted"]
        self.assertTrue(adopted, "no fork server again after its zygote was killed")


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


if __name__ == "__main__":
    unittest.main()
