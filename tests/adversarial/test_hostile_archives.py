"""Issue 21 / DESIGN §11 "Writing into a box": hostile archives sent to the daemon. Each is refused
with a 400 or 413 that names the entry, and a good entry before the bad one is not written (the
whole archive is checked on the host before the box is touched). Also: a collect or an archive
download never follows a link the program planted.

  archive.absolute      an entry named /etc/cron.d/x
  archive.dotdot        ../../escape
  archive.symlink       a symbolic link (to /etc, and one to a sibling: every link is refused)
  archive.hardlink      a hard link to /etc/passwd
  archive.device        a character device node; archive.fifo a FIFO
  archive.setuid        a setuid+setgid file: unpacked 0755, the special bits dropped
  archive.bomb          40 MiB of zeros in a 40 KiB tar.gz (the expansion ratio), 10001 entries
  archive.zip_escape    a zip entry ../../etc/passwd; a zip symlink
  archive.collect_link  collect of a symlink to /etc/passwd the program made: an error entry
  archive.tree_link     GET .../archive of a directory holding that link: left out

Runs on the native backend and on docker/runc when an engine and the test image are present.
Run: python3 -m unittest tests/adversarial/test_hostile_archives.py -v
"""
import io
import json
import os
import sys
import tarfile
import unittest
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_daemon_bounds import Backend, Daemon  # noqa: E402


def tar_gz(files, extra=()):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for info in extra:
            t.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return buf.getvalue()


def entry(name, kind=tarfile.REGTYPE, link="", size=0, mode=0o644):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size, info.mode = kind, link, size, mode
    if kind == tarfile.CHRTYPE:
        info.devmajor, info.devminor = 1, 3
    return info


GOOD = {"good.txt": b"fine"}


def zip_with_symlink():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("good.txt", "fine")
        info = zipfile.ZipInfo("link")
        info.create_system = 3
        info.external_attr = (0o120777 << 16)
        z.writestr(info, "/etc/passwd")
    return buf.getvalue()


def zip_escape():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("good.txt", "fine")
        z.writestr("../../etc/passwd", "root::0:0::/:/bin/sh")
    return buf.getvalue()


CASES = [
    ("archive.absolute", tar_gz(GOOD, [entry("/etc/cron.d/x", size=1)]), 400, "'/etc/cron.d/x' is refused: an absolute name"),
    ("archive.dotdot", tar_gz(GOOD, [entry("../../escape", size=1)]), 400, "'../../escape' is refused: a '..' component"),
    ("archive.symlink", tar_gz(GOOD, [entry("etc", tarfile.SYMTYPE, "/etc")]), 400, "'etc' is refused: a symbolic link"),
    ("archive.symlink_sibling", tar_gz(GOOD, [entry("s", tarfile.SYMTYPE, "good.txt")]), 400, "'s' is refused: a symbolic link"),
    ("archive.hardlink", tar_gz(GOOD, [entry("pw", tarfile.LNKTYPE, "/etc/passwd")]), 400, "'pw' is refused: a hard link"),
    ("archive.device", tar_gz(GOOD, [entry("null", tarfile.CHRTYPE)]), 400, "'null' is refused: a device node"),
    ("archive.fifo", tar_gz(GOOD, [entry("p", tarfile.FIFOTYPE)]), 400, "'p' is refused: a FIFO"),
    ("archive.bomb", tar_gz({"good.txt": b"fine", "zeros": bytes(40 << 20)}), 413, "a compression bomb is refused"),
    ("archive.entries", tar_gz({**GOOD, **{f"f{i}": b"" for i in range(10001)}}), 413, "more than 10000 entries"),
    ("archive.zip_escape", zip_escape(), 400, "'../../etc/passwd' is refused: a '..' component"),
    ("archive.zip_symlink", zip_with_symlink(), 400, "'link' is refused: a symbolic link"),
]


class HostileArchives:
    backend = None

    @classmethod
    def setUpClass(cls):
        reason = cls.backend.unavailable()
        if reason:
            raise unittest.SkipTest(reason)
        cls.d = Daemon(cls.backend, concurrency=2)
        cls.addClassCleanup(cls.d.stop)
        cls.sid = json.loads(cls.d.post("/v1/sessions", {"language": "python"}))["session_id"]

    def call(self, method, path, data=None, json_body=None):
        return self.d.call(method, path, data, json_body)

    def test_every_hostile_archive_is_refused_naming_its_entry_and_writes_nothing(self):
        for cid, data, status, words in CASES:
            with self.subTest(case=cid):
                code, body = self.call("PUT", f"/v1/sessions/{self.sid}/archive?path=/tmp/h", data)
                self.assertEqual(code, status, body[:500])
                self.assertIn(words, json.loads(body)["error"]["message"])
                code, _ = self.call("GET", f"/v1/sessions/{self.sid}/files?path=/tmp/h/good.txt")
                self.assertEqual(code, 404, f"{cid}: the good entry before the bad one was written")

    def test_setuid_and_setgid_bits_are_dropped(self):
        code, body = self.call("PUT", f"/v1/sessions/{self.sid}/archive?path=/tmp/s",
                               tar_gz({}, [entry("su", size=1, mode=0o6755)]))
        self.assertEqual(code, 201, body)
        code, body = self.call("POST", f"/v1/sessions/{self.sid}/execute", json_body={
            "code": "import os; print(oct(os.stat('/tmp/s/su').st_mode & 0o7777))"})
        self.assertEqual(json.loads(body)["stdout"], "0o755\n")

    def test_collect_and_the_tree_download_never_follow_a_planted_link(self):
        code, body = self.call("POST", f"/v1/sessions/{self.sid}/execute", json_body={
            "code": "import os; os.makedirs('/tmp/t', exist_ok=True); os.symlink('/etc/passwd', '/tmp/t/pw')\n"
                    "os.symlink('/etc', '/tmp/t/etc')",
            "collect": ["/tmp/t/pw", "/tmp/t/etc/passwd"]})
        self.assertEqual(code, 200, body)
        got = json.loads(body)["collected"]
        self.assertEqual([("error" in c, "content" in c) for c in got], [(True, False), (True, False)], got)
        code, body = self.call("GET", f"/v1/sessions/{self.sid}/archive?path=/tmp/t")
        self.assertEqual(code, 200, body[:300])
        with tarfile.open(fileobj=io.BytesIO(body)) as t:
            self.assertEqual(t.getnames(), [])


class NativeHostileArchives(HostileArchives, unittest.TestCase):
    backend = Backend("native", "native")


class DockerHostileArchives(HostileArchives, unittest.TestCase):
    backend = Backend("docker/runc", "docker")


if __name__ == "__main__":
    unittest.main()
