"""Shared pieces of the monitoring suites (tests/integration/test_monitoring*.py): a policy
directory with small limits, a webhook receiver that checks the HMAC signature, and an SSE reader
for GET /v1/events. Stdlib only."""
import hashlib
import hmac
import http.server
import json
import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from daemon_harness import Daemon, request  # noqa: F401  (re-exported for the suites)
from harness import BINARY

SECRET = "test-webhook-secret"

POLICY = """version: "1.0"
name: mon
container:
  image: python:3.12-slim
  tmpfs:
    /tmp: "size=16M,noexec,nosuid"
network:
  enabled: false
commands:
  allow: ["/usr/bin/python3"]
  deny: ["/bin/sh", "/bin/bash"]
resources:
  cpu: 1
  memory: 64M
  timeout: 4s
  pids: 16
  output: 64k
monitoring:
  alerts:
    network_attempt: critical
    pids_limit: critical
"""

TRACE_POLICY = POLICY.replace("name: mon", "name: mon-trace").replace(
    "monitoring:\n", "monitoring:\n  trace: true\n")


# The daemon's backend for these suites: the CTest entries set it (integration_monitoring: native,
# integration_monitoring_docker: docker); `llm-sandbox serve` reads the same variable.
BACKEND = os.environ.get("LLM_SANDBOX_BACKEND", "native")
_backend_ready = False


def _prepare_docker():
    """The engine and the test image (scripts/ensure-docker.sh installs and starts dockerd when root)."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    engine = subprocess.run(["docker", "version"], capture_output=True, timeout=30).returncode == 0 \
        if shutil.which("docker") else False
    if os.geteuid() != 0 and not engine:
        raise unittest.SkipTest("no Docker engine answers and we are not root (run: sudo scripts/ensure-docker.sh)")
    subprocess.run([os.path.join(root, "scripts", "ensure-docker.sh")], check=True, timeout=600)
    subprocess.run([os.path.join(root, "scripts", "build-test-image.sh")], check=True, timeout=900)


def skip_unless_monitoring_suite():
    global _backend_ready
    if os.environ.get("LSB_MONITORING_SUITE") != "1":
        raise unittest.SkipTest("run by the integration_monitoring CTest entries (LSB_MONITORING_SUITE=1)")
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest(f"{BINARY} not built")
    if BACKEND == "docker" and not _backend_ready:
        _prepare_docker()
        _backend_ready = True


def skip_unless_native(why):
    """For daemon-level behaviour that does not depend on the backend: tested once, on native."""
    if BACKEND != "native":
        raise unittest.SkipTest(f"backend-independent ({why}); run by integration_monitoring on native")


def policy_dir(add_cleanup):
    """A temp directory with the mon and mon-trace policies, removed at the end by `add_cleanup` (a
    test's addCleanup or a class's addClassCleanup; cleanups run last in, first out, so a daemon's
    close registered after this call runs before the directory goes)."""
    d = tempfile.mkdtemp(prefix="lsb-mon-policies-")
    add_cleanup(shutil.rmtree, d, True)
    for name, text in (("mon", POLICY), ("mon-trace", TRACE_POLICY)):
        with open(os.path.join(d, name + ".yaml"), "w") as f:
            f.write(text)
    return d


class WebhookReceiver:
    """An http.server on a free loopback port; every POST is checked and queued."""

    def __init__(self, secret=SECRET, fail_first=0):
        self.received = queue.Queue()
        self.bad_signatures = 0
        self.fail_left = fail_first
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if outer.fail_left > 0:
                    outer.fail_left -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                want = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
                got = self.headers.get("X-LLM-Sandbox-Signature", "")
                if not hmac.compare_digest(want, got):
                    outer.bad_signatures += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                outer.received.put({"headers": dict(self.headers), "body": json.loads(body)})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, pred, timeout=20):
        deadline = time.time() + timeout
        seen = []
        while time.time() < deadline:
            try:
                item = self.received.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(item)
            if pred(item["body"]):
                return item
        raise AssertionError(f"no matching webhook within {timeout}s; got {[s['body'] for s in seen]}")

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class EventReader:
    """Reads GET /v1/events on its own thread into a queue of (type, data)."""

    def __init__(self, port, types=""):
        self.events = queue.Queue()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        path = "/v1/events" + (f"?types={types}" if types else "")
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not self.ready.wait(10):
            raise AssertionError("GET /v1/events did not answer")

    def _run(self):
        buf = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                buf += chunk
                if not self.ready.is_set():
                    if b"\r\n\r\n" not in buf:
                        continue  # the status line and headers may arrive in several reads
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    assert b" 200 " in head.split(b"\r\n")[0], head
                    self.ready.set()
                # Chunked transfer coding: the SSE text is inside chunks; strip the size lines.
                text = _dechunk(buf)
                if text is None:
                    continue
                body, buf = text
                for block in body.split("\n\n"):
                    etype, data = None, ""
                    for line in block.split("\n"):
                        if line.startswith("event: "):
                            etype = line[7:]
                        elif line.startswith("data: "):
                            data += line[6:]
                    if etype and data:
                        self.events.put((etype, json.loads(data)))
        except OSError:
            pass

    def wait_for(self, etype, pred=lambda d: True, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                t, d = self.events.get(timeout=0.2)
            except queue.Empty:
                continue
            if t == etype and pred(d):
                return d
        raise AssertionError(f"no {etype} event within {timeout}s")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _dechunk(buf):
    """Complete chunks of `buf` -> (text, rest); None when no complete chunk is there yet."""
    out = b""
    while True:
        nl = buf.find(b"\r\n")
        if nl < 0:
            break
        size = int(buf[:nl].split(b";")[0] or b"0", 16)
        if len(buf) < nl + 2 + size + 2:
            break
        out += buf[nl + 2:nl + 2 + size]
        buf = buf[nl + 2 + size + 2:]
    if not out:
        return None
    return out.decode("utf-8", "replace"), buf


def read_audit(path):
    """Every record of the audit log (rotated files first); asserts each line is whole JSON."""
    files = []
    i = 1
    while os.path.exists(f"{path}.{i}"):
        files.insert(0, f"{path}.{i}")
        i += 1
    files.append(path)
    out = []
    for fn in files:
        with open(fn, "rb") as f:
            data = f.read()
        assert not data or data.endswith(b"\n"), f"{fn} ends with a torn line: {data[-200:]!r}"
        for line in data.splitlines():
            out.append(json.loads(line))
    return out
