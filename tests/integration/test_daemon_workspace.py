"""Workspaces and artifacts (docs/api.md "Archives", "Commands", "Files out") through the real
`llm-sandbox serve` on the native backend: a Python project uploaded as an archive, its tests run
as a command, the JUnit XML report back through collect; every hostile archive refused naming its
entry, with nothing written; collect's error entries; a directory back as a tar. CTest runs it on
native (integration_daemon); LLM_SANDBOX_BACKEND=docker runs the same file on the Docker backend."""
import base64
import io
import json
import os
import tarfile
import unittest
import xml.etree.ElementTree as ET
import zipfile

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite

# A small project: a package in subfolders, a unittest suite, and a tiny JUnit reporter of its own
# (pytest is not in the box; the reporter is what `pytest --junitxml` would write).
PROJECT = {
    "calc/__init__.py": "from calc.ops.arith import add, mul\n",
    "calc/ops/__init__.py": "",
    "calc/ops/arith.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/__init__.py": "",
    "tests/test_arith.py": (
        "import unittest\n"
        "from calc import add, mul\n\n\n"
        "class Arith(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n"
        "    def test_known_bug(self):\n        self.assertEqual(add(0.1, 0.2), 0.3)\n"),
    "tools/junit.py": (
        "import os, sys, unittest\n"
        "from xml.sax.saxutils import quoteattr\n"
        "root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "sys.path.insert(0, root)\n"
        "suite = unittest.defaultTestLoader.discover(os.path.join(root, 'tests'), top_level_dir=root)\n"
        "cases = []\n"
        "def walk(s):\n"
        "    for t in s:\n"
        "        walk(t) if isinstance(t, unittest.TestSuite) else cases.append(t.id())\n"
        "walk(suite)  # before the run, which lets go of each test it ran\n"
        "result = unittest.TestResult()\n"
        "suite.run(result)\n"
        "failed = {t.id(): m for t, m in result.failures + result.errors}\n"
        "out = sys.argv[1]\n"
        "os.makedirs(os.path.dirname(out), exist_ok=True)\n"
        "with open(out, 'w') as f:\n"
        "    f.write('<testsuite name=\"calc\" tests=\"%d\" failures=\"%d\">\\n' % (len(cases), len(failed)))\n"
        "    for t in cases:\n"
        "        f.write('<testcase name=%s>' % quoteattr(t))\n"
        "        if t in failed:\n"
        "            f.write('<failure message=%s/>' % quoteattr(failed[t].splitlines()[-1]))\n"
        "        f.write('</testcase>\\n')\n"
        "    f.write('</testsuite>\\n')\n"
        "print('ran', len(cases), 'failed', len(failed))\n"
        "sys.exit(1 if failed else 0)\n"),
}


def tar_of(files, mode="w:gz", extra=None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for name, content in files.items():
            data = content.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
        for info in extra or []:
            t.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return buf.getvalue()


def zip_of(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in files.items():
            z.writestr(name, content)
    return buf.getvalue()


def b64(data):
    return base64.b64encode(data).decode()


class WorkspaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.d = Daemon("--max-concurrency", "2")
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def call(self, method, path, template=None, body=None, **kw):
        r = request(self.d.base, method, path, body=body, **kw)
        if template and r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def execute(self, body, status=200):
        r = self.call("POST", "/v1/execute", "/v1/execute", body)
        self.assertEqual(r.status, status, r.body[:3000])
        return r.json()

    def session(self):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", {"language": "python"})
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(lambda: request(self.d.base, "DELETE", f"/v1/sessions/{sid}"))
        return sid

    def put_archive(self, sid, path, data):
        return self.call("PUT", f"/v1/sessions/{sid}/archive?path={path}", "/v1/sessions/{id}/archive",
                         data, raw=True)

    # ---- Must show #1 (native): project in as an archive, tests as a command, JUnit XML out

    def test_project_archive_runs_its_suite_as_a_command_and_returns_the_junit_report(self):
        res = self.execute({
            "files": [{"path": "/tmp/work", "archive_base64": b64(tar_of(PROJECT))}],
            "command": ["python3", "/tmp/work/tools/junit.py", "/tmp/work/reports/junit.xml"],
            "collect": ["/tmp/work/reports/*.xml", "/tmp/work/calc/ops/arith.py"],
        })
        self.assertEqual(res["status"], "error", res)  # one test fails, as it should
        self.assertEqual(res["exit_code"], 1)
        self.assertIn("ran 3 failed 1", res["stdout"], res["stderr"])
        report, source = res["collected"]
        self.assertEqual(report["path"], "/tmp/work/reports/junit.xml")
        suite = ET.fromstring(report["content"])
        self.assertEqual((suite.get("tests"), suite.get("failures")), ("3", "1"))
        failing = [c.get("name") for c in suite if c.find("failure") is not None]
        self.assertEqual(failing, ["tests.test_arith.Arith.test_known_bug"])
        self.assertEqual(source["content"], PROJECT["calc/ops/arith.py"])
        self.assertEqual(source["size"], len(PROJECT["calc/ops/arith.py"]))

    def test_unittest_runs_as_a_plain_command(self):
        res = self.execute({
            "files": [{"path": "/tmp/work", "archive_base64": b64(zip_of(PROJECT))}],
            "command": ["python3", "-m", "unittest", "discover", "-s", "/tmp/work/tests", "-t", "/tmp/work"],
        })
        self.assertEqual(res["status"], "error", res)
        self.assertIn("Ran 3 tests", res["stderr"])
        self.assertIn("FAILED (failures=1)", res["stderr"])

    def test_batch_tasks_each_get_their_archive_and_collect(self):
        tasks = [{"files": [{"path": "/tmp/in", "archive_base64": b64(tar_of({"n.txt": str(i)}, "w"))}],
                  "code": f"open('/tmp/out.txt','w').write(open('/tmp/in/n.txt').read()*{i + 1})",
                  "language": "python", "collect": ["/tmp/out.txt"]} for i in range(3)]
        r = self.call("POST", "/v1/batch", "/v1/batch", {"tasks": tasks})
        self.assertEqual(r.status, 200, r.body[:2000])
        got = [t["collected"][0]["content"] for t in r.json()["results"]]
        self.assertEqual(got, ["0", "11", "222"])

    # ---- commands

    def test_command_outside_the_allowlist_is_403_before_any_box(self):
        r = self.call("POST", "/v1/execute", "/v1/execute", {"command": ["/usr/bin/curl", "example.com"]})
        self.assertEqual(r.status, 403, r.body)
        self.assertIn("command[0]: /usr/bin/curl is not in commands.allow", r.json()["error"]["message"])
        r = self.call("POST", "/v1/execute", "/v1/execute", {"command": ["nc", "-l"]})
        self.assertEqual(r.status, 403, r.body)
        r = self.call("POST", "/v1/execute", "/v1/execute", {"code": "1", "command": ["python3"]})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("exactly one of code and command", r.json()["error"]["message"])

    def test_command_in_a_session_sees_the_uploaded_archive(self):
        sid = self.session()
        r = self.put_archive(sid, "/tmp/work", tar_of(PROJECT, "w"))
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(r.json()["files"], len(PROJECT))
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                      {"command": ["python3", "-c", "import sys; sys.path.insert(0, '/tmp/work'); import calc; print(calc.mul(6, 7))"],
                       "collect": ["/tmp/work/calc/__init__.py"]})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["stdout"], "42\n")
        self.assertEqual(r.json()["collected"][0]["content"], PROJECT["calc/__init__.py"])

    # ---- hostile archives: refused, naming the entry, nothing written

    def assertRefused(self, sid, data, status, words):
        r = self.put_archive(sid, "/tmp/hostile", data)
        self.assertEqual(r.status, status, r.body)
        self.assertIn(words, r.json()["error"]["message"])
        # The good entry before the bad one was not written either.
        g = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/hostile/good.txt")
        self.assertEqual(g.status, 404, g.body)

    def test_hostile_archives_are_refused_and_write_nothing(self):
        sid = self.session()
        good = {"good.txt": "fine"}
        sym = tarfile.TarInfo("link")
        sym.type, sym.linkname = tarfile.SYMTYPE, "/etc"
        hard = tarfile.TarInfo("passwd")
        hard.type, hard.linkname = tarfile.LNKTYPE, "/etc/passwd"
        dev = tarfile.TarInfo("null")
        dev.type, dev.devmajor, dev.devminor = tarfile.CHRTYPE, 1, 3
        fifo = tarfile.TarInfo("pipe")
        fifo.type = tarfile.FIFOTYPE
        absolute = tarfile.TarInfo("/etc/cron.d/evil")
        absolute.size = 1
        dotdot = tarfile.TarInfo("../../escape")
        dotdot.size = 1
        cases = [
            (tar_of(good, extra=[absolute]), 400, "'/etc/cron.d/evil' is refused: an absolute name"),
            (tar_of(good, extra=[dotdot]), 400, "'../../escape' is refused: a '..' component"),
            (tar_of(good, extra=[sym]), 400, "'link' is refused: a symbolic link"),
            (tar_of(good, extra=[hard]), 400, "'passwd' is refused: a hard link to '/etc/passwd'"),
            (tar_of(good, extra=[dev]), 400, "'null' is refused: a device node"),
            (tar_of(good, extra=[fifo]), 400, "'pipe' is refused: a FIFO"),
            (zip_of({"good.txt": "fine", "../../etc/passwd": "x"}), 400, "'../../etc/passwd' is refused"),
            (b"this is not an archive" * 40, 400, "send a tar, tar.gz, tar.zst or zip"),
        ]
        for data, status, words in cases:
            with self.subTest(words=words):
                self.assertRefused(sid, data, status, words)

    def test_tar_bomb_past_the_bounds_is_413(self):
        sid = self.session()
        bomb = tar_of({"good.txt": "fine", "zeros": "\0" * (40 << 20)})  # ~40 KiB gzip, ratio ~1000
        self.assertRefused(sid, bomb, 413, "a compression bomb is refused")
        many = tar_of({f"f{i}": "" for i in range(10001)})
        r = self.put_archive(sid, "/tmp/many", many)
        self.assertEqual(r.status, 413, r.body)
        self.assertIn("more than 10000 entries", r.json()["error"]["message"])

    def test_setuid_bits_are_stripped_and_the_exec_bit_kept(self):
        sid = self.session()
        s = tarfile.TarInfo("tool.sh")
        s.size, s.mode = 1, 0o6755
        r = self.put_archive(sid, "/tmp/m", tar_of({}, extra=[s]))
        self.assertEqual(r.status, 201, r.body)
        r = self.call("POST", f"/v1/sessions/{sid}/execute", None,
                      {"code": "import os; print(oct(os.stat('/tmp/m/tool.sh').st_mode & 0o7777))"})
        self.assertEqual(r.json()["stdout"].strip(), "0o755", r.body)

    def test_inline_archive_errors_name_the_file_entry(self):
        r = self.call("POST", "/v1/execute", "/v1/execute",
                      {"code": "1", "language": "python",
                       "files": [{"path": "/etc", "archive_base64": b64(tar_of({"a": "b"}))}]})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("files[0].path: path '/etc' is outside the sandbox's writable dirs", r.json()["error"]["message"])

    # ---- files out

    def test_collect_returns_binary_as_base64_and_an_error_per_file_it_cannot_return(self):
        res = self.execute({
            "language": "python",
            "code": ("import os\nos.makedirs('/tmp/out', exist_ok=True)\n"
                     "open('/tmp/out/a.png','wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(range(256)))\n"
                     "open('/tmp/out/b.png','wb').write(b'\\x89PNG2')\n"
                     "os.mkfifo('/tmp/out/c.png')\n"
                     "os.symlink('/etc/passwd', '/tmp/out/d.png')\n"
                     "open('/tmp/big.bin','wb').write(b'x' * (9 << 20))\n"),
            "collect": ["/tmp/out/*.png", "/tmp/none/*.xml", "/tmp/big.bin"],
        })
        by_path = {c["path"]: c for c in res["collected"]}
        self.assertEqual(base64.b64decode(by_path["/tmp/out/a.png"]["content_base64"]),
                         b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
        self.assertEqual(by_path["/tmp/out/b.png"]["size"], 5)
        self.assertIn("not a regular file", by_path["/tmp/out/c.png"]["error"])
        self.assertIn("error", by_path["/tmp/out/d.png"])  # a symlink is never followed
        self.assertNotIn("content", by_path["/tmp/out/d.png"])
        self.assertEqual(by_path["/tmp/none/*.xml"]["error"], "no file matches")
        self.assertIn("the limit is 8388608", by_path["/tmp/big.bin"]["error"])

    def test_collect_outside_the_writable_dirs_is_refused(self):
        r = self.call("POST", "/v1/execute", "/v1/execute", {"code": "1", "collect": ["/etc/*"]})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("collect[0]: path '/etc/*' is outside the sandbox's writable dirs", r.json()["error"]["message"])

    def test_session_directory_comes_back_as_a_tar(self):
        sid = self.session()
        self.assertEqual(self.put_archive(sid, "/tmp/work", tar_of(PROJECT)).status, 201)
        self.call("POST", f"/v1/sessions/{sid}/execute", None,
                  {"code": "import os; os.symlink('/etc/passwd', '/tmp/work/leak'); open('/tmp/work/new.txt','w').write('n')"})
        r = self.call("GET", f"/v1/sessions/{sid}/archive?path=/tmp/work")
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.headers["Content-Type"], "application/x-tar")
        self.assertEqual(r.headers["X-Archive-Skipped"], "1")  # the symlink
        with tarfile.open(fileobj=io.BytesIO(r.body)) as t:
            names = {m.name: m for m in t.getmembers()}
            self.assertEqual(t.extractfile("calc/ops/arith.py").read().decode(), PROJECT["calc/ops/arith.py"])
            self.assertEqual(t.extractfile("new.txt").read(), b"n")
        self.assertNotIn("leak", names)
        self.assertTrue(names["calc/ops"].isdir())
        r = self.call("GET", f"/v1/sessions/{sid}/archive?path=/tmp/absent")
        self.assertEqual(r.status, 404, r.body)


if __name__ == "__main__":
    unittest.main()
