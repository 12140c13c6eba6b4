"""Helpers shared by the Docker daemon suites (stdlib only): engine/image setup, a free port, a
small HTTP client, waiting for a daemon to answer, and listing this project's containers."""
import json
import os
import socket
import subprocess
import time
import unittest
import urllib.error
import urllib.request

SOURCE_DIR = os.environ.get("LSB_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("LSB_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
BINARY = os.path.join(BUILD_DIR, "llm-sandbox")
OWNER_LABEL = "io.llm-sandbox.owner"


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


def containers(label=OWNER_LABEL):
    """{id: owner label} of every container carrying `label` (running or not)."""
    out = subprocess.run(["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={label}"],
                         capture_output=True, text=True, timeout=30).stdout.split()
    if not out:
        return {}
    insp = subprocess.run(["docker", "inspect", *out], capture_output=True, text=True, timeout=30).stdout
    res = {}
    for c in json.loads(insp or "[]"):
        res[c["Id"]] = (c["Config"].get("Labels") or {}).get(OWNER_LABEL, "")
    return res


def owned_by_pid(pid):
    """Containers whose owner label names this host's process `pid`."""
    return [cid for cid, owner in containers().items() if owner.split("/")[1:2] == [str(pid)]]
