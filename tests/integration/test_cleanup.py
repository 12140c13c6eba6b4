"""After 200 runs of `llm-sandbox run` (plain, failing, timed out, OOM-killed, fork bombs, runs
interrupted by a signal; four at a time) nothing is left on the host: no process, no cgroup under
the llm-sandbox parent, no mount, no temp dir.

After a completed run the CLI leaves the box's teardown to a detached helper (it exits without
waiting for the kernel to take the namespaces down): the helper and the killed init are adopted by
this test, a subreaper, which reaps them as any subreaper must; their teardown must be over within
a few seconds of the CLI's exit (DETACHED_TEARDOWN_S), and nothing may be left after it.

To tell our leftovers from those of other suites running at the same time, the test makes itself
a child subreaper (an orphaned box process would be re-parented to it) and moves itself into fresh
v1 cgroups, so the CLI's boxes are created under a parent only this test uses."""
import concurrent.futures
import ctypes
import os
import signal
import subprocess
import time
import unittest

from harness import BINARY, IMAGES, SEED_POLICY, SOURCE_DIR, SandboxTestCase

RUN = [BINARY, "run", "--policy", SEED_POLICY, "--images", IMAGES]
PR_SET_CHILD_SUBREAPER = 36
DETACHED_TEARDOWN_S = 10  # generous: a loaded 2-core CI machine


def reap_adopted():
    """Reaps the exited processes this subreaper adopted (a detached teardown's helper, killed inits)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def own_v1_cgroups():
    """{controller: absolute dir of our own group} for the v1 controllers the backend uses."""
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[dash + 1] != "cgroup":
                continue
            for opt in fields[dash + 3].split(","):
                if opt in ("memory", "pids", "cpu", "cpuacct"):
                    mounts[opt] = (fields[3], fields[4])
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(","):
                if c in mounts:
                    root, mp = mounts[c]
                    if root != "/" and path.startswith(root):
                        path = path[len(root):] or "/"
                    out[c] = mp.rstrip("/") + (path if path != "/" else "")
    return out


def children_of(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append((int(entry), stat[:stat.rfind(")") + 1]))
    return kids


def temp_entries():
    out = set()
    for d in ("/tmp", "/dev/shm", "/run"):
        try:
            out |= {os.path.join(d, e) for e in os.listdir(d) if "sandbox" in e or e.startswith("lsb")}
        except OSError:
            pass
    return out


def sandbox_mounts():
    with open("/proc/self/mountinfo") as f:
        return {line.split()[4] for line in f if "sandbox" in line or "/run/job" in line}


class NothingLeftBehind(SandboxTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (cgroups)")
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise unittest.SkipTest("cannot become a child subreaper")
        cls.original = own_v1_cgroups()
        cls.private = {}
        name = f"lsb-cleanup-test-{os.getpid()}"
        for ctl, d in cls.original.items():
            mine = os.path.join(d, name)
            os.makedirs(mine, exist_ok=True)
            with open(os.path.join(mine, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            cls.private[ctl] = mine

    @classmethod
    def tearDownClass(cls):
        for ctl, mine in cls.private.items():
            with open(os.path.join(cls.original[ctl], "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            parent = os.path.join(mine, "llm-sandbox")
            for d in (parent, mine):
                for _ in range(50):
                    try:
                        os.rmdir(d)
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.05)

    def box_groups(self):
        left = []
        for ctl, mine in self.private.items():
            parent = os.path.join(mine, "llm-sandbox")
            if os.path.isdir(parent):
                left += [os.path.join(parent, e) for e in os.listdir(parent)
                         if os.path.isdir(os.path.join(parent, e))]
        return left

    def settled(self):
        """Waits (bounded) until the detached teardowns are over: nothing adopted left, no box group."""
        deadline = time.monotonic() + DETACHED_TEARDOWN_S
        while True:
            reap_adopted()
            if not children_of(os.getpid()) and not self.box_groups():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def test_detached_teardown_finishes(self):
        """One run: when the CLI has exited, its box's groups and processes are gone within the bound."""
        p = subprocess.run(RUN + ["-"], input="print(7)\n", capture_output=True, text=True, cwd=SOURCE_DIR,
                           timeout=120)
        self.assertEqual((p.returncode, p.stdout), (0, "7\n"), p.stderr)
        self.assertTrue(self.settled(), f"teardown not over {DETACHED_TEARDOWN_S}s after the CLI exited: "
                        f"groups {self.box_groups()}, processes {children_of(os.getpid())}")

    def one_run(self, i):
        kind = i % 20
        if kind == 0:    # timed out
            code, extra = "import time\ntime.sleep(30)\n", ["--timeout", "0.5"]
        elif kind == 1:  # OOM-killed
            code, extra = "x = []\nwhile True:\n    x.append(bytearray(32 << 20))\n", []
        elif kind == 2:  # fork bomb with orphaned grandchildren
            code, extra = ("import os, time\ntry:\n    while True:\n        if os.fork() == 0:\n"
                           "            time.sleep(60); os._exit(0)\nexcept OSError:\n    pass\n"), []
        elif kind == 3:  # interrupted by a signal mid-run
            proc = subprocess.Popen(RUN + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=SOURCE_DIR)
            proc.stdin.write(b"import time\nprint('up', flush=True)\ntime.sleep(60)\n")
            proc.stdin.close()
            proc.stdout.readline()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            err = proc.stderr.read()
            proc.stdout.close()
            proc.stderr.close()
            return ("interrupted", proc.returncode, err.decode(errors="replace"))
        elif kind == 4:  # failing program
            code, extra = "import sys\nsys.exit(5)\n", []
        else:
            code, extra = f"print({i})\n", []
        p = subprocess.run(RUN + extra + ["-"], input=code, capture_output=True, text=True,
                           cwd=SOURCE_DIR, timeout=120)
        return (kind, p.returncode, p.stderr)

    def test_200_runs_leave_nothing(self):
        temps_before = temp_entries()
        mounts_before = sandbox_mounts()
        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            outcomes = list(pool.map(self.one_run, range(200)))
        elapsed = time.monotonic() - start
        expected = {0: 124, 1: 137, 4: 5, "interrupted": 128 + signal.SIGTERM}
        for kind, rc, err in outcomes:
            if kind in expected:
                self.assertEqual(rc, expected[kind], (kind, err))
            elif kind == 2:
                self.assertEqual(rc, 0, err)
            else:
                self.assertEqual(rc, 0, err)
        # The boxes really were made under this test's private parent (so the checks below see them).
        for ctl in ("memory", "pids"):
            if ctl in self.private:
                self.assertTrue(os.path.isdir(os.path.join(self.private[ctl], "llm-sandbox")), ctl)
        # Interrupted runs are torn down before the CLI exits; completed ones by a detached helper,
        # which must be done within the bound.
        self.settled()
        self.assertEqual(children_of(os.getpid()), [], "box processes left (re-parented to us)")
        self.assertEqual(self.box_groups(), [], "box cgroups left")
        self.assertEqual(sandbox_mounts() - mounts_before, set(), "mounts left")
        self.assertEqual(temp_entries() - temps_before, set(), "temp entries left")
        print(f"\n200 runs in {elapsed:.1f}s (4 in parallel)")


if __name__ == "__main__":
    unittest.main()
