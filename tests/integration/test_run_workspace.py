"""Host workspaces (docs/policy.md "container.mounts", docs/api.md "Host workspaces") through the
real `llm-sandbox run` on the native backend: a Python project with a package in subfolders and a
pytest suite mounted with --workspace, its tests run as a command, the JUnit XML back through
--collect, a fixing program's change set as a patch `git apply` takes on the original tree, and
the host directory untouched. Then the attacks: sources outside the allowed roots (directly, by
'..', through a symlinked path), a symlink in the source pointing out, writes through a read-only
mount and through an overlay reaching the host, targets the sandbox owns, Landlock kept to the
target. On Docker: tests/docker/test_docker_workspace.py runs these cases again."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import IMAGES, SandboxTestCase, python_policy, run_cli
from test_daemon_changes import FIX, PROJECT, tree

POLICY = python_policy("workspace-test", 120)

PYTEST = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
          "--junitxml=/workspace/reports/junit.xml", "tests"]


def write_project(root):
    for name, (content, mode) in PROJECT.items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        os.chmod(p, mode)


@unittest.skipUnless(os.geteuid() == 0, "host workspaces need the daemon (here: the CLI) as root")
class WorkspaceTest(SandboxTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = tempfile.mkdtemp(prefix="lsb-ws-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.policy = os.path.join(cls.dir, "workspace-test.yaml")
        with open(cls.policy, "w") as f:
            f.write(POLICY)

    def project(self):
        d = tempfile.mkdtemp(prefix="proj-", dir=self.dir)
        write_project(d)
        return d

    def run_json(self, args, stdin=None):
        p = run_cli(["run", "--json", "--policy", self.policy, "--images", IMAGES] + args, stdin=stdin, timeout=180)
        try:
            return json.loads(p.stdout), p
        except json.JSONDecodeError:
            self.fail(f"no JSON (exit {p.returncode}): {p.stdout[:2000]} {p.stderr[:2000]}")

    def policy_with(self, mounts):
        """A policy file with container.mounts (a YAML flow list)."""
        path = os.path.join(tempfile.mkdtemp(dir=self.dir), "mounts.yaml")
        with open(path, "w") as f:
            f.write(POLICY.replace("  tmpfs:\n", "  mounts: " + json.dumps(mounts) + "\n  tmpfs:\n"))
        return path

    # ---- the must-show case

    def test_pytest_suite_in_a_workspace_junit_back_and_a_patch_git_applies(self):
        ws = self.project()
        before = tree(ws)
        env_args = []
        res, p = self.run_json(["--workspace", ws, "--collect", "/workspace/reports/*.xml", *env_args, "--"] + PYTEST)
        self.assertEqual(res["exit_code"], 1, p.stderr + json.dumps(res)[:3000])  # the mul bug
        self.assertIn("1 failed, 1 passed", res["stdout"], res)
        collected = res["collected"]
        self.assertEqual(len(collected), 1, collected)
        self.assertIn('failures="1"', collected[0]["content"])
        self.assertIn('name="test_mul"', collected[0]["content"])
        self.assertEqual(tree(ws), before, "the run wrote into the host directory")
        self.assertFalse(os.path.exists(os.path.join(ws, "reports")))

        # The fixing program, then the tests again in the same run; its change set as a patch.
        fix = os.path.join(self.dir, "fix.py")
        with open(fix, "w") as f:
            f.write(FIX.replace("/tmp/work", "/workspace") +
                    "import subprocess, sys\n"
                    "env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')\n"
                    "r = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], env=env)\n"
                    "sys.exit(r.returncode)\n")
        res, p = self.run_json(["--workspace", ws, "--changes", "/workspace", "--lang", "python", fix])
        self.assertEqual(res["status"], "ok", p.stderr + json.dumps(res)[:3000])
        self.assertIn("2 passed", res["stdout"])
        ch = res["changes"]
        self.assertEqual(ch["root"], "/workspace")
        self.assertTrue(ch["complete"], ch)
        kinds = {f["path"][len("/workspace/"):]: f["change"] for f in ch["files"]}
        self.assertEqual(kinds["calc/ops/arith.py"], "modified")
        self.assertEqual(kinds["calc/ops/compat.py"], "renamed")
        self.assertEqual(kinds["docs/notes"], "deleted")
        self.assertEqual(kinds["scripts/run.sh"], "mode_changed")
        self.assertEqual(tree(ws), before, "the fix reached the host directory")

        # git apply takes the patch on the original tree; the result is what FIX makes of a copy.
        patched, expected = self.project(), self.project()
        subprocess.run(["python3", "-c", FIX], env=dict(os.environ, ROOT=expected), check=True, capture_output=True)
        patch = os.path.join(self.dir, "fix.patch")
        with open(patch, "w") as f:
            f.write(ch["patch"])
        for args in (["--check"], []):
            r = subprocess.run(["git", "apply", *args, patch], cwd=patched, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr + "\n" + ch["patch"][:4000])
        self.assertEqual(tree(patched), tree(expected))

    def test_workspace_is_the_working_directory_and_owned_by_the_program(self):
        ws = self.project()
        res, p = self.run_json(["--workspace", ws, "-"], stdin=(
            "import os\nprint(os.getcwd())\nst = os.stat('calc/ops/arith.py')\n"
            "print(st.st_uid == os.getuid(), st.st_gid == os.getgid())\n"
            "os.makedirs('new/deep'); open('new/deep/f', 'w').write('x')\nprint(sorted(os.listdir('new')))\n"))
        self.assertEqual(res["stdout"], "/workspace\nTrue True\n['deep']\n", p.stderr + json.dumps(res)[:2000])
        self.assertFalse(os.path.exists(os.path.join(ws, "new")))

    # ---- refusals: where a source may come from

    def test_a_mount_outside_the_allowed_roots_is_refused_naming_source_and_flag(self):
        root = tempfile.mkdtemp(dir=self.dir)
        inside = os.path.join(root, "ok")
        os.mkdir(inside)
        outside = tempfile.mkdtemp(dir=self.dir)
        cases = {
            "no root at all": ([], outside),
            "outside": (["--mount-root", root], outside),
            "dot-dot": (["--mount-root", root], os.path.join(inside, "..", "..", os.path.basename(outside))),
        }
        link = os.path.join(root, "link")
        os.symlink(outside, link)  # inside the root by name, outside by its real path
        cases["symlinked path"] = (["--mount-root", root], link)
        for what, (flags, source) in cases.items():
            with self.subTest(what):
                pol = self.policy_with([{"source": os.path.normpath(source) if what != "dot-dot" else source,
                                         "target": "/data", "mode": "ro"}])
                p = run_cli(["run", "--policy", pol, "--images", IMAGES, *flags, "-"], stdin="print('ran')\n")
                self.assertNotEqual(p.returncode, 0)
                self.assertNotIn("ran", p.stdout)
                if what == "dot-dot":  # the loader refuses '..' before any daemon check
                    self.assertIn("container.mounts[0].source", p.stderr)
                    continue
                self.assertIn("container.mounts: source", p.stderr)
                self.assertIn("--mount-root", p.stderr)
        pol = self.policy_with([{"source": inside, "target": "/data", "mode": "ro"}])
        p = run_cli(["run", "--policy", pol, "--images", IMAGES, "--mount-root", root, "-"], stdin="print('ran')\n")
        self.assertEqual((p.returncode, p.stdout), (0, "ran\n"), p.stderr)

    def test_targets_the_sandbox_owns_are_refused(self):
        src = self.project()
        for target in ("/proc", "/proc/self", "/dev/shm", "/sys/fs", "/run/job", "/run", "/"):
            with self.subTest(target):
                pol = self.policy_with([{"source": src, "target": target, "mode": "ro"}])
                p = run_cli(["run", "--policy", pol, "--images", IMAGES, "--mount-root", src, "-"], stdin="print('ran')\n")
                self.assertNotEqual(p.returncode, 0)
                self.assertNotIn("ran", p.stdout)
                self.assertIn("container.mounts[0]", p.stderr)

    # ---- attacks from inside the box

    def test_a_symlink_in_the_source_leads_into_the_box_not_the_host(self):
        src = self.project()
        secret_dir = tempfile.mkdtemp(dir=self.dir)
        with open(os.path.join(secret_dir, "secret"), "w") as f:
            f.write("host secret\n")
        os.chmod(secret_dir, 0o755)
        os.symlink(os.path.join(secret_dir, "secret"), os.path.join(src, "abs-link"))
        os.symlink("../" * 12 + secret_dir.lstrip("/") + "/secret", os.path.join(src, "rel-link"))
        res, p = self.run_json(["--workspace", src, "-"], stdin=(
            "for n in ('abs-link', 'rel-link'):\n"
            "    try:\n        print(n, open(n).read().strip())\n"
            "    except OSError as e:\n        print(n, type(e).__name__)\n"))
        self.assertNotIn("host secret", res["stdout"], res)
        self.assertIn("abs-link FileNotFoundError", res["stdout"], p.stderr + json.dumps(res)[:2000])

    def test_a_read_only_mount_cannot_be_written_and_landlock_stays_on_the_target(self):
        src = self.project()
        before = tree(src)
        pol = self.policy_with([{"source": src, "target": "/opt/ws", "mode": "ro"}])
        code = ("import os\n"
                "print(open('/opt/ws/README.md').read())\n"
                "for op in (lambda: open('/opt/ws/README.md', 'a'), lambda: open('/opt/ws/new', 'w'),\n"
                "           lambda: os.chmod('/opt/ws/scripts/run.sh', 0o777), lambda: os.remove('/opt/ws/README.md'),\n"
                "           lambda: os.listdir('/opt/containerd'), lambda: os.mkdir('/opt/x')):\n"
                "    try:\n        op(); print('WROTE')\n"
                "    except OSError as e:\n        print(type(e).__name__)\n")
        p = run_cli(["run", "--json", "--policy", pol, "--images", IMAGES, "--mount-root", src, "-"], stdin=code)
        res = json.loads(p.stdout)
        self.assertEqual(res["status"], "ok", p.stderr + json.dumps(res)[:2000])
        out = res["stdout"]
        self.assertTrue(out.startswith("calc: small arithmetic"), out)
        self.assertNotIn("WROTE", out)
        self.assertEqual(tree(src), before)

    def test_overlay_writes_deletions_and_renames_never_reach_the_host(self):
        src = self.project()
        before = tree(src)
        pol = self.policy_with([{"source": src, "target": "/srv/ws", "mode": "overlay", "size": "8M"}])
        code = ("import os, shutil\n"
                "os.chdir('/srv/ws')\n"
                "open('README.md', 'w').write('changed')\nshutil.rmtree('docs')\nshutil.move('calc', 'calc2')\n"
                "os.chmod('scripts/run.sh', 0o777)\nos.symlink('/etc/passwd', 'pw')\n"
                "try:\n    open('big', 'wb').write(b'x' * (16 << 20)); print('FILLED')\n"
                "except OSError as e:\n    print(type(e).__name__)\n"
                "print(sorted(os.listdir('.')))\n")
        p = run_cli(["run", "--json", "--policy", pol, "--images", IMAGES, "--mount-root", src, "-"], stdin=code)
        res = json.loads(p.stdout)
        self.assertEqual(res["status"], "ok", p.stderr + json.dumps(res)[:2000])
        self.assertIn("OSError", res["stdout"])  # ENOSPC: the overlay's upper is bounded by size
        self.assertNotIn("FILLED", res["stdout"])
        self.assertIn("'calc2'", res["stdout"])
        self.assertEqual(tree(src), before)
        self.assertFalse(os.path.lexists(os.path.join(src, "pw")))


if __name__ == "__main__":
    unittest.main()
