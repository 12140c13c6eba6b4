"""Drives the real `llm-sandbox serve` for the daemon suites (stdlib only): start/stop a daemon on a
free port, HTTP helpers, the daemon's process tree, and a check of answers against docs/openapi.yaml
(read with a tiny reader for the plain block YAML that file is written in).

The suites run only from the integration_daemon CTest entry (LSB_DAEMON_SUITE=1), not a second time
from integration_native's discovery of test_*.py.
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from harness import BINARY, IMAGES, SOURCE_DIR

POLICY_DIR = os.path.join(SOURCE_DIR, "policies")
OPENAPI = os.path.join(SOURCE_DIR, "docs", "openapi.yaml")


def sanitized_build():
    """True for scripts/sanitize.sh's ASan+UBSan build (its CMakeCache says LSB_SANITIZE=ON)."""
    try:
        with open(os.path.join(os.environ.get("LSB_BUILD_DIR", ""), "CMakeCache.txt")) as f:
            return any(line.strip() == "LSB_SANITIZE:BOOL=ON" for line in f)
    except OSError:
        return False


def skip_unless_daemon_suite():
    if os.environ.get("LSB_DAEMON_SUITE") != "1":
        raise unittest.SkipTest("run by the integration_daemon CTest entry (LSB_DAEMON_SUITE=1)")
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest(f"{BINARY} not built")


# ---- a YAML subset: block mappings and sequences, quoted/plain scalars, flow lists of scalars.

def _scalar(s):
    if s.startswith('"'):
        return json.loads(s)
    if s.startswith("'") and s.endswith("'"):
        return s[1:-1].replace("''", "'")
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].strip()
        return [_scalar(x.strip()) for x in inner.split(",")] if inner else []
    if s == "{}":
        return {}
    if s in ("true", "false"):
        return s == "true"
    if s in ("null", "~"):
        return None
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    if re.fullmatch(r"-?\d+\.\d*", s):
        return float(s)
    return s


def _split_key(s):
    if s.startswith('"'):
        end = s.index('"', 1)
        key, rest = json.loads(s[:end + 1]), s[end + 1:]
        assert rest.startswith(":"), s
        return key, rest[1:].strip()
    m = re.match(r"^([^\s][^:]*?):(?:\s+(.*))?$", s)
    assert m, f"not a mapping line: {s!r}"
    return m.group(1), (m.group(2) or "").strip()


def _is_key(s):
    if s.startswith('"'):
        end = s.find('"', 1)
        return end > 0 and s[end + 1:end + 2] == ":"
    return re.match(r"^[^\s\"'\[{][^:]*:(\s|$)", s) is not None


def _block(lines, i, ind):
    if lines[i][1].startswith("-"):
        out = []
        while i < len(lines) and lines[i][0] == ind and lines[i][1].startswith("-"):
            rest = lines[i][1][1:].strip()
            if not rest:
                v, i = _block(lines, i + 1, lines[i + 1][0])
            elif _is_key(rest):
                lines[i] = (ind + 2, rest)
                v, i = _block(lines, i, ind + 2)
            else:
                v, i = _scalar(rest), i + 1
            out.append(v)
        return out, i
    out = {}
    while i < len(lines) and lines[i][0] == ind and not lines[i][1].startswith("- "):
        key, rest = _split_key(lines[i][1])
        i += 1
        if rest:
            out[key] = _scalar(rest)
        elif i < len(lines) and (lines[i][0] > ind or (lines[i][0] == ind and lines[i][1].startswith("- "))):
            out[key], i = _block(lines, i, lines[i][0])
        else:
            out[key] = None
    return out, i


def load_yaml(text):
    lines = []
    for raw in text.splitlines():
        s = raw.rstrip()
        if not s.strip() or s.strip().startswith("#"):
            continue
        lines.append((len(s) - len(s.lstrip(" ")), s.strip()))
    value, _ = _block(lines, 0, lines[0][0])
    return value


class OpenApi:
    """Checks answers against the schemas of docs/openapi.yaml."""

    def __init__(self, path=OPENAPI):
        with open(path, encoding="utf-8") as f:
            self.spec = load_yaml(f.read())

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/"), ref
            node = self.spec
            for part in ref[2:].split("/"):
                node = node[part]
        return node

    def errors(self, value, schema, where="$"):
        schema = self.resolve(schema)
        if "oneOf" in schema:
            alts = [self.errors(value, alt, where) for alt in schema["oneOf"]]
            return [] if any(not a for a in alts) else [f"{where}: matches no alternative: {alts}"]
        if value is None:
            return [] if schema.get("nullable") else [f"{where}: null is not allowed"]
        t = schema.get("type")
        checks = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
                  "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
                  "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
                  "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}
        if t and not checks[t](value):
            return [f"{where}: expected {t}, got {type(value).__name__} {value!r:.80}"]
        errs = []
        if "enum" in schema and value not in schema["enum"]:
            errs.append(f"{where}: {value!r} not in {schema['enum']}")
        if t == "object":
            for key in schema.get("required", []):
                if key not in value:
                    errs.append(f"{where}: required field {key!r} missing")
            props = schema.get("properties", {}) or {}
            for key, v in value.items():
                if key in props:
                    errs += self.errors(v, props[key], f"{where}.{key}")
                elif isinstance(schema.get("additionalProperties"), dict):
                    errs += self.errors(v, schema["additionalProperties"], f"{where}.{key}")
                elif schema.get("additionalProperties") is False:
                    errs.append(f"{where}: unexpected field {key!r}")
        if t == "array" and "items" in schema:
            for n, item in enumerate(value):
                errs += self.errors(item, schema["items"], f"{where}[{n}]")
        return errs

    def response_schema(self, method, template, status):
        op = self.spec["paths"][template][method.lower()]
        responses = op["responses"]
        assert str(status) in responses, f"{method} {template}: status {status} is not documented"
        resp = self.resolve(responses[str(status)])
        content = resp.get("content") or {}
        return content.get("application/json", {}).get("schema")

    def check(self, method, template, status, body):
        """Raises AssertionError when `body` (parsed JSON) does not match the documented answer."""
        schema = self.response_schema(method, template, status)
        if schema is None:
            return
        errs = self.errors(body, schema)
        assert not errs, f"{method} {template} {status} does not match docs/openapi.yaml:\n" + "\n".join(errs)


# ---- the daemon process

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """One `llm-sandbox serve` process on a free loopback port."""

    def __init__(self, *extra, policies=POLICY_DIR, env=None, host="127.0.0.1", wait=True):
        self.port = free_port()
        self.host = host
        self.log_file = tempfile.NamedTemporaryFile(prefix="lsb-serve-", suffix=".log", delete=False)
        args = [BINARY, "serve", "--listen", f"{host}:{self.port}", "--policies", policies,
                "--images", IMAGES] + list(extra)
        full_env = dict(os.environ)
        full_env.pop("LLM_SANDBOX_TOKENS", None)
        full_env.update(env or {})
        self.proc = subprocess.Popen(args, stdout=self.log_file, stderr=subprocess.STDOUT, cwd=SOURCE_DIR,
                                     env=full_env)
        self.base = f"http://127.0.0.1:{self.port}"
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                self.close()  # the error already carries the log; nobody gets a Daemon to close
                raise

    def log(self):
        with open(self.log_file.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.05)
        raise AssertionError(f"daemon not up within {timeout}s:\n{self.log()}")

    def descendants(self):
        """PIDs of every process below the daemon (its boxes)."""
        children = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
        out, todo = [], [self.proc.pid]
        while todo:
            p = todo.pop()
            for c in children.get(p, []):
                out.append(c)
                todo.append(c)
        return out

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"daemon did not stop within {timeout}s after {sig}:\n{self.log()}")
        return self.proc.returncode

    def close(self):
        """Kills the daemon if it still runs and removes its log (kept until now, with delete=False,
        so that failure messages can quote it). Idempotent: tests register it with addCleanup /
        addClassCleanup right after the start, so it runs on failures too."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()
        try:
            os.unlink(self.log_file.name)
        except OSError:
            pass


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body.decode("utf-8"))


def request(base, method, path, body=None, token=None, headers=None, timeout=120, raw=False):
    """One HTTP request; returns Response for every status (never raises on 4xx/5xx)."""
    data = None
    h = dict(headers or {})
    if body is not None:
        if raw:
            data = body
            h.setdefault("Content-Type", "application/octet-stream")
        else:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
    if token:
        h["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Response(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        return Response(e.code, e.headers, e.read())
