"""Change sets (docs/api.md "Change sets") through the real `llm-sandbox serve`: a Python project
(a package in subfolders, a pytest suite) uploaded as an archive, its tests run as a command with
the JUnit XML back through collect, then a fixing program's change set (an edit, an exact rename,
a binary file changed, one deleted, a deleted directory, a mode change, a new file and a symlink)
as a patch that `git apply` accepts on the original tree and that turns it into exactly what the
same program makes of a local copy. CTest runs it on native (integration_daemon); on Docker,
tests/docker/test_docker_workspace.py runs these cases again (integration_docker)."""
import base64
import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import unittest
import xml.etree.ElementTree as ET

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite
from harness import python_policy

POLICY = python_policy("changes-test", 180)

PROJECT = {
    "README.md": ("calc: small arithmetic", 0o644),  # no newline at the end
    "calc/__init__.py": ("from calc.ops.arith import add, mul\n", 0o644),
    "calc/ops/__init__.py": ("", 0o644),
    "calc/ops/arith.py": ("def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b - 1\n", 0o644),
    "calc/ops/legacy.py": ("# kept for old callers\nOLD_NAME = 'calc'\n", 0o644),
    "calc/data/table.bin": (bytes(range(256)), 0o644),
    "calc/data/logo.bin": (b"\x89PNG\r\n\x1a\n\x00\x00fake", 0o644),
    "docs/notes/a.txt": ("first note\n", 0o644),
    "docs/notes/b.txt": ("second note\n", 0o644),
    "scripts/run.sh": ("python3 -m pytest\n", 0o644),
    "tests/__init__.py": ("", 0o644),
    "tests/test_arith.py": ("from calc import add, mul\n\n\n"
                            "def test_add():\n    assert add(2, 3) == 5\n\n\n"
                            "def test_mul():\n    assert mul(2, 3) == 6\n", 0o644),
}

# The fixing program: runs in the box on /tmp/work and here on a local copy (ROOT).
FIX = """import os, shutil
root = os.environ.get('ROOT', '/tmp/work')
p = root + '/calc/ops/arith.py'
text = open(p).read().replace('a * b - 1', 'a * b')
open(p, 'w').write(text)
os.rename(root + '/calc/ops/legacy.py', root + '/calc/ops/compat.py')
open(root + '/calc/data/table.bin', 'wb').write(bytes(range(255, -1, -1)) * 3)
os.remove(root + '/calc/data/logo.bin')
shutil.rmtree(root + '/docs/notes')
os.chmod(root + '/scripts/run.sh', 0o755)
open(root + '/calc/ops/util.py', 'w').write('def neg(a):\\n    return -a\\n')
open(root + '/README.md', 'a').write(' (fixed)\\n')
os.symlink('arith.py', root + '/calc/ops/link.py')
print('fixed')
"""


def project_tar():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, (content, mode) in PROJECT.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tree(root):
    """{relative path: (kind, mode bits git keeps, bytes or link target)} of a local tree."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                continue  # git knows a directory only by its files
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", st.st_mode & 0o100, f.read())
    return out


class ChangesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.dir = tempfile.mkdtemp(prefix="lsb-changes-")
        with open(os.path.join(cls.dir, "changes-test.yaml"), "w") as f:
            f.write(POLICY)
        cls.d = Daemon("--max-concurrency", "2", policies=cls.dir)
        cls.addClassCleanup(cls.d.close)
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.archive = base64.b64encode(project_tar()).decode()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def execute(self, body, status=200):
        body = {"policy": "changes-test", **body}
        r = request(self.d.base, "POST", "/v1/execute", body=body, timeout=600)
        self.assertEqual(r.status, status, r.body[:3000])
        self.api.check("POST", "/v1/execute", r.status, r.json())
        return r.json()

    def upload(self):
        return [{"path": "/tmp/work", "archive_base64": self.archive}]

    def local_copy(self):
        d = tempfile.mkdtemp(prefix="lsb-changes-tree-")
        self.addCleanup(shutil.rmtree, d, True)
        with tarfile.open(fileobj=io.BytesIO(project_tar())) as t:
            t.extractall(d)
        return d

    # ---- the must-show case

    def test_pytest_suite_as_a_command_with_its_junit_report(self):
        res = self.execute({
            "files": self.upload(),
            "command": ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--junitxml=/tmp/reports/junit.xml", "/tmp/work/tests"],
            "env": {"PYTHONDONTWRITEBYTECODE": "1"},
            "collect": ["/tmp/reports/*.xml"],
        })
        self.assertEqual(res["exit_code"], 1, res)  # the mul bug
        self.assertIn("1 failed, 1 passed", res["stdout"], res)
        suite = ET.fromstring(res["collected"][0]["content"])
        cases = suite if suite.tag == "testsuite" else suite.find("testsuite")
        self.assertEqual((cases.get("tests"), cases.get("failures")), ("2", "1"))
        failing = [c.get("name") for c in cases.iter("testcase") if c.find("failure") is not None]
        self.assertEqual(failing, ["test_mul"])

    def test_a_fixing_programs_change_set_applies_with_git_apply(self):
        res = self.execute({
            "files": self.upload(), "language": "python", "changes": "/tmp/work",
            "code": FIX + ("import subprocess, sys\n"
                           "env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')\n"
                           "r = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',\n"
                           "                    '--junitxml=/tmp/reports/junit.xml', '/tmp/work/tests'], env=env)\n"
                           "sys.exit(r.returncode)\n"),
            "collect": ["/tmp/reports/junit.xml"],
        })
        self.assertEqual(res["status"], "ok", res)
        self.assertIn("2 passed", res["stdout"])
        self.assertIn('failures="0"', res["collected"][0]["content"])
        ch = res["changes"]
        self.assertEqual(ch["root"], "/tmp/work")
        self.assertTrue(ch["complete"], ch)
        kinds = {f["path"][len("/tmp/work/"):]: f["change"] for f in ch["files"]}
        self.assertEqual(kinds, {
            "README.md": "modified",
            "calc/ops/arith.py": "modified",
            "calc/ops/compat.py": "renamed",
            "calc/data/table.bin": "modified",
            "calc/data/logo.bin": "deleted",
            "docs/notes": "deleted",
            "docs/notes/a.txt": "deleted",
            "docs/notes/b.txt": "deleted",
            "scripts/run.sh": "mode_changed",
            "calc/ops/util.py": "added",
            "calc/ops/link.py": "added",
        })  # nothing under /tmp/reports: outside the root asked for; no staged outputs either
        by = {f["path"]: f for f in ch["files"]}
        self.assertEqual(by["/tmp/work/calc/ops/compat.py"]["old_path"], "/tmp/work/calc/ops/legacy.py")
        self.assertEqual((by["/tmp/work/scripts/run.sh"]["old_mode"], by["/tmp/work/scripts/run.sh"]["mode"]), ("0644", "0755"))
        self.assertTrue(by["/tmp/work/calc/data/table.bin"]["binary"])
        self.assertEqual(by["/tmp/work/calc/ops/link.py"]["kind"], "symlink")
        self.assertEqual(by["/tmp/work/docs/notes"]["kind"], "directory")
        self.assertIn("-    return a * b - 1\n+    return a * b\n", by["/tmp/work/calc/ops/arith.py"]["diff"])
        self.assertIn("\\ No newline at end of file", by["/tmp/work/README.md"]["diff"])

        # git apply takes the patch on the original tree, and the result is what FIX makes of it.
        patched, expected = self.local_copy(), self.local_copy()
        subprocess.run(["python3", "-c", FIX], env=dict(os.environ, ROOT=expected), check=True, capture_output=True)
        with open(os.path.join(self.dir, "fix.patch"), "w") as f:
            f.write(ch["patch"])
        for args in (["--check"], []):
            r = subprocess.run(["git", "apply", *args, os.path.join(self.dir, "fix.patch")], cwd=patched,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr + "\n" + ch["patch"][:4000])
        self.assertEqual(tree(patched), tree(expected))

    def test_changes_true_covers_every_writable_path_and_uploads_are_the_baseline(self):
        res = self.execute({"files": self.upload() + [{"path": "/tmp/in.txt", "content": "given\n"}],
                            "language": "python", "changes": True,
                            "code": "open('/tmp/out.txt', 'w').write('made\\n')\nopen('/tmp/in.txt', 'a').write('more\\n')\n"})
        ch = res["changes"]
        self.assertEqual(ch["root"], "/")
        self.assertEqual({f["path"]: f["change"] for f in ch["files"]},
                         {"/tmp/out.txt": "added", "/tmp/in.txt": "modified"})
        self.assertIn("diff --git a/tmp/out.txt b/tmp/out.txt\nnew file mode 100644\n", ch["patch"])
        self.assertIn("+more\n", ch["patch"])

    def test_no_change_is_an_empty_set_and_a_figure_stage_is_not_a_change(self):
        code = "print('nothing')\n"
        if subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"], capture_output=True).returncode == 0:
            code += "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n"
        res = self.execute({"files": self.upload(), "language": "python", "changes": "/tmp", "code": code})
        paths = [f["path"] for f in res["changes"]["files"]]
        # Matplotlib's own cache (HOME is /tmp) is the program's change; the figures' stage is not.
        self.assertEqual([p for p in paths if not p.startswith(("/tmp/.cache", "/tmp/.config"))], [], paths)
        self.assertNotIn(".lsb-outputs", res["changes"]["patch"])
        res = self.execute({"files": self.upload(), "language": "python", "changes": "/tmp/work", "code": "print(1)"})
        self.assertEqual((res["changes"]["files"], res["changes"]["patch"]), ([], ""))

    # ---- refusals and bounds

    def test_bad_changes_requests_are_refused_naming_the_field(self):
        for value, words in ((5, "must be true"), ("/etc", "changes:"), ("relative/dir", "changes:")):
            r = request(self.d.base, "POST", "/v1/execute",
                        body={"policy": "changes-test", "code": "1", "changes": value})
            self.assertEqual(r.status, 400, (value, r.body))
            self.assertIn(words, r.json()["error"]["message"])

    def test_a_flood_of_files_ends_in_an_error_not_an_unbounded_manifest(self):
        res = self.execute({"language": "python", "changes": "/tmp",
                            "code": "import os\nos.makedirs('/tmp/many')\n"
                                    "for i in range(20500):\n    open('/tmp/many/%d' % i, 'w').close()\n"})
        self.assertEqual(res["status"], "ok", res)
        self.assertIn("more than 20000 files and directories", res["changes"]["error"])

    def test_a_symlink_planted_at_the_root_is_not_followed(self):
        res = self.execute({"language": "python", "changes": "/tmp",
                            "code": "import os\nos.symlink('/etc', '/tmp/etc')\nos.symlink('/etc/passwd', '/tmp/pw')\n"})
        ch = res["changes"]
        self.assertEqual({f["path"]: f["kind"] for f in ch["files"]}, {"/tmp/etc": "symlink", "/tmp/pw": "symlink"})
        self.assertNotIn("root:", ch["patch"])  # the link's target, not the file it names

    # ---- session change sets

    def test_a_sessions_change_set_since_its_upload_applies_with_git_apply(self):
        r = request(self.d.base, "POST", "/v1/sessions", body={"policy": "changes-test", "changes": True})
        self.assertEqual(r.status, 201, r.body[:2000])
        sid = r.json()["session_id"]
        self.addCleanup(request, self.d.base, "DELETE", f"/v1/sessions/{sid}")
        base = f"/v1/sessions/{sid}"
        r = request(self.d.base, "PUT", base + "/archive?path=/tmp/work", body=project_tar(), raw=True)
        self.assertEqual(r.status, 201, r.body[:2000])
        r = request(self.d.base, "GET", base + "/changes?path=/tmp/work")
        self.assertEqual((r.status, r.json()["files"]), (200, []), r.body[:2000])  # the upload is the baseline
        r = request(self.d.base, "POST", base + "/execute", body={"code": FIX}, timeout=120)
        self.assertEqual(r.status, 200, r.body[:2000])
        r = request(self.d.base, "POST", base + "/execute",
                    body={"code": "open('/tmp/work/later.txt', 'w').write('second execution\\n')"})
        self.assertEqual(r.status, 200, r.body[:2000])
        r = request(self.d.base, "GET", base + "/changes?path=/tmp/work")
        self.assertEqual(r.status, 200, r.body[:2000])
        self.api.check("GET", "/v1/sessions/{id}/changes", r.status, r.json())
        ch = r.json()
        kinds = {f["path"][len("/tmp/work/"):]: f["change"] for f in ch["files"]}
        self.assertEqual(kinds["calc/ops/compat.py"], "renamed")
        self.assertEqual(kinds["later.txt"], "added")
        patched, expected = self.local_copy(), self.local_copy()
        subprocess.run(["python3", "-c", FIX], env=dict(os.environ, ROOT=expected), check=True, capture_output=True)
        with open(os.path.join(expected, "later.txt"), "w") as f:
            f.write("second execution\n")
        patch = os.path.join(self.dir, "session.patch")
        with open(patch, "w") as f:
            f.write(ch["patch"])
        r2 = subprocess.run(["git", "apply", patch], cwd=patched, capture_output=True, text=True)
        self.assertEqual(r2.returncode, 0, r2.stderr + ch["patch"][:3000])
        self.assertEqual(tree(patched), tree(expected))
        # All writable dirs when no path is given; a path outside them is refused.
        r = request(self.d.base, "GET", base + "/changes")
        self.assertEqual((r.status, r.json()["root"]), (200, "/"))
        r = request(self.d.base, "GET", base + "/changes?path=/etc")
        self.assertEqual(r.status, 400, r.body)

    def test_a_session_without_the_flag_has_no_change_sets(self):
        r = request(self.d.base, "POST", "/v1/sessions", body={"policy": "changes-test"})
        sid = r.json()["session_id"]
        self.addCleanup(request, self.d.base, "DELETE", f"/v1/sessions/{sid}")
        r = request(self.d.base, "GET", f"/v1/sessions/{sid}/changes")
        self.assertEqual(r.status, 400, r.body)
        self.assertIn('"changes": true', r.json()["error"]["message"])
        r = request(self.d.base, "POST", "/v1/sessions", body={"policy": "changes-test", "changes": "yes"})
        self.assertEqual(r.status, 400, r.body)


if __name__ == "__main__":
    unittest.main()
