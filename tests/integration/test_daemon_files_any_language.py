"""Files for every language (issue 34; docs/api.md "Files in every box"): the shipped bash-tools and
node policies, which allow no python, take a directory as an archive, run a command on it, give a
report back through `collect` and a change set that `git apply` takes on a pristine copy; the same
through the CLI (--workspace, --collect, --changes); a session's file-system API (list, stat,
mkdir, rename, remove) answers without any interpreter, leaves a bash session's state alone, and
bounds a listing of a huge directory. Init's file worker does the work (runtime/box_files.h)."""
import base64
import http.client
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
import unittest

from daemon_harness import POLICY_DIR, Daemon, OpenApi, request, skip_unless_daemon_suite
from harness import IMAGES, run_cli

PROJECT = {
    "README.md": "# demo\n",
    "src/count.sh": "#!/bin/sh\nwc -l < \"$1\"\n",
    "src/app.js": "const answer = 41;\nmodule.exports = { answer };\n",
    "data/lines.txt": "a\nb\nc\n",
}


def project_tar():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in PROJECT.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write_tree(root):
    for name, text in PROJECT.items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o755 if name.endswith(".sh") else 0o644)


def tree(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


class FilesAnyLanguageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.d = Daemon("--max-concurrency", "4")
        cls.addClassCleanup(cls.d.close)
        cls.dir = tempfile.mkdtemp(prefix="lsb-files-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)

    def call(self, method, path, template, body=None, raw=False):
        r = request(self.d.base, method, path, body=body, raw=raw)
        if r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def assert_patch_applies(self, patch, change):
        """`patch` taken by git apply on a pristine copy gives what `change` makes of another."""
        pristine, expected = (tempfile.mkdtemp(dir=self.dir) for _ in range(2))
        write_tree(pristine)
        write_tree(expected)
        change(expected)
        path = os.path.join(self.dir, "p.patch")
        with open(path, "w") as f:
            f.write(patch)
        r = subprocess.run(["git", "apply", path], cwd=pristine, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr + "\n" + patch)
        self.assertEqual(tree(pristine), tree(expected))

    def test_bash_tools_archive_command_collect_and_changes(self):
        body = {"policy": "bash-tools",
                "files": [{"path": "/tmp/proj", "archive_base64": base64.b64encode(project_tar()).decode()}],
                "command": ["bash", "-c", "cd /tmp/proj && sh src/count.sh data/lines.txt > report.txt && "
                                          "echo d >> data/lines.txt && rm README.md && echo done"],
                "collect": ["/tmp/proj/report.txt"], "changes": "/tmp/proj"}
        r = self.call("POST", "/v1/execute", "/v1/execute", body)
        self.assertEqual(r.status, 200, r.body)
        res = r.json()
        self.assertEqual((res["status"], res["stdout"]), ("ok", "done\n"), res)
        self.assertEqual([(c["path"], c["content"]) for c in res["collected"]], [("/tmp/proj/report.txt", "3\n")])
        kinds = {f["path"]: f["change"] for f in res["changes"]["files"]}
        self.assertEqual(kinds, {"/tmp/proj/data/lines.txt": "modified", "/tmp/proj/README.md": "deleted",
                                 "/tmp/proj/report.txt": "added"}, res["changes"])

        def change(root):
            with open(os.path.join(root, "data/lines.txt"), "a") as f:
                f.write("d\n")
            os.remove(os.path.join(root, "README.md"))
            with open(os.path.join(root, "report.txt"), "w") as f:
                f.write("3\n")
        self.assert_patch_applies(res["changes"]["patch"], change)

    def test_node_session_upload_edit_changes_and_download(self):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", {"policy": "node", "changes": True})
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(self.call, "DELETE", f"/v1/sessions/{sid}", "/v1/sessions/{id}")
        r = self.call("PUT", f"/v1/sessions/{sid}/archive?path=/tmp/proj", "/v1/sessions/{id}/archive",
                      body=project_tar(), raw=True)
        self.assertEqual(r.status, 201, r.body)
        code = ("const fs = require('fs');\nglobalThis.seen = fs.readFileSync('/tmp/proj/src/app.js', 'utf8');\n"
                "fs.writeFileSync('/tmp/proj/src/app.js', seen.replace('41', '42'));\n"
                "fs.writeFileSync('/tmp/proj/out.json', JSON.stringify({answer: require('/tmp/proj/src/app.js').answer}));\n")
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute", {"code": code})
        self.assertEqual(r.json()["status"], "ok", r.body)
        r = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/proj/out.json", "/v1/sessions/{id}/files")
        self.assertEqual((r.status, json.loads(r.body)), (200, {"answer": 42}))
        # The file ops ran beside the node context: its global is still there.
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                      {"code": "console.log(seen.length)"})
        self.assertEqual(r.json()["stdout"], "%d\n" % len(PROJECT["src/app.js"]), r.body)
        r = self.call("GET", f"/v1/sessions/{sid}/changes?path=/tmp/proj", "/v1/sessions/{id}/changes")
        self.assertEqual(r.status, 200, r.body)
        ch = r.json()
        kinds = {f["path"]: f["change"] for f in ch["files"]}
        self.assertEqual(kinds, {"/tmp/proj/src/app.js": "modified", "/tmp/proj/out.json": "added"}, ch)

        def change(root):
            with open(os.path.join(root, "src/app.js"), "w") as f:
                f.write(PROJECT["src/app.js"].replace("41", "42"))
            with open(os.path.join(root, "out.json"), "w") as f:
                f.write('{"answer":42}')
        self.assert_patch_applies(ch["patch"], change)

    def test_file_system_api_in_a_bash_session_keeps_its_state(self):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", {"policy": "bash-tools"})
        sid = r.json()["session_id"]
        self.addCleanup(self.call, "DELETE", f"/v1/sessions/{sid}", "/v1/sessions/{id}")
        ex = lambda code: self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                                    {"code": code}).json()
        self.assertEqual(ex("X=5; mkdir -p /tmp/w; printf 12345 > /tmp/w/f; ln -s /etc/passwd /tmp/w/l")["status"], "ok")
        r = self.call("POST", f"/v1/sessions/{sid}/fs/mkdir", "/v1/sessions/{id}/fs/mkdir",
                      {"path": "/tmp/w/a/b", "parents": True})
        self.assertEqual(r.status, 201, r.body)
        r = self.call("GET", f"/v1/sessions/{sid}/fs/list?path=/tmp/w", "/v1/sessions/{id}/fs/list")
        self.assertEqual(r.status, 200, r.body)
        entries = {e["name"]: e for e in r.json()["entries"]}
        self.assertEqual(sorted(entries), ["a", "f", "l"])
        self.assertEqual((entries["f"]["type"], entries["f"]["size"], entries["f"]["mode"]), ("file", 5, 0o644))
        self.assertEqual((entries["l"]["type"], entries["l"]["target"]), ("symlink", "/etc/passwd"))
        r = self.call("GET", f"/v1/sessions/{sid}/fs/stat?path=/tmp/w/a", "/v1/sessions/{id}/fs/stat")
        self.assertEqual((r.status, r.json()["type"]), (200, "dir"))
        r = self.call("POST", f"/v1/sessions/{sid}/fs/rename", "/v1/sessions/{id}/fs/rename",
                      {"from": "/tmp/w/f", "to": "/tmp/w/a/g"})
        self.assertEqual(r.status, 200, r.body)
        # Through the link is refused (no link is followed), outside the writable dirs too.
        r = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/w/l", "/v1/sessions/{id}/files")
        self.assertEqual(r.status, 400, r.body)
        r = self.call("POST", f"/v1/sessions/{sid}/fs/remove", "/v1/sessions/{id}/fs/remove", {"path": "/etc/passwd"})
        self.assertEqual(r.status, 400, r.body)
        r = self.call("POST", f"/v1/sessions/{sid}/fs/remove", "/v1/sessions/{id}/fs/remove", {"path": "/tmp/w/a"})
        self.assertEqual(r.status, 409, r.body)  # not empty
        r = self.call("POST", f"/v1/sessions/{sid}/fs/remove", "/v1/sessions/{id}/fs/remove",
                      {"path": "/tmp/w/a", "recursive": True})
        self.assertEqual(r.status, 200, r.body)
        r = self.call("GET", f"/v1/sessions/{sid}/fs/stat?path=/tmp/w/a", "/v1/sessions/{id}/fs/stat")
        self.assertEqual(r.status, 404, r.body)
        res = ex("echo $X; ls /tmp/w")
        self.assertEqual(res["stdout"], "5\nf\nl\n".replace("f\n", ""), res)
        self.assertEqual([a for a in res["alerts"] if a["rule"] == "interpreter_restarted"], [], res)

    def test_listing_a_huge_directory_is_bounded_and_says_so(self):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", {"policy": "bash-tools"})
        sid = r.json()["session_id"]
        self.addCleanup(self.call, "DELETE", f"/v1/sessions/{sid}", "/v1/sessions/{id}")
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                      {"code": "mkdir /tmp/big && cd /tmp/big && seq 1 100005 | xargs touch && ls | wc -l",
                       "timeout": 30})
        self.assertEqual(r.json()["stdout"], "100005\n", r.body)
        r = self.call("GET", f"/v1/sessions/{sid}/fs/list?path=/tmp/big", "/v1/sessions/{id}/fs/list")
        self.assertEqual(r.status, 200, r.body)
        body = r.json()
        self.assertTrue(body["truncated"])
        self.assertEqual(len(body["entries"]), 2000)
        self.assertIn("more than 100000 entries", body["message"])
        r = self.call("GET", f"/v1/sessions/{sid}/fs/list?path=/tmp/big&limit=3", "/v1/sessions/{id}/fs/list")
        self.assertEqual(len(r.json()["entries"]), 3)

    def test_cli_workspace_collect_and_changes_with_bash_tools(self):
        ws = tempfile.mkdtemp(dir=self.dir)
        write_tree(ws)
        before = tree(ws)
        p = run_cli(["run", "--json", "--policy", os.path.join(POLICY_DIR, "bash-tools.yaml"), "--images", IMAGES,
                     "--workspace", ws, "--collect", "/workspace/report.txt", "--changes", "/workspace", "--",
                     "bash", "-c", "sh src/count.sh data/lines.txt > report.txt; sed -i s/41/42/ src/app.js"],
                    timeout=120)
        res = json.loads(p.stdout)
        self.assertEqual(res["status"], "ok", p.stderr + p.stdout[:2000])
        self.assertEqual(res["collected"][0]["content"], "3\n", res)
        self.assertEqual(tree(ws), before, "the run wrote into the host directory")

        def change(root):
            with open(os.path.join(root, "report.txt"), "w") as f:
                f.write("3\n")
            with open(os.path.join(root, "src/app.js"), "w") as f:
                f.write(PROJECT["src/app.js"].replace("41", "42"))
        self.assert_patch_applies(res["changes"]["patch"], change)


class WatchStream:
    """GET .../fs/watch read in a thread: every event with the host's time of arrival."""

    def __init__(self, base, sid, path, recursive=False):
        host, port = base.split("//")[1].split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        q = f"/v1/sessions/{sid}/fs/watch?path={path}" + ("&recursive=true" if recursive else "")
        self.conn.request("GET", q)
        self.resp = self.conn.getresponse()
        self.events = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    self.events.append((time.time(), json.loads(line[6:])))
        except (OSError, ValueError, http.client.HTTPException):
            pass

    def wait_for(self, pred, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            for t, e in list(self.events):
                if pred(e):
                    return t, e
            time.sleep(0.01)
        raise AssertionError(f"no such event; got {self.events}")

    def close(self):
        self.conn.close()


class WatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--max-concurrency", "4")
        cls.addClassCleanup(cls.d.close)

    def session(self, policy):
        r = request(self.d.base, "POST", "/v1/sessions", {"policy": policy})
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(request, self.d.base, "DELETE", f"/v1/sessions/{sid}")
        return sid

    def execute(self, sid, code):
        r = request(self.d.base, "POST", f"/v1/sessions/{sid}/execute", {"code": code})
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def test_a_file_the_program_creates_is_reported_within_100_ms(self):
        sid = self.session("code-sandbox")
        self.execute(sid, "import os; os.makedirs('/tmp/w/sub')")
        w = WatchStream(self.d.base, sid, "/tmp/w", recursive=True)
        self.addCleanup(w.close)
        time.sleep(0.3)  # the watcher is set up before the program writes
        res = self.execute(sid, "import time\nopen('/tmp/w/new.txt', 'w').write('x')\nt = time.time()\n"
                                "open('/tmp/w/sub/deep.txt', 'w').write('y')\nprint(repr(t))\ntime.sleep(0.5)")
        made = float(res["stdout"])
        got, _ = w.wait_for(lambda e: e["path"] == "/tmp/w/new.txt" and e["op"] == "create")
        self.assertLess(got - made, 0.1, f"reported {got - made:.3f} s after the program made it")
        w.wait_for(lambda e: e["path"] == "/tmp/w/sub/deep.txt" and e["op"] == "write")
        # Between executes too: a background process of the box writes while nothing runs.
        self.execute(sid, "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                          "\"import time; time.sleep(0.5); open('/tmp/w/later.txt', 'w').write('z'); "
                          "print(repr(time.time()), file=open('/tmp/w/sub/t', 'w'))\"])")
        got, _ = w.wait_for(lambda e: e["path"] == "/tmp/w/later.txt" and e["op"] == "create")
        r = request(self.d.base, "GET", f"/v1/sessions/{sid}/files?path=/tmp/w/sub/t")
        self.assertLess(got - float(r.body), 0.2)
        # The watch does not keep executes out: no conflict while it streams.
        self.assertEqual(self.execute(sid, "print(2)")["stdout"], "2\n")

    def test_a_bash_session_is_watched_and_the_watch_ends_with_its_directory(self):
        sid = self.session("bash-tools")
        self.execute(sid, "mkdir -p /tmp/v")
        w = WatchStream(self.d.base, sid, "/tmp/v")
        self.addCleanup(w.close)
        time.sleep(0.3)
        self.execute(sid, "echo a > /tmp/v/a; mv /tmp/v/a /tmp/v/b; rm /tmp/v/b")
        for op, path in (("create", "/tmp/v/a"), ("rename", "/tmp/v/b"), ("remove", "/tmp/v/b")):
            w.wait_for(lambda e, op=op, path=path: e["op"] == op and e["path"] == path)
        self.execute(sid, "rmdir /tmp/v")
        w.wait_for(lambda e: e["op"] == "end")
        r = request(self.d.base, "GET", f"/v1/sessions/{sid}/fs/watch?path=/tmp/../etc")
        self.assertEqual(r.status, 400, r.body)


if __name__ == "__main__":
    unittest.main()
