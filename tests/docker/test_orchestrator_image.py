"""The orchestrator image (docs/docker.md): built FROM scratch by scripts/build-orchestrator-image.sh,
started the documented way (`docker run -d -p ...:8080 -v /var/run/docker.sock:/var/run/docker.sock
[-e LLM_SANDBOX_TOKENS=...] llmsandbox/orchestrator`), runs sandboxes through the host's socket as
sibling containers, over HTTP; then stopped and removed with nothing left behind."""
import os
import re
import subprocess
import time
import unittest

from daemon_util import BUILD_DIR, SOURCE_DIR, containers, free_port, prepare_engine_or_skip, request, wait_healthy

TAG = "llmsandbox/orchestrator:latest"


def setUpModule():
    prepare_engine_or_skip()
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "build-orchestrator-image.sh"), BUILD_DIR],
                   check=True, timeout=300)


def docker(*args, check=True, timeout=60):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


class Orchestrator:
    """One orchestrator container on a free host port (8080 may be taken on a shared machine)."""

    def __init__(self, env=()):
        self.port = free_port()
        args = ["run", "-d", "-p", f"127.0.0.1:{self.port}:8080", "-v", "/var/run/docker.sock:/var/run/docker.sock"]
        for e in env:
            args += ["-e", e]
        self.cid = docker(*args, TAG).stdout.strip()
        self.base = f"http://127.0.0.1:{self.port}"
        self.hostname = self.cid[:12]

    def logs(self):
        r = docker("logs", self.cid, check=False)
        return r.stdout + r.stderr

    def remove(self):
        volumes = [m["Name"] for m in self.mounts() if m.get("Type") == "volume"]
        docker("stop", "-t", "20", self.cid, check=False, timeout=60)  # SIGTERM: the daemon removes its boxes
        docker("rm", "-f", "-v", self.cid, check=False)
        return volumes

    def mounts(self):
        import json
        r = docker("inspect", self.cid, check=False)
        return json.loads(r.stdout)[0]["Mounts"] if r.returncode == 0 else []

    def siblings(self):
        return [c for c, owner in containers().items() if owner.startswith(self.hostname + "/")]


class OrchestratorImage(unittest.TestCase):
    def check_runs(self, o, token):
        self.assertTrue(wait_healthy(o.base, seconds=30), o.logs())
        status, _ = request(o.base, "POST", "/v1/execute", {"code": "print(1)"})
        self.assertEqual(status, 401)
        status, r = request(o.base, "POST", "/v1/execute", {"code": 'print("hi")'}, token=token)
        self.assertEqual(status, 200, f"{r}\n{o.logs()}")
        self.assertEqual((r["status"], r["stdout"]), ("ok", "hi\n"), r)
        status, r = request(o.base, "POST", "/v1/execute",
                            {"code": "import os\nos.system('/bin/sh -c true')\n"}, token=token)
        self.assertEqual(status, 200, r)
        self.assertTrue(any(a.get("rule") == "denied_exec" for a in r["alerts"]), r)

    def finish(self, o):
        volumes = o.remove()
        self.assertEqual(o.siblings(), [], "sandbox containers left behind")
        for v in volumes:
            self.assertNotEqual(docker("volume", "inspect", v, check=False).returncode, 0, f"volume {v} left")

    def test_with_tokens_from_the_environment(self):
        o = Orchestrator(env=["LLM_SANDBOX_TOKENS=orch-test-token"])
        try:
            self.check_runs(o, "orch-test-token")
            self.assertIn("backend docker", o.logs())
        finally:
            self.finish(o)

    def test_without_tokens_one_is_generated_and_logged(self):
        o = Orchestrator()
        try:
            deadline = time.time() + 30
            token = None
            while time.time() < deadline and not token:
                m = re.search(r"Authorization: Bearer ([0-9a-f]{64})", o.logs())
                token = m.group(1) if m else None
                time.sleep(0.2)
            self.assertIsNotNone(token, o.logs())
            self.check_runs(o, token)
        finally:
            self.finish(o)


if __name__ == "__main__":
    unittest.main()
