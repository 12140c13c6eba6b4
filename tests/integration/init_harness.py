"""Drives llm-sandbox-init directly, the way a backend does, with the Python standard library.

The harness stands in for the native backend: it starts init as PID 1 of fresh user (0..65535
mapped to 100000..165535 on the host), mount, pid, net, ipc, uts and cgroup namespaces, with one
end of a socketpair as init's fd 0 and fd 1, then speaks the frame protocol of docs/protocol.md.
It needs root on the host (to write an arbitrary uid_map). Usage:

    with InitBox(path_to_init) as box:
        assert box.setup(allow=["/usr/bin/python3"])["type"] == "ready"
        r = box.run(["python3", "{file}"], 'print("hi")', file_name="main.py")
        r.stdout, r.stderr, r.events, r.exit
"""

import ctypes
import json
import os
import socket
import struct
import time

FRAME = {"setup": 1, "run": 2, "code": 3, "stdin": 4, "stdin_eof": 5, "kill": 6, "shutdown": 7,
         "ready": 64, "stdout": 65, "stderr": 66, "event": 67, "exit": 68, "error": 69}
NAME = {v: k for k, v in FRAME.items()}

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x10000000, 0x20000000, 0x40000000
HOST_BASE = 100000


def encode(kind, payload=b""):
    if isinstance(payload, (dict, list)):
        payload = json.dumps(payload).encode()
    elif isinstance(payload, str):
        payload = payload.encode()
    return struct.pack("<IB", len(payload), FRAME[kind]) + payload


class RunResult:
    def __init__(self):
        self.stdout = b""
        self.stderr = b""
        self.events = []
        self.exit = None
        self.error = None
        self.frames = []

    def alerts(self, rule=None):
        return [e for e in self.events if e.get("rule") and (rule is None or e["rule"] == rule)]

    def __repr__(self):
        return (f"RunResult(exit={self.exit}, error={self.error}, stdout={self.stdout[:300]!r}, "
                f"stderr={self.stderr[:600]!r}, events={self.events})")


class InitBox:
    def __init__(self, binary, stderr_path=None):
        self.binary = binary
        self.stderr_path = stderr_path
        self.sock = None
        self.pid = None
        self.buf = b""

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self):
        libc = ctypes.CDLL(None, use_errno=True)
        ours, theirs = socket.socketpair()
        unshared_r, unshared_w = os.pipe()
        mapped_r, mapped_w = os.pipe()
        err_fd = os.open(self.stderr_path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                flags = (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                         CLONE_NEWUTS | CLONE_NEWCGROUP)
                if libc.unshare(flags) != 0:
                    os._exit(90)
                os.write(unshared_w, b"x")
                os.read(mapped_r, 1)
                os.setresgid(0, 0, 0)
                os.setgroups([])
                os.setresuid(0, 0, 0)
                child = os.fork()  # PID 1 of the new pid namespace
                if child == 0:
                    os.dup2(theirs.fileno(), 0)
                    os.dup2(theirs.fileno(), 1)
                    os.dup2(err_fd, 2)
                    os.closerange(3, 65536)
                    os.execv(self.binary, [self.binary])
                theirs.close()
                _, status = os.waitpid(child, 0)
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
            except BaseException:
                os._exit(91)
        theirs.close()
        os.close(err_fd)
        os.read(unshared_r, 1)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as f:
                f.write(f"0 {HOST_BASE} 65536\n")
        os.write(mapped_w, b"x")
        for fd in (unshared_r, unshared_w, mapped_r, mapped_w):
            os.close(fd)
        self.sock, self.pid = ours, pid

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None
        if self.pid:
            deadline = time.time() + 10
            while time.time() < deadline:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.02)
            else:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            self.pid = None

    def send(self, kind, payload=b""):
        self.sock.sendall(encode(kind, payload))

    def recv(self, timeout=60):
        self.sock.settimeout(timeout)
        while True:
            if len(self.buf) >= 5:
                n, t = struct.unpack("<IB", self.buf[:5])
                if len(self.buf) >= 5 + n:
                    payload, self.buf = self.buf[5:5 + n], self.buf[5 + n:]
                    return NAME.get(t, str(t)), payload
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None, b""
            self.buf += chunk

    def setup(self, **fields):
        box = {"mode": "build_root", "rootfs": "host", "allow": ["/usr/bin/python3"],
               "tmpfs": [{"path": "/tmp", "size_bytes": 64 << 20, "mode": 0o1777}]}
        box.update(fields)
        self.send("setup", box)
        kind, payload = self.recv()
        return {"type": kind, **(json.loads(payload) if payload else {})}

    def run(self, argv, code="", stdin=None, kill_after=None, timeout=120, **spec):
        spec = {"argv": argv, **spec}
        if stdin is not None:
            spec["stdin_follows"] = True
        self.send("run", spec)
        self.send("code", code)
        if stdin is not None:
            self.send("stdin", stdin)
            self.send("stdin_eof")
        if kill_after is not None:
            time.sleep(kill_after)
            self.send("kill")
        r = RunResult()
        while True:
            kind, payload = self.recv(timeout)
            if kind is None:
                r.error = {"message": "init closed the stream"}
                return r
            r.frames.append((kind, len(payload)))
            if kind == "stdout":
                r.stdout += payload
            elif kind == "stderr":
                r.stderr += payload
            elif kind == "event":
                r.events.append(json.loads(payload))
            elif kind == "exit":
                r.exit = json.loads(payload)
                return r
            elif kind == "error":
                r.error = json.loads(payload)
                return r


def py(box, code, **kw):
    """Runs Python code in the box."""
    return box.run(["/usr/bin/python3", "{file}"], code, file_name="main.py", **kw)
