"""`serve` refuses at start a flag it cannot honour, naming what is missing (issue 32, class 9),
instead of logging a line and running without it."""
import os
import shutil
import subprocess
import tempfile
import unittest

from daemon_harness import BINARY, IMAGES, POLICY_DIR, free_port, skip_unless_daemon_suite


def serve(*extra, env=None, timeout=30):
    args = [BINARY, "serve", "--listen", f"127.0.0.1:{free_port()}", "--policies", POLICY_DIR, "--images", IMAGES,
            "--audit-log", "none"] + list(extra)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))


class ServeRefusesWhatItCannotHonour(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()

    def test_fork_server_without_its_library_exits_naming_the_file(self):
        work = tempfile.mkdtemp(prefix="lsb-no-forklib-")
        self.addCleanup(shutil.rmtree, work, True)
        init = os.path.join(work, "llm-sandbox-init")  # an init with no liblsb-fork.so beside it
        shutil.copy2(os.path.join(os.path.dirname(BINARY), "llm-sandbox-init"), init)
        r = serve("--backend", "native", "--fork-server", env={"LLM_SANDBOX_INIT": init})
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn(os.path.join(work, "liblsb-fork.so"), r.stderr)
        self.assertIn("--fork-server", r.stderr)

    def test_fork_server_with_the_docker_backend_is_refused(self):
        r = serve("--backend", "docker", "--fork-server")
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn("--fork-server is the native backend's", r.stderr)


if __name__ == "__main__":
    unittest.main()
