"""The backends and runtimes the adversarial suite runs on, and how a program is run on each.

Every backend runs the seed policy (policies/code-sandbox.yaml); docker/runsc runs it with
`runtime: runsc` and `gvisor_accept_weaker: true` added, the only way gVisor is accepted.
LSB_BUILD_DIR / LSB_SOURCE_DIR locate the binary and the repo (the CTest entry sets them).
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

# The build's and the repo's paths: one definition for every suite (tests/integration/harness.py,
# whose import also gives every daemon these suites start a temporary state directory).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import BINARY, BUILD_DIR, IMAGES, SEED_POLICY, SOURCE_DIR  # noqa: E402,F401
TEST_IMAGE = "llm-sandbox/python:3.11-test"

# What a backend's box is made of: the suite's expectations key on these, never on names.
LANDLOCK = "landlock"        # commands.allow/deny, ptrace/signal scoping by Landlock
WATCH = "watch"              # seccomp user notification: denied_exec / network_attempt alerts
USERNS = "userns"            # the box has a kernel user namespace of its own
GVISOR = "gvisor"            # a user-space kernel (gVisor's Sentry) between program and host


class Backend:
    cli = True  # runs through `llm-sandbox run` (a lane of a daemon says False)

    def __init__(self, name, backend_arg, controls, policy_lines=()):
        self.name = name
        self.backend_arg = backend_arg
        self.controls = set(controls)
        self.policy_lines = list(policy_lines)
        self._policy = None
        self.images = IMAGES  # the image map file given to `run --images`

    def has(self, control):
        return control in self.controls

    def policy(self):
        """The seed policy, or a temp variant of it with this backend's container: lines.
        LSB_ADVERSARIAL_NETWORK=egress (native, docker/runc): the network on through the egress
        proxy, every name allowed (docs/network.md), so the cases run against a box that has a way
        out. On Docker allow: ["*"] alone is the engine's bridge, so a deny entry no name matches
        makes it the proxy there; gVisor cannot have the proxy (its own network stack) and runs as is."""
        egress = os.environ.get("LSB_ADVERSARIAL_NETWORK") == "egress" and (
            self.backend_arg == "native" or (self.backend_arg == "docker" and not self.has(GVISOR)))
        if not self.policy_lines and not egress:
            return SEED_POLICY
        if self._policy is None:
            with open(SEED_POLICY) as f:
                text = f.read()
            text = text.replace("container:\n", "container:\n" + "".join(
                f"  {line}\n" for line in self.policy_lines), 1)
            if egress:
                net = 'network:\n  enabled: true\n  allow: ["*"]\n'
                if self.backend_arg == "docker":
                    net += '  deny: ["nothing.invalid"]\n'
                text = text.replace("network:\n  enabled: false\n", net, 1)
            fd, self._policy = tempfile.mkstemp(prefix="lsb-adv-", suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                f.write(text)
        return self._policy

    def cleanup(self):
        if self._policy:
            os.unlink(self._policy)
            self._policy = None

    def run(self, code, timeout_s=None, timeout=180, env=None):
        """Runs `code` (python) in a fresh box; returns (result dict or None, CompletedProcess).
        `env`: extra environment for the CLI (e.g. LLM_SANDBOX_NATIVE_LOOPBACK)."""
        args = [BINARY, "run", "--backend", self.backend_arg, "--json", "--policy", self.policy(),
                "--images", self.images]
        if timeout_s is not None:
            args += ["--timeout", str(timeout_s)]
        args.append("-")
        proc = subprocess.run(args, input=code, capture_output=True, text=True, timeout=timeout,
                              cwd=SOURCE_DIR, env=dict(os.environ, **(env or {})))
        try:
            return json.loads(proc.stdout), proc
        except json.JSONDecodeError:
            return None, proc

    def popen(self, code, env=None):
        """Starts `code` in a box without waiting (for the cases with two boxes at once)."""
        p = subprocess.Popen([BINARY, "run", "--backend", self.backend_arg, "--json", "--policy",
                              self.policy(), "--images", self.images, "-"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=SOURCE_DIR,
                             env=dict(os.environ, **(env or {})))
        p.stdin.write(code)
        p.stdin.close()
        return p

    def unavailable(self):
        """None when this backend can run here, else the reason it cannot."""
        raise NotImplementedError


class Native(Backend):
    def __init__(self):
        super().__init__("native", "native", {LANDLOCK, WATCH, USERNS})

    def unavailable(self):
        if not os.access(BINARY, os.X_OK):
            return f"{BINARY} not built"
        if os.geteuid() != 0:
            return "the native backend's full confinement needs root (unprivileged runs fail closed)"
        return None


class NativeImage(Native):
    """The native backend with the policy's image resolved to a stored OCI image (issue 18): a test
    image made from the host's files, laid out as the official Python images (python at
    /usr/local/bin/python3), imported into a temp image store (image_fixture.py). The box's root is
    the store's unpacked layers as a read-only overlayfs, not the host's directories."""

    def __init__(self):
        super().__init__()
        self.name = "native-image"
        self.fixture = None

    def unavailable(self):
        import image_fixture
        reason = super().unavailable() or image_fixture.unavailable()
        if reason:
            return reason
        try:
            self.fixture = image_fixture.prepare(BINARY)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            return f"the test image could not be made: {e}"
        self.images = self.fixture["images"]
        print(f"backend native-image: test image {image_fixture.IMAGE} in {self.fixture['store']} "
              f"({len(self.fixture['layers'])} layers, made in {self.fixture['seconds']:.1f} s)", flush=True)
        return None

    def policy(self):
        import image_fixture
        if self._policy is None:
            with open(SEED_POLICY) as f:
                text = image_fixture.policy_text(f.read())
            fd, self._policy = tempfile.mkstemp(prefix="lsb-adv-image-", suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                f.write(text)
        return self._policy

    def cleanup(self):
        import image_fixture
        super().cleanup()
        image_fixture.cleanup()


class NativeForkServer(Native):
    """The native backend behind `serve --fork-server` (docs/architecture.md "Fork server"): each
    case's program is POSTed to a daemon whose boxes are made by forks of the policy's interpreter,
    and the case's box is such a fork, confined in place. The cases that drive `llm-sandbox run`
    itself (its process, its environment) are not for this lane (`cli` False). The daemon has two
    tokens: a two-box case's box A (popen) is token A's, every other box token B's, so box A and
    box B are two tenants' and come from two zygotes (issue 32: what one zygote's boxes share, per-user
    counts and randomness, is shared within one token only; docs/security.md)."""

    cli = False
    TOKEN_A, TOKEN_B = "adversarial-token-a-0123456789", "adversarial-token-b-0123456789"

    def __init__(self):
        super().__init__()
        self.name = "native/fork-server"
        self._daemon = None
        self._lock = threading.Lock()
        self._dir = None

    def _base(self):
        with self._lock:
            if self._daemon is None:
                import shutil
                sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "integration"))
                from daemon_harness import Daemon
                self._dir = tempfile.mkdtemp(prefix="lsb-adv-fork-")
                shutil.copy(self.policy(), os.path.join(self._dir, "code-sandbox.yaml"))
                self._daemon = Daemon("--backend", "native", "--fork-server", "--pool-size", "2",
                                      "--default-policy", "code-sandbox", policies=self._dir,
                                      env={"LLM_SANDBOX_TOKENS": f"{self.TOKEN_A},{self.TOKEN_B}"})
            return self._daemon.base

    def run(self, code, timeout_s=None, timeout=180, env=None, token=None):
        import urllib.request
        body = {"code": code}
        if timeout_s is not None:
            body["timeout"] = timeout_s
        req = urllib.request.Request(self._base() + "/v1/execute", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {token or self.TOKEN_B}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
            return json.loads(text), subprocess.CompletedProcess(["POST /v1/execute"], 0, text, "")
        except Exception as e:  # noqa: BLE001 (the case reports what came back)
            detail = getattr(e, "read", lambda: b"")().decode(errors="replace") if hasattr(e, "read") else ""
            if self._daemon and self._daemon.proc.poll() is not None:
                detail = f"the daemon exited {self._daemon.proc.returncode} ({self._daemon.log()[-300:]}) {detail}"
            return None, subprocess.CompletedProcess(["POST /v1/execute"], 1, "", f"{e} {detail}")

    def popen(self, code, env=None):
        return _Pending(lambda: self.run(code, token=self.TOKEN_A)[1])

    def shared_counts(self):
        """Box A and box B are two tokens' here, from two zygotes: nothing is shared (within one token
        the counts are, docs/security.md issue 32's "Class 1")."""
        return None

    def cleanup(self):
        super().cleanup()
        if self._daemon:
            said = [line for line in self._daemon.log().splitlines() if "fork server" in line]
            if said:  # a box the server could not make started on its own: what it said, once each
                print(f"backend {self.name}: the daemon said:\n  " + "\n  ".join(dict.fromkeys(said)), flush=True)
            self._daemon.close()
            self._daemon = None
        if self._dir:
            import shutil
            shutil.rmtree(self._dir, True)


class _Pending:
    """A run in a thread, as much of subprocess.Popen as the two-box cases use."""

    def __init__(self, fn):
        import io
        self._done = None
        self.stdout = io.StringIO()
        self._thread = threading.Thread(target=self._go, args=(fn,))
        self._thread.start()

    def _go(self, fn):
        proc = fn()
        self.stdout.write(proc.stdout)
        self.stdout.seek(0)
        self._done = proc.returncode

    def wait(self, timeout=None):
        self._thread.join(timeout)
        return self._done


def _engine_answers():
    try:
        return subprocess.run(["docker", "version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_prepared = {}


def _prepare_docker():
    """Makes the engine and the test image exist (idempotent, cached); None or the reason."""
    if "docker" in _prepared:
        return _prepared["docker"]
    reason = None
    if os.geteuid() == 0:
        for script in ("ensure-docker.sh", "build-test-image.sh"):
            rc = subprocess.run([os.path.join(SOURCE_DIR, "scripts", script)], timeout=900).returncode
            if rc != 0:
                reason = f"scripts/{script} failed (exit {rc})"
                break
    if reason is None and not _engine_answers():
        reason = "no Docker engine answers (run: sudo scripts/ensure-docker.sh)"
    if reason is None and subprocess.run(["docker", "image", "inspect", TEST_IMAGE],
                                         capture_output=True, timeout=30).returncode != 0:
        reason = f"the test image {TEST_IMAGE} is missing (run: scripts/build-test-image.sh)"
    _prepared["docker"] = reason
    return reason


class DockerRunc(Backend):
    def __init__(self):
        super().__init__("docker/runc", "docker", {LANDLOCK, WATCH})

    def unavailable(self):
        if not os.access(BINARY, os.X_OK):
            return f"{BINARY} not built"
        return _prepare_docker()


class DockerRunsc(Backend):
    # Landlock and seccomp user notification do not exist under gVisor; the policy accepts that.
    def __init__(self):
        super().__init__("docker/runsc", "docker", {GVISOR},
                         ["runtime: runsc", "gvisor_accept_weaker: true"])

    def unavailable(self):
        reason = DockerRunc().unavailable()
        if reason:
            return reason
        info = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"],
                              capture_output=True, text=True, timeout=30).stdout
        if "runsc" not in info:
            return "runsc is not registered with the engine (apt-get install runsc; scripts/ensure-docker.sh)"
        return None


def all_backends():
    return [Native(), NativeImage(), NativeForkServer(), DockerRunc(), DockerRunsc()]
