"""The in-tree PEP 517 backend (clients/python/backend/lsb_build.py), its hooks called directly as a
build frontend would: the wheel's files and RECORD, the sdist (a wheel rebuilt from it is
byte-identical), the editable wheel, the fallback pyproject reader. The offline `pip install` runs
themselves are in tests/integration/test_client_offline_install.py.
"""
from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_DIR = os.path.dirname(HERE)


class BackendHooksTest(unittest.TestCase):
    """The hooks of backend/lsb_build.py called directly, as a build frontend would."""

    @classmethod
    def setUpClass(cls) -> None:
        sys.path.insert(0, os.path.join(CLIENT_DIR, "backend"))
        import lsb_build
        cls.backend = lsb_build
        cls.tmp = tempfile.TemporaryDirectory(prefix="lsb-hooks-")
        cls.addClassCleanup(cls.tmp.cleanup)

    def test_wheel_contents_and_record(self) -> None:
        name = self.backend.build_wheel(os.path.join(self.tmp.name, "w"))
        version = self.backend.read_version()
        self.assertEqual(name, f"llm_sandbox-{version}-py3-none-any.whl")
        with zipfile.ZipFile(os.path.join(self.tmp.name, "w", name)) as zf:
            names = set(zf.namelist())
            for must in ("llm_sandbox/__init__.py", "llm_sandbox/py.typed",
                         "llm_sandbox/integrations/langchain.py"):
                self.assertIn(must, names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.startswith(("tests", "backend"))])
            dist = f"llm_sandbox-{version}.dist-info"
            meta = zf.read(f"{dist}/METADATA").decode()
            self.assertIn("Name: llm-sandbox\n", meta)
            self.assertIn(f"Version: {version}\n", meta)
            self.assertIn("Requires-Python: >=3.9\n", meta)
            record = zf.read(f"{dist}/RECORD").decode().splitlines()
            listed = {line.split(",")[0] for line in record}
            self.assertEqual(listed, names)
            for line in record:
                path, digest, size = line.rsplit(",", 2)
                if path.endswith("RECORD"):
                    continue
                data = zf.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), (f"sha256={want}", len(data)), path)

    def test_sdist_rebuilds_the_same_wheel(self) -> None:
        sdist = self.backend.build_sdist(os.path.join(self.tmp.name, "s"))
        with tarfile.open(os.path.join(self.tmp.name, "s", sdist)) as tf:
            tf.extractall(os.path.join(self.tmp.name, "unpacked"))
        unpacked = os.path.join(self.tmp.name, "unpacked", sdist[:-len(".tar.gz")])
        wheel_dir = os.path.join(self.tmp.name, "from-sdist")
        out = subprocess.run(
            [sys.executable, "-c", "import sys, lsb_build; print(lsb_build.build_wheel(sys.argv[1]))",
             wheel_dir], cwd=unpacked, env=dict(os.environ, PYTHONPATH=os.path.join(unpacked, "backend")),
            capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        direct = self.backend.build_wheel(os.path.join(self.tmp.name, "direct"))
        with open(os.path.join(wheel_dir, out.stdout.strip()), "rb") as a, \
                open(os.path.join(self.tmp.name, "direct", direct), "rb") as b:
            self.assertEqual(a.read(), b.read(), "the wheel built from the sdist differs")

    def test_editable_wheel_points_at_the_source(self) -> None:
        name = self.backend.build_editable(os.path.join(self.tmp.name, "e"))
        with zipfile.ZipFile(os.path.join(self.tmp.name, "e", name)) as zf:
            pth = [n for n in zf.namelist() if n.endswith(".pth")]
            self.assertEqual(len(pth), 1)
            self.assertEqual(zf.read(pth[0]).decode().strip(), CLIENT_DIR)

    def test_fallback_toml_reader_matches_tomllib(self) -> None:
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib needs Python 3.11")
        with open(os.path.join(CLIENT_DIR, "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(self.backend._parse_project_table(text), tomllib.loads(text)["project"])
        with self.assertRaises(ValueError):
            self.backend._parse_project_table('[project]\nname = "x"\nversion = 3\n')

    def test_no_build_requirements(self) -> None:
        self.assertEqual(self.backend.get_requires_for_build_wheel(), [])
        self.assertEqual(self.backend.get_requires_for_build_sdist(), [])


if __name__ == "__main__":
    unittest.main()
