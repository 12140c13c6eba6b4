"""The Docker backend against Podman's Docker-compatible socket (issue 3): Debian's podman, rootful,
its `podman system service` on a private socket, the test image imported into it, and
`llm-sandbox run --backend docker` with DOCKER_HOST pointing there: the seed policy's print("hi"),
a denied /bin/sh with its alert, a memory hog (oom) and a busy loop (timeout); nothing left behind.

scripts/ensure-podman.sh installs podman when it is absent and we are root. Where podman itself
cannot run a container here, every test is skipped with podman's own words; a failure of ours
fails. The service is ours alone: its storage (/var/lib/lsb-podman, kept as an image cache, like
the Docker image) and run dir (/run/lsb-podman, removed) are used by nothing else; a lock keeps two
suites apart.

Why the service gets a containers.conf: rootful Podman raises every container's RLIMIT_NOFILE and
RLIMIT_NPROC to 1048576 unless containers.conf's default_ulimits say otherwise, and root on these
machines lacks CAP_SYS_RESOURCE, so without it runc fails "error setting rlimits ... operation not
permitted" for any container, Podman's own `podman run` included (docs/docker.md).
"""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

from daemon_util import BINARY, IMAGES, SOURCE_DIR, engine_answers, prepare_engine_or_skip

SEED = os.path.join(SOURCE_DIR, "policies", "code-sandbox.yaml")
IMAGE = "llm-sandbox/python:3.11-test"
CACHE = os.environ.get("LSB_CACHE_DIR") or os.path.join(os.environ.get("HOME") or "/root", ".cache", "llm-sandbox")
TARBALL = os.path.join(CACHE, "debian-bookworm-minbase-python3-stdlib.tar")
STORAGE = "/var/lib/lsb-podman/storage"
RUN_DIR = "/run/lsb-podman"
SOCK = os.path.join(RUN_DIR, "podman.sock")
HOST = "unix://" + SOCK
CONF = os.path.join(RUN_DIR, "containers.conf")
LOG = os.path.join(RUN_DIR, "service.log")

SERVICE = None
LOCK = None


def podman_args():
    return ["podman", "--root", STORAGE, "--runroot", os.path.join(RUN_DIR, "run"),
            "--tmpdir", os.path.join(RUN_DIR, "tmp")]


def podman_env():
    return dict(os.environ, CONTAINERS_CONF=CONF)


def podman(*args, timeout=120, check=False):
    return subprocess.run([*podman_args(), *args], capture_output=True, text=True, timeout=timeout,
                          env=podman_env(), check=check, stdin=subprocess.DEVNULL)


def setUpModule():
    global SERVICE, LOCK
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest(f"{BINARY} not built")
    if os.geteuid() != 0:
        raise unittest.SkipTest("rootful podman needs root (the tests start their own podman service)")
    rc = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "ensure-podman.sh")], timeout=900).returncode
    if rc == 3:
        raise unittest.SkipTest("podman is not installed and cannot be installed here (scripts/ensure-podman.sh)")
    if rc != 0:
        raise AssertionError(f"scripts/ensure-podman.sh failed ({rc})")
    # The Docker suite's image tarball (and the Docker image, the fallback source).
    prepare_engine_or_skip()
    os.makedirs(RUN_DIR, exist_ok=True)
    LOCK = open("/run/lsb-podman.lock", "w")
    deadline = time.monotonic() + 300
    while True:
        try:
            fcntl.flock(LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise unittest.SkipTest("another Podman suite held /run/lsb-podman.lock for 5 minutes")
            time.sleep(1)
    with open(CONF, "w") as f:
        f.write('[containers]\ndefault_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]\n'
                '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n')
    if podman("image", "exists", IMAGE).returncode != 0:
        if os.path.exists(TARBALL):
            r = podman("import", "--change", 'CMD ["/usr/bin/python3"]', "--change",
                       "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", TARBALL, IMAGE,
                       timeout=600)
        else:  # the Docker image exists (prepare_engine_or_skip): hand it over
            r = subprocess.run(f"docker save {IMAGE} | {' '.join(podman_args())} load", shell=True,
                               capture_output=True, text=True, timeout=600, env=podman_env())
        if r.returncode != 0:
            raise AssertionError(f"could not import {IMAGE} into podman: {r.stderr}")
    # Can podman itself run a container here? If not, that is podman's limit, not ours: skip with its words.
    probe = subprocess.run([*podman_args(), "run", "--rm", "--network", "none", IMAGE, "python3", "-c", "print('ok')"],
                           capture_output=True, text=True, timeout=120, env=podman_env(), cwd=RUN_DIR,
                           stdin=subprocess.DEVNULL)
    if probe.returncode != 0 or probe.stdout.strip() != "ok":
        raise unittest.SkipTest("podman cannot run a container on this machine: " + probe.stderr.strip()[-600:])
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    log = open(LOG, "w")
    SERVICE = subprocess.Popen([*podman_args(), "system", "service", "--time=0", HOST], stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=podman_env(),
                               start_new_session=True, cwd=RUN_DIR)  # conmon drops an `oom` file in its cwd
    log.close()
    deadline = time.monotonic() + 30
    while not engine_answers(SOCK):
        if SERVICE.poll() is not None or time.monotonic() > deadline:
            tearDownModule()
            raise AssertionError("podman system service did not answer on " + SOCK + ":\n" + open(LOG).read()[-2000:])
        time.sleep(0.1)


def tearDownModule():
    global SERVICE, LOCK
    if SERVICE is not None:
        SERVICE.send_signal(signal.SIGTERM)
        try:
            SERVICE.wait(timeout=30)
        except subprocess.TimeoutExpired:
            SERVICE.kill()
            SERVICE.wait()
        SERVICE = None
    if LOCK is not None:
        # Our containers only (labelled); the image stays as a cache.
        left = podman("ps", "-aq", "--filter", "label=io.llm-sandbox.owner").stdout.split()
        if left:
            podman("rm", "-f", *left)
        # The run dir goes (podman treats its absence like a reboot); the storage stays as the cache.
        with open("/proc/self/mounts") as f:
            mounts = [line.split()[1] for line in f]
        for m in sorted(mounts, key=len, reverse=True):
            if m.startswith(RUN_DIR + "/"):
                subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(RUN_DIR, ignore_errors=True)
        LOCK.close()
        LOCK = None


def run(code, extra=(), timeout=120):
    args = [BINARY, "run", "--backend", "docker", "--json", "--policy", SEED, "--images", IMAGES, *extra, "-"]
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, DOCKER_HOST=HOST), cwd=SOURCE_DIR)
    out, err = p.communicate(code, timeout=timeout)
    try:
        return json.loads(out), err, p.pid
    except json.JSONDecodeError:
        return None, err, p.pid


class Podman(unittest.TestCase):
    def owned(self, pid):
        """Our containers in podman whose owner label names CLI process `pid`."""
        out = podman("ps", "-a", "--filter", "label=io.llm-sandbox.owner", "--format", "{{.ID}} {{.Labels}}").stdout
        return [line.split()[0] for line in out.splitlines() if f"/{pid}/" in line]

    def check(self, code, extra=()):
        r, err, pid = run(code, extra)
        self.assertIsNotNone(r, err)
        self.assertEqual(r["backend"], "docker", r)
        left = self.owned(pid)
        if left:
            state = podman("inspect", "--format", "{{.Id}} {{.State.Status}} {{.Config.Labels}}", *left).stdout
            with open(LOG) as f:
                log = f.read()[-1500:]
            self.fail(f"container(s) left in podman by CLI {pid}: {state}\nCLI stderr: {err}\nservice log: {log}")
        return r, err

    def test_engine_is_podman(self):
        v = json.loads(subprocess.run(["docker", "version", "--format", "{{json .Server}}"], capture_output=True,
                                      text=True, env=dict(os.environ, DOCKER_HOST=HOST), timeout=30).stdout)
        self.assertIn("Podman", json.dumps(v))

    def test_seed_policy_prints_hi(self):
        r, err = self.check('print("hi")')
        self.assertEqual((r["status"], r["stdout"], r["exit_code"]), ("ok", "hi\n", 0), err)

    def test_denied_shell_is_refused_with_alert(self):
        r, err = self.check("import os\nprint('rc', os.system('/bin/sh -c \"echo pwned\"'))\n")
        self.assertNotIn("pwned", r["stdout"])
        self.assertTrue(any(a.get("rule") == "denied_exec" for a in r["alerts"]), r)

    def test_memory_hog_is_oom(self):
        r, err = self.check("x = []\nwhile True: x.append(b'x' * (16 << 20))\n")
        self.assertEqual(r["status"], "oom", r)

    def test_timeout_kills(self):
        t0 = time.monotonic()
        r, err = self.check("while True: pass\n", extra=["--timeout", "2"])
        self.assertEqual(r["status"], "timeout", r)
        self.assertLess(time.monotonic() - t0, 30)


if __name__ == "__main__":
    unittest.main()
