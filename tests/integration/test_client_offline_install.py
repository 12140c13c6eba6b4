"""`pip install ./clients/python` on a machine with no package index (issue 16, "Install").

Each pip run here has no index (PIP_NO_INDEX=1, no config file, no find-links) and, when we are
root and `unshare` exists, no network at all: it runs in a fresh network namespace with no
interface up. Three installs are checked, each then imported from a clean interpreter:

- the system interpreter (Debian's /usr/bin/python3 when present) with its own pip, into a
  --target directory, the way `python3 -m pip install --break-system-packages` builds and installs
  it, without writing to the system's site-packages;
- a fresh `python3 -m venv` whose setuptools was removed and which has no `wheel` (the case that
  failed on `bdist_wheel`); uninstalling from it must remove every file (a correct RECORD);
- a control: the same tree with the old `requires = ["setuptools>=61"]` must FAIL under these
  conditions, so a pass above is not an accident of a reachable index.

The backend's hooks themselves (wheel contents, RECORD, sdist, editable) are unit-tested in
clients/python/tests/test_build_backend.py. Needs no daemon; runs in CTest integration_native.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("LSB_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENT_DIR = os.path.join(SOURCE_DIR, "clients", "python")
SYSTEM_PYTHON = "/usr/bin/python3"
PIP_TIMEOUT = 240  # a loaded 2-core machine needs ~20 s per install


def offline_env() -> dict:
    """The environment of every pip run: no index, no config file, no local wheel house."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_CACHE_DIR="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    return env


def no_network_prefix() -> list:
    """`unshare -n` when it works here (root): the command then has only a loopback that is down."""
    unshare = shutil.which("unshare")
    if unshare and os.geteuid() == 0:
        probe = subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return [unshare, "-n"]
    return []


def has_pip(python: str) -> bool:
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True,
                          env=offline_env(), timeout=60).returncode == 0


def import_check(python: str, extra_env: dict = None) -> str:
    """Imports the installed client in a fresh interpreter started outside the source tree and
    builds a client object; returns the package's file path."""
    env = offline_env()
    env.update(extra_env or {})
    code = ("import llm_sandbox, llm_sandbox.integrations.common as c; "
            "llm_sandbox.SandboxClient(base_url='http://127.0.0.1:9'); "
            "print(llm_sandbox.__file__)")
    out = subprocess.run([python, "-s", "-c", code], cwd=tempfile.gettempdir(),
                         env=env, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"import failed: {out.stderr}")
    return out.stdout.strip()


class OfflinePipInstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory(prefix="lsb-offline-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.netns = no_network_prefix()

    def pip(self, python: str, *args: str) -> subprocess.CompletedProcess:
        cmd = self.netns + [python, "-m", "pip", "install", "--no-index",
                            "--root-user-action=ignore", *args]
        return subprocess.run(cmd, env=offline_env(), capture_output=True, text=True,
                              timeout=PIP_TIMEOUT)

    def test_system_python_installs_offline(self) -> None:
        python = SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else sys.executable
        if not has_pip(python):
            self.skipTest(f"{python} has no pip (Debian: apt-get install python3-pip)")
        target = os.path.join(self.tmp.name, "system-target")
        out = self.pip(python, "--target", target, CLIENT_DIR)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("Successfully installed llm-sandbox", out.stdout)
        path = import_check(python, {"PYTHONPATH": target})
        self.assertTrue(path.startswith(target), path)

    def test_venv_without_setuptools_or_wheel_installs_offline(self) -> None:
        base = SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else sys.executable
        venv = os.path.join(self.tmp.name, "venv")
        made = subprocess.run([base, "-m", "venv", venv], capture_output=True, text=True,
                              env=offline_env(), timeout=PIP_TIMEOUT)
        if made.returncode != 0 and "ensurepip" in made.stdout + made.stderr:
            self.skipTest(f"{base} -m venv has no ensurepip (Debian: apt-get install python3-venv)")
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        python = os.path.join(venv, "bin", "python")
        subprocess.run([python, "-m", "pip", "uninstall", "-y", "-q", "setuptools", "wheel"],
                       env=offline_env(), capture_output=True, timeout=PIP_TIMEOUT)
        for module in ("setuptools", "wheel"):
            probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                                   env=offline_env(), timeout=60)
            self.assertNotEqual(probe.returncode, 0, f"the venv still has {module}")

        out = self.pip(python, CLIENT_DIR)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        path = import_check(python)
        self.assertTrue(path.startswith(venv), path)

        site = os.path.dirname(os.path.dirname(path))
        out = subprocess.run([python, "-m", "pip", "uninstall", "-y", "llm-sandbox"],
                             env=offline_env(), capture_output=True, text=True, timeout=PIP_TIMEOUT)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        left = [n for n in os.listdir(site) if n.startswith(("llm_sandbox", "llm-sandbox"))]
        self.assertEqual(left, [], "files left after uninstall: RECORD is incomplete")

    def test_control_setuptools_backend_fails_offline(self) -> None:
        # The pyproject.toml this backend replaced: pip must fetch setuptools, and cannot.
        tree = os.path.join(self.tmp.name, "old-tree")
        shutil.copytree(CLIENT_DIR, tree, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        with open(os.path.join(tree, "pyproject.toml")) as f:
            text = f.read()
        head, _, rest = text.partition("[project]")
        with open(os.path.join(tree, "pyproject.toml"), "w") as f:
            f.write('[build-system]\nrequires = ["setuptools>=61"]\n'
                    'build-backend = "setuptools.build_meta"\n\n[project]' + rest)
        out = self.pip(sys.executable, "--target", os.path.join(self.tmp.name, "old-target"), tree)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("setuptools", out.stdout + out.stderr)


if __name__ == "__main__":
    unittest.main()
