"""Issue 34: attacks on the file operations init's file worker carries out (src/init/file_worker.h),
through the daemon's session routes, on the native backend and on docker/runc when an engine and
the test image are present. The program in the box is the attacker: it plants what it can, the
host asks for files, and nothing may be read or written through a link, block on a FIFO, or come
back past a bound.

  files.symlink_race   the program swaps a directory for a link to another writable dir while the
                       host uploads into it (and swaps a file for a link while the host downloads):
                       no upload lands through the link, no download returns the link's target
  files.fifo           a FIFO where a file is asked for: refused at once (download, collect, tree,
                       upload over it), no hang
  files.dotdot         '..', '//', relative paths in every route: 400 before the box
  files.absolute_link  links to / and /etc: reading, listing, renaming or removing through them is
                       refused; removing the link removes only the link
  files.growing        a file the program keeps growing while it is downloaded: 413, never more
                       bytes than the bound
  files.huge_tree      100,005 entries: the listing is bounded and says so; the tree download and
                       a session's change set refuse past their bounds (413), in bounded time
  files.no_pids        the program holds every process the box may have: a file call fails saying
                       why (no worker can be started), and the session goes on once they are gone
"""
import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_daemon_bounds import Backend, Daemon  # noqa: E402

# The attacker's programs (python: the test image and the host both have it).
SWAPPER = """
import os, time
os.makedirs('/tmp/race', exist_ok=True); os.makedirs('/tmp/victim', exist_ok=True)
open('/tmp/race/f.real', 'w').write('mine')
end = time.time() + {seconds}
while time.time() < end:
    for name, target in (('d', '/tmp/victim'), ('f', '/etc/passwd')):
        p = '/tmp/race/' + name
        try:
            os.symlink(target, p + '.l'); os.rename(p + '.l', p)
        except OSError: pass
        try:
            if name == 'd':
                os.makedirs(p + '.d', exist_ok=True); os.rename(p + '.d', p)
            else:
                open(p + '.r', 'w').write('mine'); os.rename(p + '.r', p)
        except OSError: pass
"""


class FileOpAttacks:
    backend = None

    @classmethod
    def setUpClass(cls):
        reason = cls.backend.unavailable()
        if reason:
            raise unittest.SkipTest(reason)
        cls.d = Daemon(cls.backend, concurrency=4)
        cls.addClassCleanup(cls.d.stop)

    def call(self, method, path, data=None, json_body=None, timeout=120):
        return self.d.call(method, path, data, json_body, timeout)

    def session(self, **body):
        code, out = self.call("POST", "/v1/sessions", json_body={"language": "python", **body})
        self.assertEqual(code, 201, out)
        sid = json.loads(out)["session_id"]
        self.addCleanup(self.call, "DELETE", f"/v1/sessions/{sid}")
        return sid

    def run_in(self, sid, code, **body):
        status, out = self.call("POST", f"/v1/sessions/{sid}/execute", json_body={"code": code, **body})
        self.assertEqual(status, 200, out)
        return json.loads(out)

    def test_symlink_race_never_writes_or_reads_through_a_link(self):
        # The racer runs as a one-shot beside the session? No: it must share the box. It runs as a
        # background process of the session's interpreter, which the host's file calls then race.
        sid = self.session()
        self.run_in(sid, "import subprocess, sys\n"
                         f"subprocess.Popen([sys.executable, '-c', {SWAPPER.format(seconds=6)!r}])\n"
                         "import time; time.sleep(0.3)")
        landed, leaked = 0, 0
        end = time.monotonic() + 4
        i = 0
        while time.monotonic() < end:
            i += 1
            code, _ = self.call("PUT", f"/v1/sessions/{sid}/files?path=/tmp/race/d/up{i}", b"x")
            landed += code == 201
            code, body = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/race/f")
            leaked += code == 200 and b"root:" in body
        victim = self.run_in(sid, "import os; print(sorted(os.listdir('/tmp/victim')))")["stdout"]
        self.assertEqual(victim, "[]\n", f"an upload went through the link ({landed} landed in /tmp/race/d)")
        self.assertEqual(leaked, 0, "a download returned the link's target")
        self.assertGreater(i, 10)

    def test_fifo_is_refused_at_once_everywhere(self):
        sid = self.session()
        self.run_in(sid, "import os; os.makedirs('/tmp/q'); os.mkfifo('/tmp/q/p')")
        t0 = time.monotonic()
        code, body = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/q/p", timeout=20)
        self.assertEqual(code, 400, body)
        self.assertIn(b"not a regular file (a fifo)", body)
        code, body = self.call("PUT", f"/v1/sessions/{sid}/files?path=/tmp/q/p", b"x", timeout=20)
        self.assertEqual(code, 400, body)
        res = self.run_in(sid, "pass", collect=["/tmp/q/p"])
        self.assertIn("not a regular file", res["collected"][0]["error"])
        code, body = self.call("GET", f"/v1/sessions/{sid}/archive?path=/tmp/q", timeout=20)
        self.assertEqual(code, 200, body[:300])
        self.assertLess(time.monotonic() - t0, 10, "a FIFO stalled a file call")

    def test_dotdot_and_relative_paths_are_refused_before_the_box(self):
        sid = self.session()
        for bad in ("/tmp/../etc/passwd", "tmp/x", "/tmp//x", "/tmp/./x"):
            with self.subTest(path=bad):
                for method, route in (("GET", "files"), ("PUT", "files"), ("GET", "fs/list"), ("GET", "fs/stat")):
                    code, body = self.call(method, f"/v1/sessions/{sid}/{route}?path={bad}",
                                           b"x" if method == "PUT" else None)
                    self.assertEqual(code, 400, (route, body))
                for route, body in (("fs/mkdir", {"path": bad}), ("fs/remove", {"path": bad}),
                                    ("fs/rename", {"from": "/tmp/a", "to": bad})):
                    code, out = self.call("POST", f"/v1/sessions/{sid}/{route}", json_body=body)
                    self.assertEqual(code, 400, (route, out))

    def test_absolute_links_are_never_followed(self):
        sid = self.session()
        self.run_in(sid, "import os\nos.makedirs('/tmp/keep'); open('/tmp/keep/k', 'w').write('k')\n"
                         "os.symlink('/etc', '/tmp/etc'); os.symlink('/', '/tmp/root'); os.symlink('/tmp/keep', '/tmp/kl')")
        for path in ("/tmp/etc/passwd", "/tmp/root/etc/passwd"):
            code, body = self.call("GET", f"/v1/sessions/{sid}/files?path={path}")
            self.assertEqual(code, 400, body)
        code, body = self.call("GET", f"/v1/sessions/{sid}/fs/list?path=/tmp/etc")
        self.assertEqual(code, 400, body)
        code, body = self.call("GET", f"/v1/sessions/{sid}/fs/stat?path=/tmp/etc")
        self.assertEqual((code, json.loads(body)["type"], json.loads(body)["target"]), (200, "symlink", "/etc"))
        code, body = self.call("POST", f"/v1/sessions/{sid}/fs/rename", json_body={"from": "/tmp/kl/k", "to": "/tmp/k2"})
        self.assertEqual(code, 400, body)
        code, body = self.call("POST", f"/v1/sessions/{sid}/fs/remove", json_body={"path": "/tmp/kl", "recursive": True})
        self.assertEqual(code, 200, body)
        self.assertEqual(self.run_in(sid, "import os; print(os.listdir('/tmp/keep'))")["stdout"], "['k']\n")

    def test_a_growing_file_comes_back_bounded(self):
        sid = self.session()
        self.run_in(sid, "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                         "\"import time\\nf = open('/tmp/grow', 'wb')\\nend = time.time() + 5\\n"
                         "while time.time() < end: f.write(b'x' * 65536); f.flush()\"])\n"
                         "import time; time.sleep(0.2)")
        limit = 16 << 20  # the daemon's default --max-file-bytes
        for _ in range(10):
            code, body = self.call("GET", f"/v1/sessions/{sid}/files?path=/tmp/grow")
            self.assertIn(code, (200, 413), body[:300])
            self.assertLessEqual(len(body), limit)
            if code == 413:
                break

    def test_huge_trees_are_bounded(self):
        sid = self.session(changes=True)
        res = self.run_in(sid, "import os\nos.makedirs('/tmp/big')\n"
                               "for i in range(100005): open('/tmp/big/%06d' % i, 'w').close()\nprint('made')",
                          timeout=30)
        self.assertEqual(res["stdout"], "made\n", res)
        t0 = time.monotonic()
        code, body = self.call("GET", f"/v1/sessions/{sid}/fs/list?path=/tmp/big")
        listing = json.loads(body)
        self.assertEqual((code, listing["truncated"], len(listing["entries"])), (200, True, 2000), body[:300])
        self.assertIn("more than 100000 entries", listing["message"])
        code, body = self.call("GET", f"/v1/sessions/{sid}/archive?path=/tmp/big")
        self.assertEqual(code, 413, body[:300])
        code, body = self.call("GET", f"/v1/sessions/{sid}/changes")
        self.assertEqual(code, 413, body[:300])
        self.assertLess(time.monotonic() - t0, 60)


    def test_a_box_at_its_process_limit_fails_the_call_not_the_session(self):
        sid = self.session()
        res = self.run_in(sid, "import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n"
                               "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(4)\n"
                               "        os._exit(0)\n    n += 1\nprint(n)")
        self.assertGreater(int(res["stdout"] or 0), 0, res)
        code, body = self.call("PUT", f"/v1/sessions/{sid}/files?path=/tmp/at_limit", b"x")
        if code != 201:  # no worker could be forked: the call says so and nothing else breaks
            self.assertIn(b"could not be started", body, body)
        # The interpreter reaps its children (until then they hold the box's pids, zombies too).
        self.run_in(sid, "import os\nwhile True:\n    try:\n        os.wait()\n    except ChildProcessError:\n"
                         "        break")
        code, body = self.call("PUT", f"/v1/sessions/{sid}/files?path=/tmp/after", b"y")
        self.assertEqual(code, 201, body)
        self.assertEqual(self.run_in(sid, "print(open('/tmp/after').read())")["stdout"], "y\n")


class NativeFileOpAttacks(FileOpAttacks, unittest.TestCase):
    backend = Backend("native", "native")


class DockerFileOpAttacks(FileOpAttacks, unittest.TestCase):
    backend = Backend("docker/runc", "docker")


if __name__ == "__main__":
    unittest.main()
