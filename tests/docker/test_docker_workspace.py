"""Workspaces and artifacts on the Docker backend (issue 21, docs/api.md "Host workspaces"): the
native suites' cases run again on a real engine, plus Docker's own attacks.

- Through `llm-sandbox serve --backend docker`: test_daemon_changes.py's project flow (the Python
  project with a package in subfolders and a pytest suite uploaded as an archive, its tests run as a
  command, the JUnit XML back through collect, a fixing program's change set as a patch `git apply`
  takes on the original tree, the same in a session).
- Through `llm-sandbox run --backend docker` (the policy says `backend: docker`):
  test_run_workspace.py's cases (--workspace as an overlay, ro mounts, sources outside the roots or
  behind a symlink refused, writes never reaching the host).
- Docker's own: the view's flags in the box, a box seeing neither another box's writes nor the
  host dir of its upper layer, nothing left in the daemon's mount dir.

The test image has Python's standard library only. pytest comes the way a policy can give it: the
host's pure-Python pytest (python3-pytest) copied into a directory that the policy mounts
read-only at /opt/testdeps, with PYTHONPATH set by the policy (a request may not set it)."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from daemon_util import IMAGES, owned_by_pid, prepare_engine_or_skip  # noqa: F401 (sys.path for harness)
import daemon_harness
import test_daemon_changes as native_changes
import test_run_workspace as native_ws
from harness import BINARY, run_cli

MOUNTS_DIR = "/run/llm-sandbox/docker-mounts"
HOST_PACKAGES = "/usr/lib/python3/dist-packages"
TEST_DEPS = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "attr", "py.py")
BASE = None  # the module's temp dir: the allowed mount root of the daemon, the test deps, projects
DEPS = None
MOUNTS_BEFORE = set()


def mount_dirs():
    try:
        return set(os.listdir(MOUNTS_DIR))
    except OSError:
        return set()


def mounted_under(name):
    with open("/proc/self/mountinfo") as f:
        return any(f"{MOUNTS_DIR}/{name}/" in line for line in f)


def tree_names(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, ds, fs in os.walk(root) for n in ds + fs)


def setUpModule():
    global BASE, DEPS, MOUNTS_BEFORE
    if os.geteuid() != 0:
        raise unittest.SkipTest("container.mounts on Docker need the daemon (here: the test) as root")
    prepare_engine_or_skip()
    if not os.path.isdir(os.path.join(HOST_PACKAGES, "_pytest")):
        raise unittest.SkipTest("the host has no python3-pytest to give the box")
    MOUNTS_BEFORE = mount_dirs()
    BASE = tempfile.mkdtemp(prefix="lsb-dws-")
    os.chmod(BASE, 0o755)
    DEPS = os.path.join(BASE, "testdeps")
    os.mkdir(DEPS)
    for name in TEST_DEPS:
        src = os.path.join(HOST_PACKAGES, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(DEPS, name), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, DEPS)


def tearDownModule():
    if BASE:
        shutil.rmtree(BASE, True)


def docker_policy(name, mounts=(), deps=True, timeout=120):
    """test_run_workspace's python_policy on Docker: the test image, a read-only root, a 64M /tmp;
    with `deps`, pytest mounted read-only at /opt/testdeps and on PYTHONPATH."""
    all_mounts = ([{"source": DEPS, "target": "/opt/testdeps", "mode": "ro"}] if deps else []) + list(mounts)
    return f"""version: "1.0"
name: {name}
backend: docker
container:
  image: python:3.11-slim
  read_only: true
  mounts: {json.dumps(all_mounts)}
  tmpfs:
    /tmp: "size=64M,noexec,nosuid"
  env:
    PYTHONPATH: /opt/testdeps
commands:
  allow: ["/usr/bin/python3"]
resources:
  cpu: "1"
  memory: "512M"
  timeout: {timeout}
"""


class DockerDaemonProjectFlow(native_changes.ChangesTest):
    """test_daemon_changes.py through a daemon on the Docker backend. Left out: the 20,000-file
    flood and the figure stage (backend-neutral, slow; the native suite has them)."""

    test_a_flood_of_files_ends_in_an_error_not_an_unbounded_manifest = None
    test_no_change_is_an_empty_set_and_a_figure_stage_is_not_a_change = None

    @classmethod
    def setUpClass(cls):
        cls.api = daemon_harness.OpenApi()
        cls.dir = tempfile.mkdtemp(prefix="policies-", dir=BASE)
        with open(os.path.join(cls.dir, "changes-test.yaml"), "w") as f:
            f.write(docker_policy("changes-test", timeout=180))
        with open(os.path.join(cls.dir, "outside-root.yaml"), "w") as f:
            f.write(docker_policy("outside-root", [{"source": "/etc", "target": "/data", "mode": "ro"}]))
        workspace = tempfile.mkdtemp(prefix="ws-", dir=BASE)
        native_ws.write_project(workspace)
        cls.workspace = workspace
        with open(os.path.join(cls.dir, "overlay-ws.yaml"), "w") as f:
            f.write(docker_policy("overlay-ws", [{"source": workspace, "target": "/workspace", "mode": "overlay"}],
                                  deps=False))
        cls.d = daemon_harness.Daemon("--backend", "docker", "--pool-size", "0", "--max-concurrency", "2",
                                      "--mount-root", BASE, policies=cls.dir)
        cls.addClassCleanup(cls.d.close)
        cls.archive = native_changes.base64.b64encode(native_changes.project_tar()).decode()

    @classmethod
    def tearDownClass(cls):
        pid = cls.d.proc.pid
        cls.d.stop()
        left = owned_by_pid(pid)
        assert not left, f"containers left after SIGTERM: {left}"
        assert not (mount_dirs() - MOUNTS_BEFORE), f"mount views left in {MOUNTS_DIR}: {mount_dirs() - MOUNTS_BEFORE}"

    def test_the_backend_is_docker(self):
        res = self.execute({"language": "python", "code": "print(1)"})
        self.assertEqual((res["backend"], res["stdout"]), ("docker", "1\n"), res)

    def test_a_source_outside_the_mount_roots_is_refused_naming_it(self):
        r = daemon_harness.request(self.d.base, "POST", "/v1/execute",
                                   body={"policy": "outside-root", "code": "print('ran')"}, timeout=120)
        # Refused before any box, naming the source and the flag. The status is the one a refused
        # box start gets on native too (502 sandbox_error; docs/api.md says 403-style): not Docker's.
        self.assertIn(r.status, (403, 502), r.body[:2000])
        msg = r.json()["error"]["message"]
        self.assertIn("container.mounts: source '/etc'", msg)
        self.assertIn("--mount-root", msg)

    def test_changes_true_covers_the_overlay_workspace(self):
        res = self.execute({"policy": "overlay-ws", "language": "python", "changes": True, "code": (
            "p = '/workspace/calc/ops/arith.py'\n"
            "text = open(p).read().replace('a * b - 1', 'a * b')\n"
            "open(p, 'w').write(text)\n"
            "open('/tmp/scratch.txt', 'w').write('t\\n')\n")})
        ch = res["changes"]
        self.assertEqual(ch["root"], "/")
        self.assertEqual({f["path"]: f["change"] for f in ch["files"]},
                         {"/workspace/calc/ops/arith.py": "modified", "/tmp/scratch.txt": "added"}, ch)
        self.assertIn("diff --git a/workspace/calc/ops/arith.py b/workspace/calc/ops/arith.py", ch["patch"])
        self.assertIn("+    return a * b\n", ch["patch"])
        with open(os.path.join(self.workspace, "calc/ops/arith.py")) as f:
            self.assertIn("a * b - 1", f.read())  # the host's copy is untouched

    def test_a_box_sees_neither_another_boxs_writes_nor_the_host_dir_of_its_upper_layer(self):
        r = daemon_harness.request(self.d.base, "POST", "/v1/sessions", body={"policy": "overlay-ws"})
        self.assertEqual(r.status, 201, r.body[:2000])
        sid = r.json()["session_id"]
        self.addCleanup(daemon_harness.request, self.d.base, "DELETE", f"/v1/sessions/{sid}")
        r = daemon_harness.request(self.d.base, "POST", f"/v1/sessions/{sid}/execute", body={
            "code": "open('/workspace/marker-of-box-a', 'w').write('a')\nprint(open('/workspace/marker-of-box-a').read())"})
        self.assertEqual((r.status, r.json().get("stdout")), (200, "a\n"), r.body[:2000])
        # While box A lives: box B (same policy, same source) sees the source only, and the host
        # paths of the overlay's layers (which its mountinfo names) do not exist in it.
        res = self.execute({"policy": "overlay-ws", "language": "python", "code": (
            "import os, re\n"
            "print(sorted(os.listdir('/workspace'))[:3], os.path.exists('/workspace/marker-of-box-a'))\n"
            "line = [l for l in open('/proc/self/mountinfo') if ' /workspace ' in l][0]\n"
            "upper = re.search(r'upperdir=([^,\\s]+)', line).group(1)\n"
            "root = upper[:upper.index('/docker-mounts/') + len('/docker-mounts')]\n"
            "for p in (upper, root, os.path.dirname(os.path.dirname(upper))):\n"
            "    try:\n        print(os.listdir(p)); print('SAW', p)\n"
            "    except OSError as e:\n        print(type(e).__name__)\n")})
        out = res["stdout"]
        self.assertIn("False", out.splitlines()[0], out)
        self.assertNotIn("SAW", out)
        self.assertEqual(out.count("FileNotFoundError"), 3, out)
        self.assertFalse(os.path.exists(os.path.join(self.workspace, "marker-of-box-a")))


class DockerCliWorkspace(native_ws.WorkspaceTest):
    """test_run_workspace.py with `llm-sandbox run` on the Docker backend (the policies say
    `backend: docker`). The workspace runs also mount the test deps (--mount-root DEPS)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(cls.policy, "w") as f:
            f.write(docker_policy("workspace-test"))

    def run_json(self, args, stdin=None):
        res, p = super().run_json(["--mount-root", DEPS] + args, stdin=stdin)
        self.assertEqual(res.get("backend"), "docker", res)
        return res, p

    def policy_with(self, mounts):
        path = os.path.join(tempfile.mkdtemp(dir=self.dir), "mounts.yaml")
        with open(path, "w") as f:
            f.write(docker_policy("mounts-test", mounts, deps=False))
        return path

    def test_the_views_flags_in_the_box(self):
        src = self.project()
        pol = self.policy_with([{"source": src, "target": "/opt/ws", "mode": "ro"},
                                {"source": src, "target": "/srv/ov", "mode": "overlay"}])
        p = run_cli(["run", "--json", "--policy", pol, "--images", IMAGES, "--mount-root", src, "-"], stdin=(
            "for l in open('/proc/self/mountinfo'):\n"
            "    f = l.split()\n"
            "    if f[4] in ('/opt/ws', '/srv/ov'): print(f[4], sorted(set(f[5].split(',')) & "
            "{'ro', 'rw', 'nosuid', 'nodev', 'noexec', 'idmapped'}), l.split(' - ')[1].split()[0])\n"))
        res = json.loads(p.stdout)
        # Sorted: the engine binds a container's mounts in an order of its own (seen both ways).
        lines = sorted(res["stdout"].splitlines())
        self.assertEqual(len(lines), 2, p.stderr + res["stdout"])
        self.assertTrue(lines[0].startswith("/opt/ws ['idmapped', 'nodev', 'noexec', 'nosuid', 'ro'] "), lines)
        self.assertEqual(lines[1], "/srv/ov ['nodev', 'noexec', 'nosuid', 'rw'] overlay", lines)

    def test_a_killed_runs_views_are_swept_at_the_next_start(self):
        src = self.project()
        args = [BINARY, "run", "--json", "--policy", self.policy, "--images", IMAGES, "--mount-root", DEPS,
                "--workspace", src, "--", "python3", "-c", "import time; time.sleep(60)"]
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mine = None
        deadline = time.time() + 60
        while time.time() < deadline and mine is None:
            mine = next((d for d in mount_dirs() if d.split("_")[-2:-1] == [str(p.pid)]), None)
            time.sleep(0.1)
        p.kill()
        p.wait()
        self.assertIsNotNone(mine, "the run made no views")
        self.assertTrue(mounted_under(mine))
        r = run_cli(["run", "--policy", self.policy, "--images", IMAGES, "--mount-root", DEPS, "-"], stdin="print('ran')\n")
        self.assertEqual((r.returncode, r.stdout), (0, "ran\n"), r.stderr)
        self.assertNotIn(mine, mount_dirs())
        self.assertFalse(mounted_under(mine))
        self.assertEqual(owned_by_pid(p.pid), [])
        self.assertEqual(tree_names(src), tree_names(self.project()))

    def test_refused_when_this_process_does_not_share_the_engines_files(self):
        # As in the orchestrator image: init reaches the boxes from elsewhere, so would the views.
        src = self.project()
        pol = self.policy_with([{"source": src, "target": "/opt/ws", "mode": "ro"}])
        p = subprocess.run([BINARY, "run", "--policy", pol, "--images", IMAGES, "--mount-root", src, "-"],
                           input="print('ran')\n", capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, LLM_SANDBOX_INIT_HOST_PATH="/elsewhere/llm-sandbox-init"))
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("ran", p.stdout)
        self.assertIn("container.mounts: this process does not share the engine host's files", p.stderr)

    def test_refused_where_it_cannot_be_enforced_runsc(self):
        src = self.project()
        pol = self.policy_with([{"source": src, "target": "/opt/ws", "mode": "ro"}])
        with open(pol) as f:
            text = f.read().replace("read_only: true", "read_only: true\n  runtime: runsc\n  gvisor_accept_weaker: true")
        with open(pol, "w") as f:
            f.write(text)
        p = run_cli(["run", "--policy", pol, "--images", IMAGES, "--mount-root", src, "-"], stdin="print('ran')\n")
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("ran", p.stdout)
        self.assertIn("container.mounts", p.stderr)


if __name__ == "__main__":
    unittest.main()
