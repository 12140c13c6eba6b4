"""llm-sandbox-init driven directly (no backend): the inner view and the threat cases of DESIGN §7
that init itself is responsible for. Needs root (to map a 65536-id user namespace)."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from init_harness import InitBox, py  # noqa: E402


def find_init():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.environ.get("LSB_SOURCE_DIR", os.path.dirname(os.path.dirname(here)))
    for d in filter(None, [os.environ.get("LSB_BUILD_DIR"), os.path.join(src, "build"),
                           os.path.join(src, "build-init")]):
        p = os.path.join(d, "llm-sandbox-init")
        if os.access(p, os.X_OK):
            return p
    return None


INIT = find_init()


@unittest.skipUnless(os.geteuid() == 0 and INIT, "needs root and a built llm-sandbox-init")
class InitBoxTest(unittest.TestCase):
    setup_fields = {"deny": ["/bin/sh"]}

    @classmethod
    def setUpClass(cls):
        cls.box = InitBox(INIT, stderr_path=os.environ.get("LSB_INIT_STDERR"))
        cls.box.start()
        cls.ready = cls.box.setup(**cls.setup_fields)

    @classmethod
    def tearDownClass(cls):
        cls.box.send("shutdown")
        cls.box.close()

    def run_py(self, code, **kw):
        r = py(self.box, code, **kw)
        self.assertIsNone(r.error, r)
        return r

    def assertOut(self, r, text):
        self.assertIn(text, r.stdout.decode(errors="replace"), r)


class ViewAndExec(InitBoxTest):
    def test_ready(self):
        self.assertEqual(self.ready["type"], "ready", self.ready)
        self.assertGreaterEqual(self.ready["landlock_abi"], 1)

    def test_hello(self):
        r = self.run_py('print("hi")')
        self.assertEqual(r.stdout, b"hi\n")
        self.assertEqual(r.exit["status"], "ok")
        self.assertEqual(r.exit["exit_code"], 0)

    def test_refuses_loader_environment_itself(self):
        # Defence in depth (docs/security.md, Class 8): a RunSpec that reaches init with LD_* or
        # glibc's loader variables, whatever the host checked, is refused before anything runs.
        for env in ({"LD_PRELOAD": "/lib/x86_64-linux-gnu/libc.so.6"}, {"GLIBC_TUNABLES": "glibc.malloc.check=3"},
                    {"GCONV_PATH": "/tmp"}, {"A=B": "x"}, {"V": "a\u0000b"}):
            r = py(self.box, "print('ran')", env=env)
            self.assertIsNotNone(r.error, r)
            self.assertIn("env.", r.error["message"], r)
            self.assertEqual(r.stdout, b"", r)
        r = self.run_py("import os\nprint(os.environ['MODE'], os.environ.get('LD_PRELOAD'))", env={"MODE": "ok"})
        self.assertOut(r, "ok None")

    def test_uid_and_hostname(self):
        r = self.run_py('import os, socket\nprint(os.getuid(), os.getgid(), socket.gethostname())')
        self.assertEqual(r.stdout, b"1000 1000 sandbox\n")

    def test_only_stdio_fds(self):
        # listdir's own directory fd is closed again once the listing is done.
        r = self.run_py('import os\nfds = os.listdir("/proc/self/fd")\n'
                        'print(sorted(f for f in fds if os.path.exists("/proc/self/fd/" + f)))')
        self.assertOut(r, "['0', '1', '2']")

    def test_subprocess_sh_denied_with_alert(self):
        r = self.run_py('import subprocess\ntry:\n  subprocess.run(["/bin/sh", "-c", "echo pwned"])\n'
                        'except PermissionError as e:\n  print("EACCES")')
        self.assertOut(r, "EACCES")
        self.assertNotIn(b"pwned", r.stdout)
        alerts = r.alerts("denied_exec")
        self.assertEqual(len(alerts), 1, r)
        self.assertEqual(alerts[0]["path"], "/bin/sh")
        self.assertEqual(alerts[0]["argv"], ["/bin/sh", "-c", "echo pwned"])
        self.assertIn("listed in commands.deny", alerts[0]["message"])

    def test_os_system_denied_with_alert(self):
        r = self.run_py('import os\nprint("rc", os.system("echo pwned"))')
        self.assertNotIn(b"pwned", r.stdout)
        self.assertOut(r, "rc 32512")  # 127 << 8: the shell could not be executed
        self.assertEqual(r.alerts("denied_exec")[0]["path"], "/bin/sh")

    def test_ld_so_trick_fails(self):
        r = self.run_py('import subprocess\ntry:\n  r = subprocess.run(["/lib64/ld-linux-x86-64.so.2", "/bin/sh", "-c", "echo pwned"], capture_output=True)\n'
                        '  print(r.returncode, r.stdout, r.stderr)\nexcept PermissionError:\n  print("EACCES")')
        self.assertNotIn(b"pwned\\n", r.stdout)
        self.assertTrue(r.alerts("denied_exec"), r)

    def test_bin_dir_files_unreadable(self):
        r = self.run_py('for p in ["/usr/bin/dash", "/usr/bin/cat", "/usr/bin/perl"]:\n'
                        '  try:\n    print("READ" if open(p, "rb").read(4) == b"\\x7fELF" else "EMPTY", p)\n'
                        '  except OSError as e:\n    print(e.errno, p)')
        self.assertNotIn(b"READ", r.stdout, r)

    def test_memfd_exec_fails(self):
        r = self.run_py('import os\ntry:\n  os.memfd_create("x"); print("memfd")\nexcept PermissionError:\n  print("EPERM")\n'
                        'fd = os.open("/usr/bin/python3", os.O_RDONLY)\n'
                        'try:\n  os.execve(fd, ["python3", "-c", "print(1)"], {})\nexcept PermissionError:\n  print("fexecve EPERM")')
        self.assertOut(r, "EPERM\nfexecve EPERM")

    def test_write_root_erofs(self):
        r = self.run_py('try:\n  open("/x", "w")\nexcept OSError as e:\n  print(e.errno)')
        self.assertOut(r, "30")

    def test_shadow_unreadable(self):
        r = self.run_py('try:\n  open("/etc/shadow").read(); print("READ")\nexcept OSError as e:\n  print(e.errno)')
        self.assertIn(r.stdout.strip(), (b"13", b"2"))

    def test_exec_copy_from_tmp(self):
        r = self.run_py('import shutil, os, subprocess\nshutil.copy("/usr/bin/python3", "/tmp/p")\nos.chmod("/tmp/p", 0o755)\n'
                        'try:\n  subprocess.run(["/tmp/p", "-c", "print(1)"])\nexcept PermissionError:\n  print("EACCES")')
        self.assertOut(r, "EACCES")
        self.assertEqual(r.alerts("denied_exec")[0]["path"], "/tmp/p")

    def test_escape_syscalls_eperm(self):
        r = self.run_py(
            'import ctypes, fcntl\nl = ctypes.CDLL(None, use_errno=True)\n'
            'def e(rc): return ctypes.get_errno() if rc == -1 else "ok"\n'
            'print("unshare", e(l.unshare(0x10000000)))\n'
            'print("mount", e(l.mount(b"none", b"/tmp", b"tmpfs", 0, None)))\n'
            'print("ptrace", e(l.ptrace(16, 1, 0, 0)))\n'
            'print("bpf", e(l.syscall(321, 0, 0, 0)))\n'
            'print("io_uring", e(l.syscall(425, 1, 0)))\n'
            'print("keyctl", e(l.syscall(250, 0, 0, 0)))\n'
            'print("perf", e(l.syscall(298, 0, 0, -1, -1, 0)))\n'
            'print("userfaultfd", e(l.syscall(323, 0)))\n'
            'print("clone_newns", e(l.syscall(56, 0x00020000 | 17, 0, 0, 0, 0)))\n'
            'print("open_by_handle_at", e(l.syscall(304, 0, 0, 0)))\n'
            'try:\n  fcntl.ioctl(0, 0x5412, b"x")\nexcept OSError as x:\n  print("tiocsti", x.errno)\n'
            'print("tiocsti_high", e(l.syscall(16, 0, 0x100005412, 0)))\n')
        for call in ("unshare", "mount", "ptrace", "bpf", "io_uring", "keyctl", "perf", "userfaultfd",
                     "clone_newns", "open_by_handle_at", "tiocsti", "tiocsti_high"):
            self.assertOut(r, f"{call} 1\n")

    def test_socket_families(self):
        r = self.run_py('import socket\nfor fam, typ in [(17, 3), (2, 3), (40, 1), (38, 5), (16, 3)]:\n'
                        '  try:\n    socket.socket(fam, typ); print("OPEN", fam)\n  except OSError as e:\n    print(fam, e.errno)')
        self.assertNotIn(b"OPEN", r.stdout, r)

    def test_kill_init_eperm(self):
        r = self.run_py('import os\ntry:\n  os.kill(1, 9)\nexcept OSError as e:\n  print(e.errno)')
        self.assertOut(r, "1")

    def test_proc_masks_and_readonly(self):
        r = self.run_py('import os\nfor p in ["/proc/keys", "/proc/timer_list", "/proc/kcore", "/proc/sched_debug"]:\n'
                        '  try:\n    print(p, len(open(p, "rb").read(100)))\n  except OSError as e:\n    print(p, "err", e.errno)\n'
                        'for p in ["/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern"]:\n'
                        '  try:\n    open(p, "w").write("x"); print("WROTE", p)\n  except OSError as e:\n    print(p, "err", e.errno)')
        self.assertNotIn(b"WROTE", r.stdout, r)
        for line in r.stdout.decode().splitlines():
            if "err" not in line:
                self.assertTrue(line.endswith(" 0"), line)  # masked: reads empty

    def test_no_docker_sock_no_sys(self):
        r = self.run_py('import os\nprint([p for p in ["/var/run/docker.sock", "/run/docker.sock", "/sys/kernel"] if os.path.exists(p)])')
        self.assertOut(r, "[]")

    def test_tmp_fills_at_size(self):
        r = self.run_py('try:\n  open("/tmp/big", "wb").write(b"x" * (100 << 20))\nexcept OSError as e:\n  print(e.errno)\n'
                        'import os\nos.unlink("/tmp/big")')
        self.assertOut(r, "28")

    def test_job_dir_read_only(self):
        r = self.run_py('import os\nprint(oct(os.stat(__file__).st_mode & 0o777))\n'
                        'try:\n  open(__file__, "a")\nexcept OSError as e:\n  print(e.errno)')
        self.assertOut(r, "0o444\n")


def run_py_unbuffered(box, code, **kw):
    """python3 -u, as the built-in python language runs it: print() writes its pieces one by one."""
    return box.run(["/usr/bin/python3", "-u", "{file}"], code, file_name="main.py", **kw)


def stdout_frames(r):
    """The payloads of the run's stdout frames, in order (frames hold sizes; stdout the bytes)."""
    out, at = [], 0
    for kind, size in r.frames:
        if kind == "stdout":
            out.append(r.stdout[at:at + size])
            at += size
    return out


SUMMARY_ON_SIGTERM = (
    'import signal, sys, time\n'
    'def done(*_):\n'
    '    print("=== 3 passed, 1 failed (summary written on SIGTERM) ===")\n'
    '    sys.exit(1)\n'
    'signal.signal(signal.SIGTERM, done)\n'
    'print("running", flush=True)\n'
    'time.sleep(100)\n')


class TimeoutGrace(InitBoxTest):
    """At the timeout init sends SIGTERM, waits the grace, then SIGKILLs every process (issue 16)."""

    def test_sigterm_handler_gets_to_print_its_summary(self):
        t0 = time.monotonic()
        r = self.run_py(SUMMARY_ON_SIGTERM, timeout_ms=1000, timeout_grace_ms=2000)
        took = time.monotonic() - t0
        self.assertEqual(r.exit["status"], "timeout", r)
        self.assertEqual(r.exit["exit_code"], 124, r)
        self.assertEqual(r.exit["signal"], 0, r)  # it exited on its own, within the grace
        self.assertIn(b"running\n=== 3 passed, 1 failed", r.stdout, r)
        self.assertLess(took, 2.8, "the program ended at SIGTERM; nothing waited for the grace")
        self.assertIn("SIGTERM", r.alerts("timeout")[0]["message"])

    def test_program_ignoring_sigterm_is_killed_at_timeout_plus_grace(self):
        code = 'import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(100)\n'
        t0 = time.monotonic()
        r = self.run_py(code, timeout_ms=2000, timeout_grace_ms=1500)
        took = time.monotonic() - t0
        self.assertEqual(r.exit["status"], "timeout", r)
        self.assertEqual(r.exit["exit_code"], 124, r)
        self.assertEqual(r.exit["signal"], 9, r)
        self.assertGreaterEqual(took, 3.4, r)  # timeout + grace
        self.assertLess(took, 5.5, r)
        # The grace is never longer than the timeout: 1 s + at most 1 s.
        t0 = time.monotonic()
        r = self.run_py(code, timeout_ms=1000, timeout_grace_ms=30000)
        self.assertEqual(r.exit["signal"], 9, r)
        self.assertLess(time.monotonic() - t0, 3.5, r)
        self.assertEqual(len(r.alerts("timeout")), 1, r)

    def test_no_grace_is_sigkill_at_the_timeout(self):
        r = self.run_py(SUMMARY_ON_SIGTERM, timeout_ms=1000, timeout_grace_ms=0)
        self.assertEqual((r.exit["status"], r.exit["exit_code"], r.exit["signal"]), ("timeout", 124, 9), r)
        self.assertNotIn(b"summary", r.stdout)


class OutputCoalescing(InitBoxTest):
    """Output leaves init in whole lines, and alerts keep their place between them (issue 16)."""

    def test_printed_lines_arrive_whole(self):
        r = run_py_unbuffered(self.box, 'for i in range(100):\n    print("line", i)\n')
        self.assertIsNone(r.error, r)
        frames = stdout_frames(r)
        self.assertEqual(b"".join(frames), b"".join(b"line %d\n" % i for i in range(100)))
        self.assertLessEqual(len(frames), 100, frames[:10])
        self.assertTrue(all(f.endswith(b"\n") for f in frames), frames)

    def test_a_partial_line_still_arrives_before_the_program_ends(self):
        code = ('import sys, time\nsys.stdout.write("prompt> ")\ntime.sleep(0.5)\nprint("done")\n')
        r = run_py_unbuffered(self.box, code)
        self.assertEqual(stdout_frames(r), [b"prompt> ", b"done\n"], r)

    def test_alert_between_two_prints_comes_between_them(self):
        code = ('import socket\nprint("before")\n'
                'try:\n    socket.create_connection(("127.0.0.1", 6379), timeout=2)\nexcept OSError:\n    pass\n'
                'print("after")\n')
        r = run_py_unbuffered(self.box, code)
        self.assertIsNone(r.error, r)
        kinds = [k for k, _ in r.frames if k in ("stdout", "event")]
        self.assertEqual(kinds, ["stdout", "event", "stdout"], r.frames)
        self.assertEqual(stdout_frames(r), [b"before\n", b"after\n"])


class NetworkOff(InitBoxTest):
    def test_connect_refused_with_alert(self):
        r = self.run_py('import socket\ntry:\n  socket.create_connection(("127.0.0.1", 6379), timeout=2)\nexcept OSError as e:\n  print(e.errno)')
        self.assertOut(r, "101")
        alerts = r.alerts("network_attempt")
        self.assertEqual(alerts[0]["address"], "127.0.0.1:6379", r)
        self.assertEqual(alerts[0]["kind"], "connect")

    def test_metadata_and_udp(self):
        r = self.run_py('import socket\ntry:\n  socket.create_connection(("169.254.169.254", 80), timeout=2)\nexcept OSError as e:\n  print(e.errno)\n'
                        's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ntry:\n  s.sendto(b"x", ("8.8.8.8", 53))\nexcept OSError as e:\n  print(e.errno)')
        self.assertOut(r, "101\n101")
        self.assertEqual([a["address"] for a in r.alerts("network_attempt")], ["169.254.169.254:80", "8.8.8.8:53"])

    def test_unix_socketpair_works(self):
        r = self.run_py('import socket\na, b = socket.socketpair()\na.send(b"ok")\nprint(b.recv(2).decode())')
        self.assertOut(r, "ok")


class Limits(InitBoxTest):
    def test_busy_loop_timeout(self):
        r = self.run_py("while True: pass", timeout_ms=1000)
        self.assertEqual(r.exit["status"], "timeout", r)
        self.assertEqual(r.alerts("timeout")[0]["kind"], "timeout")
        self.assertGreater(r.exit["cpu_ms"], 50)  # the cores are shared with other work

    def test_trap_term_and_orphans_gone_at_timeout(self):
        code = ('import subprocess, sys\n'
                'child = "import os, signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\n'
                'if os.fork(): os._exit(0)\\ntime.sleep(100)"\n'
                'subprocess.run([sys.executable, "-c", child])\n'
                'import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(100)')
        r = self.run_py(code, timeout_ms=1500)
        self.assertEqual(r.exit["status"], "timeout", r)
        r2 = self.run_py('import os\nprint(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))')
        pids = eval(r2.stdout.decode())
        self.assertEqual(pids[0], 1)
        self.assertEqual(len(pids), 2, pids)  # init and this program only

    def test_background_leftovers_killed_at_exit(self):
        r = self.run_py('import subprocess, sys\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(100)"])\nprint("bye")')
        self.assertEqual(r.exit["status"], "ok")
        r2 = self.run_py('import os\nprint(len([p for p in os.listdir("/proc") if p.isdigit()]))')
        self.assertOut(r2, "2")

    def test_hundred_mb_output_truncated(self):
        r = self.run_py('import sys\nb = "x" * (1 << 20)\nfor _ in range(100): sys.stdout.write(b)', output_limit_bytes=1 << 20)
        self.assertEqual(r.exit["status"], "output_limit", r.exit)
        self.assertTrue(r.exit["truncated"])
        self.assertEqual(len(r.stdout), 1 << 20)
        self.assertTrue(all(size <= 65536 for kind, size in r.frames if kind == "stdout"))
        self.assertEqual(r.alerts("output_flood")[0]["kind"], "output_limit")

    def test_output_under_cap_complete(self):
        r = self.run_py('import sys\nsys.stdout.write("y" * 300000)\nsys.stderr.write("e" * 1000)')
        self.assertEqual(len(r.stdout), 300000)
        self.assertEqual(r.exit["stdout_bytes"], 300000)
        self.assertEqual(r.exit["stderr_bytes"], 1000)
        self.assertFalse(r.exit["truncated"])

    def test_kill_frame(self):
        r = py(self.box, "import time\ntime.sleep(30)", kill_after=0.5)
        self.assertEqual(r.exit["status"], "killed", r)

    def test_stdin(self):
        r = self.run_py("import sys\nprint(sys.stdin.read().upper())", stdin="hello")
        self.assertEqual(r.stdout, b"HELLO\n")

    def test_exit_code_and_signal(self):
        self.assertEqual(self.run_py("import sys\nsys.exit(3)").exit["exit_code"], 3)
        r = self.run_py("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        self.assertEqual((r.exit["status"], r.exit["signal"]), ("killed", 11))

    def test_rlimits(self):
        r = self.run_py('import resource, os\nprint(resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_CORE))\n'
                        'fds = []\ntry:\n  while True: fds.append(os.open("/dev/null", os.O_RDONLY))\nexcept OSError as e:\n  print(e.errno)',
                        nofile=64)
        self.assertOut(r, "(64, 64) (0, 0)\n24")

    def test_file_size_limit(self):
        r = self.run_py('try:\n  open("/tmp/f", "wb").write(b"x" * (2 << 20))\nexcept OSError as e:\n  print(e.errno)',
                        file_size_bytes=1 << 20)
        self.assertOut(r, "27")

    def test_denied_program(self):
        r = self.box.run(["/bin/sh", "-c", "echo hi"], "")
        self.assertEqual(r.exit["status"], "denied", r)
        self.assertEqual(r.alerts("denied_exec")[0]["path"], "/bin/sh")

    def test_missing_program(self):
        r = self.box.run(["/nonexistent"], "")
        self.assertEqual((r.exit["status"], r.exit["exit_code"]), ("error", 127))

    def test_bad_file_name_is_a_run_error(self):
        r = self.box.run(["python3", "{file}"], "print(1)", file_name="../x")
        self.assertEqual(r.error["stage"], "run", r)

    def test_session_keeps_tmp(self):
        self.run_py('open("/tmp/state", "w").write("kept")')
        self.assertOut(self.run_py('print(open("/tmp/state").read())'), "kept")


RACE = r"""
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
good = b"/usr/bin/python3\0"
bad = b"/bin/sh\0" + b"\0" * 9
for attempt in range(30):
    pid = os.fork()
    if pid == 0:
        buf = ctypes.create_string_buffer(good, 32)
        def flip():
            while True:
                ctypes.memmove(buf, bad, len(bad))
                ctypes.memmove(buf, good, len(good))
        threading.Thread(target=flip, daemon=True).start()
        argv = (ctypes.c_char_p * 4)(b"x", b"-c", b"echo pwned", None)
        libc.execve(buf, argv, None)
        os._exit(0)
    os.waitpid(pid, 0)
print("done")
"""

NEW_FILTER = r"""
import ctypes, struct, subprocess
libc = ctypes.CDLL(None, use_errno=True)
prog = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000))  # RET ALLOW
class FProg(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = FProg(1, ctypes.addressof(prog))
print("listener", libc.syscall(317, 1, 8, ctypes.byref(fp)), ctypes.get_errno(), flush=True)
print("plain", libc.syscall(317, 1, 0, ctypes.byref(fp)), flush=True)
try:
    subprocess.run(["/bin/sh", "-c", "echo pwned"])
except PermissionError:
    print("still denied", flush=True)
"""


class Adversarial(InitBoxTest):
    setup_fields = {"trace": True}

    def test_exec_path_rewritten_while_held(self):
        # A thread flips the path between an allowed and a denied file while execve is held by
        # the watch: whatever init read, the kernel (Landlock) decides what finally runs.
        r = self.run_py(RACE, timeout_ms=60000)
        self.assertOut(r, "done")
        self.assertNotIn(b"pwned", r.stdout)

    def test_second_listener_refused_new_filter_harmless(self):
        r = self.run_py(NEW_FILTER)
        self.assertOut(r, "listener -1 1\nplain 0\nstill denied\n")

    def test_x32_and_foreign_abi_killed(self):
        r = self.run_py('import ctypes\nl = ctypes.CDLL(None)\nl.syscall(0x40000000 | 165, b"none", b"/tmp", b"tmpfs", 0, None)\nprint("survived")')
        self.assertEqual((r.exit["status"], r.exit["signal"]), ("killed", 31), r)

    def test_trace_events(self):
        r = self.run_py('import subprocess, socket\nsubprocess.run(["/usr/bin/python3", "-c", "1"])\n'
                        'socket.socket(socket.AF_UNIX).bind("/tmp/trace.sock")')
        kinds = [(e["kind"], e["severity"], e["decision"]) for e in r.events]
        self.assertIn(("execve", "info", "allowed"), kinds)
        self.assertIn("unix:/tmp/trace.sock", [e["address"] for e in r.events])


class SetupFailsClosed(unittest.TestCase):
    @unittest.skipUnless(os.geteuid() == 0 and INIT, "needs root and a built llm-sandbox-init")
    def test_uid_zero_refused(self):
        with InitBox(INIT) as box:
            r = box.setup(uid=0)
            self.assertEqual(r["type"], "error")
            self.assertEqual(r["stage"], "setup")

    @unittest.skipUnless(os.geteuid() == 0 and INIT, "needs root and a built llm-sandbox-init")
    def test_in_place_requires_read_only_root(self):
        with InitBox(INIT) as box:
            r = box.setup(mode="in_place")
            self.assertEqual(r["type"], "error", r)
            self.assertIn("read_only", r["message"])


if __name__ == "__main__":
    unittest.main()
