"""upload_dir's packing and download_dir's unpacking (llm_sandbox._workspace), offline, and the
execute body's code/command/collect fields. The daemon side: tests/integration/test_daemon_workspace.py.

Run: python3 -m unittest discover -s clients/python/tests -v
"""
import io
import os
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from llm_sandbox import _calls, _workspace  # noqa: E402


def tar_with(*infos):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for info, data in infos:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


class PackDirTest(unittest.TestCase):
    def test_ignores_vcs_and_dependency_dirs_and_links_out_of_the_tree(self):
        with tempfile.TemporaryDirectory() as src:
            os.makedirs(os.path.join(src, "pkg"))
            os.makedirs(os.path.join(src, ".git"))
            os.makedirs(os.path.join(src, "node_modules", "m"))
            for rel, text in (("pkg/a.py", "A"), (".git/HEAD", "r"), ("node_modules/m/i.js", "1"), ("x.pyc", "c")):
                with open(os.path.join(src, rel), "w") as f:
                    f.write(text)
            os.symlink("/etc/passwd", os.path.join(src, "leak"))
            os.symlink("pkg/a.py", os.path.join(src, "alias.py"))
            os.symlink(src, os.path.join(src, "loop"))
            with tarfile.open(fileobj=io.BytesIO(_workspace.pack_dir(src))) as t:
                members = {m.name: m for m in t.getmembers()}
                self.assertEqual(sorted(members), ["alias.py", "pkg", "pkg/a.py"])
                self.assertTrue(members["alias.py"].isfile())  # the link inside became its file
                self.assertEqual(t.extractfile("alias.py").read(), b"A")
            with tarfile.open(fileobj=io.BytesIO(_workspace.pack_dir(src, ignore=[]))) as t:
                self.assertIn(".git/HEAD", t.getnames())

    def test_not_a_directory_is_an_error(self):
        with tempfile.NamedTemporaryFile() as f:
            with self.assertRaises(NotADirectoryError):
                _workspace.pack_dir(f.name)


class UnpackTarTest(unittest.TestCase):
    def test_writes_files_and_dirs(self):
        d = tarfile.TarInfo("sub")
        d.type = tarfile.DIRTYPE
        f = tarfile.TarInfo("sub/f.txt")
        f.size = 2
        with tempfile.TemporaryDirectory() as dst:
            written = _workspace.unpack_tar(tar_with((d, None), (f, b"hi")), dst)
            self.assertEqual(written, [os.path.join(os.path.realpath(dst), "sub", "f.txt")])

    def test_refuses_escapes_and_links(self):
        up = tarfile.TarInfo("../evil")
        up.size = 1
        absolute = tarfile.TarInfo("/tmp/evil")
        absolute.size = 1
        link = tarfile.TarInfo("l")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc"
        with tempfile.TemporaryDirectory() as dst:
            for info, data in ((up, b"x"), (absolute, b"x"), (link, None)):
                with self.subTest(name=info.name):
                    with self.assertRaises(ValueError):
                        _workspace.unpack_tar(tar_with((info, data)), dst)
            self.assertEqual(os.listdir(dst), [])


class ExecuteBodyTest(unittest.TestCase):
    def test_exactly_one_of_code_and_command(self):
        self.assertEqual(_calls.execute_body(None, policy=None, command=["python3", "-V"], collect=["/tmp/*.xml"]),
                         {"command": ["python3", "-V"], "collect": ["/tmp/*.xml"]})
        with self.assertRaises(TypeError):
            _calls.execute_body("1", policy=None, command=["x"])
        with self.assertRaises(TypeError):
            _calls.execute_body(None, policy=None)
        with self.assertRaises(TypeError):
            _calls.execute_body(None, policy=None, command="python3 -V")

    def test_archive_entries_pass_through(self):
        files = _calls.encode_files([{"path": "/tmp/w", "archive_base64": "QUJD"}])
        self.assertEqual(files, [{"path": "/tmp/w", "archive_base64": "QUJD"}])


if __name__ == "__main__":
    unittest.main()
