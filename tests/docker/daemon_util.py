"""Helpers shared by the Docker suites (stdlib only): engine/image setup, a free port, a small HTTP
client, a daemon under test, waiting for it to answer, and what this project left behind
(containers, volumes, temp files)."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

# The build's and the repo's paths: one definition for every suite (tests/integration/harness.py,
# whose import also gives every daemon these suites start a temporary state directory).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import BINARY, BUILD_DIR, IMAGES, SEED_POLICY, SOURCE_DIR  # noqa: E402,F401
OWNER_LABEL = "io.llm-sandbox.owner"
POLICIES = os.path.join(SOURCE_DIR, "policies")

# What the CLI, the daemon or the engine on their behalf could leave in the shared temp dirs.
TMP_DIRS = ("/tmp", "/dev/shm")
TMP_NAME = re.compile(r"llm|lsb|sandbox|docker", re.I)

# The engine ping scripts/ensure-docker.sh uses too (Docker or Podman answering GET /_ping).
sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))
from engine_ping import answers as engine_answers  # noqa: E402,F401


def prepare_engine_or_skip():
    """Engine + test image (cached), or SkipTest with the reason."""
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest(f"{BINARY} not built")
    answers = subprocess.run(["docker", "version"], capture_output=True, timeout=30).returncode == 0
    if os.geteuid() != 0 and not answers:
        raise unittest.SkipTest("no Docker engine answers and we are not root (run: sudo scripts/ensure-docker.sh)")
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "ensure-docker.sh")], check=True, timeout=600)
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "build-test-image.sh")], check=True, timeout=900)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(base, method, path, body=None, token=None, timeout=120):
    """(status, parsed JSON or raw text) for one HTTP call; HTTP errors are answers, not exceptions."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text) if text else None
    except json.JSONDecodeError:
        return status, text


def wait_healthy(base, proc=None, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    return False


def containers(label=OWNER_LABEL, env=None):
    """{id: owner label} of every container carrying `label` (running or not)."""
    out = subprocess.run(["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={label}"],
                         capture_output=True, text=True, timeout=30, env=env).stdout.split()
    if not out:
        return {}
    insp = subprocess.run(["docker", "inspect", *out], capture_output=True, text=True, timeout=30, env=env).stdout
    res = {}
    for c in json.loads(insp or "[]"):
        res[c["Id"]] = (c["Config"].get("Labels") or {}).get(OWNER_LABEL, "")
    return res


def owned_by_pid(pid, env=None):
    """Containers whose owner label names this host's process `pid` (or one of the pids in a set)."""
    pids = {str(p) for p in pid} if isinstance(pid, (set, list, tuple)) else {str(pid)}
    return [cid for cid, owner in containers(env=env).items() if (owner.split("/") + ["", ""])[1] in pids]


def volumes(env=None, dangling=False):
    """{name: labels} of every volume of the engine (only those no container uses, with `dangling`)."""
    args = ["docker", "volume", "ls", "-q"] + (["--filter", "dangling=true"] if dangling else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=30, env=env).stdout.split()
    if not out:
        return {}
    insp = subprocess.run(["docker", "volume", "inspect", *out], capture_output=True, text=True, timeout=30,
                          env=env).stdout
    return {v["Name"]: v.get("Labels") or {} for v in json.loads(insp or "[]")}


def tmp_entries():
    """Entries of the shared temp dirs whose names look like ours (llm-sandbox, lsb, docker...)."""
    found = set()
    for d in TMP_DIRS:
        try:
            found |= {os.path.join(d, n) for n in os.listdir(d) if TMP_NAME.search(n)}
        except OSError:
            pass
    return found


class Leftovers:
    """What exists before a test, so that what it leaves behind can be named afterwards: containers
    owned by the given processes, volumes carrying an llm-sandbox label or new since the snapshot
    and used by no container (no volume is ever ours: the init is bind-mounted; LLM_SANDBOX_INIT_VOLUME names a shared,
    pre-existing one), new temp entries with our names, and anything in the private TMPDIR the
    processes under test were given."""

    def __init__(self, env=None, private_tmp=None):
        self.env = env
        self.private_tmp = private_tmp
        self.volumes = set(volumes(env))
        self.tmp = tmp_entries()

    def report(self, pids=()):
        """{kind: [names]} of what is left (empty when clean)."""
        left = {}
        if pids:
            c = owned_by_pid(set(pids), env=self.env)
            if c:
                left["containers"] = c
        # A new volume still in use belongs to a live container (on a shared engine, maybe another
        # engineer's); a new one that nothing uses, or any with our label, was left behind.
        v = [n for n, labels in volumes(self.env, dangling=True).items()
             if n not in self.volumes or any(k.startswith("io.llm-sandbox") for k in labels)]
        v += [n for n, labels in volumes(self.env).items()
              if any(k.startswith("io.llm-sandbox") for k in labels) and n not in v]
        if v:
            left["volumes"] = v
        # The shared temp dirs cannot say who made an entry: on a shared machine other engineers'
        # suites come and go there (their daemons' logs are named lsb-*), so new entries fail the
        # test only where nothing else runs: in CI ($CI set, tests run one after another) or with
        # LSB_STRICT_TMP=1; elsewhere they are printed.
        t = sorted(tmp_entries() - self.tmp)
        if t:
            if os.environ.get("LSB_STRICT_TMP", "1" if os.environ.get("CI") else "0") == "1":
                left["tmp"] = t
            else:
                print(f"\nnote: new entries in the shared temp dirs (not failing outside CI): {t}")
        if self.private_tmp and os.path.isdir(self.private_tmp):
            p = sorted(os.listdir(self.private_tmp))
            if p:
                left["private TMPDIR"] = p
        return left


class Daemon:
    """`llm-sandbox serve --backend docker` on a free port; its log goes to `log_dir` (default
    $TMPDIR), which the hygiene tests keep out of the temp dirs they watch. close() removes the log
    (register it with addCleanup / addClassCleanup: failure messages quote output() before that)."""

    def __init__(self, pool_size=2, env=None, log_dir=None, extra=()):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        log_dir = log_dir or os.environ.get("TMPDIR", "/tmp")
        self.log_path = os.path.join(log_dir, f"lsb-docker-serve-{self.port}.log")
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--backend", "docker", "--listen", f"127.0.0.1:{self.port}", "--policies", POLICIES,
             "--images", IMAGES, "--pool-size", str(pool_size), "--max-concurrency", "4", "--shutdown-grace", "2",
             *extra],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=SOURCE_DIR, env=env)
        if not wait_healthy(self.base, self.proc):
            self.stop()
            text = self.output()
            self.close()  # nobody gets this Daemon to close
            raise AssertionError("daemon did not come up:\n" + text)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def close(self):
        self.stop()
        self.log.close()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
