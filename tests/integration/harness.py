"""Drives the real llm-sandbox binary for the integration suites (stdlib only).

LSB_BUILD_DIR points at the build directory (the CTest entry sets it); LSB_SOURCE_DIR at the repo.
"""
import atexit
import json
import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get("LSB_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("LSB_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
BINARY = os.path.join(BUILD_DIR, "llm-sandbox")
SEED_POLICY = os.path.join(SOURCE_DIR, "policies", "code-sandbox.yaml")
IMAGES = os.path.join(SOURCE_DIR, "config", "images.yaml")

# The daemon writes an audit log by default (docs/monitoring.md "Audit log"); every daemon these
# suites start writes it into a temporary state directory, never the machine's default place.
if not os.environ.get("LLM_SANDBOX_STATE_DIR"):
    os.environ["LLM_SANDBOX_STATE_DIR"] = tempfile.mkdtemp(prefix="lsb-test-state-")
    atexit.register(shutil.rmtree, os.environ["LLM_SANDBOX_STATE_DIR"], True)
os.environ.pop("LLM_SANDBOX_AUDIT_LOG", None)


def python_policy(name, timeout):
    """The policy of the workspace, outputs and changes tests: the host's python3 only, a read-only
    root with a 64M noexec /tmp, one CPU and 512M."""
    return f"""version: "1.0"
name: {name}
container:
  image: host
  read_only: true
  tmpfs:
    /tmp: "size=64M,noexec,nosuid"
commands:
  allow: ["/usr/bin/python3"]
resources:
  cpu: "1"
  memory: "512M"
  timeout: {timeout}
"""


def run_cli(args, stdin=None, timeout=120):
    """Runs llm-sandbox with args; returns the CompletedProcess (text mode)."""
    return subprocess.run([BINARY] + list(args), input=stdin, capture_output=True, text=True,
                          timeout=timeout, cwd=SOURCE_DIR)


def run_code(code, policy=SEED_POLICY, lang=None, timeout_s=None, extra=(), stdin=None):
    """Runs code in a box with --json and returns (result dict, CompletedProcess)."""
    args = ["run", "--json", "--policy", policy, "--images", IMAGES]
    if lang:
        args += ["--lang", lang]
    if timeout_s is not None:
        args += ["--timeout", str(timeout_s)]
    args += list(extra)
    args.append("-")
    proc = run_cli(args, stdin=code)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(
            f"llm-sandbox run --json did not print JSON (exit {proc.returncode}): {e}\n"
            f"stdout: {proc.stdout[:2000]}\nstderr: {proc.stderr[:2000]}") from e
    return result, proc


def alerts_with_rule(result, rule):
    return [a for a in result.get("alerts", []) if a.get("rule") == rule]


class SandboxTestCase(unittest.TestCase):
    """Base class: skips when the binary was not built or we are not root (the native backend's
    full enforcement needs root; the unprivileged mode is tested separately)."""

    @classmethod
    def setUpClass(cls):
        if not os.access(BINARY, os.X_OK):
            raise unittest.SkipTest(f"{BINARY} not built")

    def assertAlert(self, result, rule, **fields):
        found = alerts_with_rule(result, rule)
        self.assertTrue(found, f"no alert with rule {rule!r}; alerts: {result.get('alerts')}")
        for key, want in fields.items():
            self.assertTrue(any(want in str(a.get(key, "")) for a in found),
                            f"no {rule!r} alert with {key} containing {want!r}: {found}")


# ---- the backend the daemon-driven client suites run on (LSB_TEST_BACKEND=native|docker)

TEST_BACKEND = os.environ.get("LSB_TEST_BACKEND", "native")
if TEST_BACKEND not in ("native", "docker"):
    raise SystemExit(f"LSB_TEST_BACKEND={TEST_BACKEND!r}: expected native or docker")
# Warm containers per policy on Docker. Measured on the 2-core CI machine (16 runs of the client
# suites): 2 (the daemon's default) ~43 s, 4 ~47 s: refilling more containers competes for the cores.
DOCKER_POOL_SIZE = os.environ.get("LSB_TEST_DOCKER_POOL", "2")
_prepared = None


def serve_backend_args():
    """`llm-sandbox serve` options that put the daemon on TEST_BACKEND, whatever `auto` would pick."""
    if TEST_BACKEND == "docker":
        return ["--backend", "docker", "--pool-size", DOCKER_POOL_SIZE]
    return ["--backend", "native"]


def _engine_answers():
    try:
        return subprocess.run(["docker", "version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def prepare_test_backend():
    """For docker: the engine and the test image exist afterwards (scripts/ensure-docker.sh,
    scripts/build-test-image.sh, both cached), or unittest.SkipTest says why they cannot (not root
    and no engine answers). A failing script is an error, not a skip. Native needs nothing."""
    global _prepared
    if TEST_BACKEND != "docker" or _prepared:
        return
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest(f"{BINARY} not built")
    if os.geteuid() != 0 and not _engine_answers():
        raise unittest.SkipTest("LSB_TEST_BACKEND=docker: no Docker engine answers and we are not root "
                                "(run: sudo scripts/ensure-docker.sh)")
    for script in ("ensure-docker.sh", "build-test-image.sh"):
        subprocess.run([os.path.join(SOURCE_DIR, "scripts", script)], check=True, timeout=900)
    _prepared = True


def boxes_left_by(pid):
    """The boxes a stopped daemon (process `pid`) left behind: on docker, the containers whose owner
    label (host/pid/start time, docs/docker.md) names it; on native a box is a process below the
    daemon and cannot outlive its exit, so none."""
    if TEST_BACKEND != "docker":
        return []
    out = subprocess.run(["docker", "ps", "-a", "--no-trunc", "--filter", "label=io.llm-sandbox.owner",
                          "--format", '{{.ID}} {{.Label "io.llm-sandbox.owner"}}'],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if len(line.split()) == 2 and line.split()[1].split("/")[1:2] == [str(pid)]]
