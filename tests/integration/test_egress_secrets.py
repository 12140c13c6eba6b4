"""network.secrets (docs/network.md "Secrets"), through the real binary and
a real daemon: the egress proxy adds the header for the named host only, with the value taken from
the CLI's/daemon's environment or a --secrets-file; the value never appears inside the box
(environment, /proc, files, what the upstream echoes back), in the result, the logs, the event
stream or the audit log. A missing variable refuses the run with an error naming it.

How "never appears" is checked without handing the value to the box: every secret is a public
MARKER followed by random hex. The program builds MARKER at run time (its own text never holds it
whole) and searches for it everywhere it can read; any verbatim copy of the value holds MARKER.
Outside, the test searches its own captures for the whole value.

Native here (integration_native); tests/docker/test_docker_egress.py runs the same classes on
Docker/runc with BACKEND = "docker" (integration_docker)."""
import http.server
import json
import os
import secrets as pysecrets
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import unittest

from harness import BINARY, IMAGES, SOURCE_DIR, SandboxTestCase

try:
    from test_egress import make_ca_and_cert
except ImportError:  # pragma: no cover (python3-cryptography missing)
    make_ca_and_cert = None

MARKER = "lsbsecret-"


def new_secret():
    return MARKER + pysecrets.token_hex(16)


class EchoHandler(http.server.BaseHTTPRequestHandler):
    """Answers with the request head it got, as a reflecting API would; records each head."""
    protocol_version = "HTTP/1.1"
    seen = []

    def do_GET(self):
        EchoHandler.seen.append((self.headers.get("Host"), self.path, self.headers.get_all("Authorization") or []))
        body = (self.requestline + "\r\n" + str(self.headers)).encode()
        self.send_response(200)
        self.send_header("X-Seen-Authorization", self.headers.get("Authorization", ""))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


# The program: fetches through the proxy, then searches everything it can read for MARKER.
PROGRAM = r'''
import json, os, urllib.request
marker = "lsb" + "secret-"
hits = []
def scan(where, data):
    if isinstance(data, str):
        data = data.encode(errors="replace")
    if marker.encode() in data:
        hits.append(where)
def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers.get("X-Seen-Authorization", ""), r.read().decode(errors="replace")
    except Exception as e:
        return "error", "", repr(e)
api = get("http://api.test:%(port)d/v1/thing", {"Authorization": "Bearer forged-by-the-program"})
other = get("http://other.test:%(port)d/plain")
for st, seen, body in (api, other):
    scan("response", seen + body)
for k, v in os.environ.items():
    scan("env " + k, v)
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for f in ("environ", "cmdline"):
            try:
                scan("/proc/%%s/%%s" %% (pid, f), open("/proc/%%s/%%s" %% (pid, f), "rb").read())
            except OSError:
                pass
files = 0
for top in ("/tmp", "/run", "/dev/shm", "/var", "/etc", "/home", "/root", "/opt", "/srv", "/mnt", os.getcwd()):
    for d, dirs, names in os.walk(top):
        for n in names:
            p = os.path.join(d, n)
            try:
                if os.path.isfile(p) and not os.path.islink(p) and os.path.getsize(p) < (4 << 20):
                    scan(p, open(p, "rb").read())
                    files += 1
            except OSError:
                pass
try:
    open(%(secrets_file)r).read()
    secrets_file = "readable"
except OSError as e:
    secrets_file = type(e).__name__
print(json.dumps({"api": api[:2], "api_body": api[2], "other": other[:2], "hits": hits, "files": files,
                  "secrets_file": secrets_file}))
'''


def policy_text(name, port, var, extra_allow=(), extra_secrets="", backend="native"):
    return f"""version: "1.0"
name: {name}
backend: {backend}
container:
  image: python:3.12-slim
  tmpfs:
    /tmp: "size=16M,noexec,nosuid"
network:
  enabled: true
  allow: {json.dumps(["api.test", "other.test", "wrong.test", f"127.0.0.1:{port}"] + list(extra_allow))}
  secrets:
    - host: api.test
      header: Authorization
      value: "Bearer ${{{var}}}"
{extra_secrets}commands:
  allow: ["/usr/bin/python3", "/usr/bin/curl"]
resources:
  memory: "256M"
  timeout: 120
"""


@unittest.skipUnless(os.geteuid() == 0, "the native backend enforces everything only as root")
class EgressSecretsNative(SandboxTestCase):
    BACKEND = "native"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = tempfile.mkdtemp(prefix="lsb-egress-secrets-")
        cls.srv = Server(("127.0.0.1", 0), EchoHandler)
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()
        cls.port = cls.srv.server_address[1]
        cls.pins = ["--egress-resolve", "api.test:127.0.0.1", "--egress-resolve", "other.test:127.0.0.1"]
        cls.policy = os.path.join(cls.dir, "secret.yaml")
        with open(cls.policy, "w") as f:
            f.write(policy_text("secret", cls.port, "LSB_TEST_API_TOKEN", backend=cls.BACKEND))

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        EchoHandler.seen.clear()

    def run_box(self, env_extra, extra=(), secrets_file="/nonexistent"):
        env = dict(os.environ)
        env.pop("LSB_TEST_API_TOKEN", None)
        env.update(env_extra)
        code = PROGRAM % {"port": self.port, "secrets_file": secrets_file}
        args = [BINARY, "run", "--backend", self.BACKEND, "--json", "--policy", self.policy, "--images", IMAGES]
        args += self.pins + list(extra) + ["-"]
        return subprocess.run(args, input=code, capture_output=True, text=True, timeout=240, cwd=SOURCE_DIR, env=env)

    def check_injected_and_absent(self, proc, token):
        self.assertNotIn(token, proc.stdout)
        self.assertNotIn(token, proc.stderr)
        r = json.loads(proc.stdout)
        self.assertEqual(r["status"], "ok", r)
        o = json.loads(r["stdout"].strip().splitlines()[-1])
        # Upstream: the header for api.test only, once, replacing the program's forged one.
        by_host = {h.split(":")[0]: auth for h, _, auth in EchoHandler.seen}
        self.assertEqual(by_host.get("api.test"), ["Bearer " + token], EchoHandler.seen)
        self.assertEqual(by_host.get("other.test"), [], EchoHandler.seen)
        # Inside: the echo of the header came back masked; nothing the box can read holds it.
        self.assertEqual(o["api"][0], 200, o)
        stars = "*" * len("Bearer " + token)  # the whole value masked
        self.assertEqual(o["api"][1], stars, o)
        self.assertIn("Authorization: " + stars, o["api_body"])
        self.assertEqual(o["other"], [200, ""], o)
        self.assertEqual(o["hits"], [], o)
        self.assertGreater(o["files"], 50, o)  # the search really read the box's files
        self.assertNotEqual(o["secrets_file"], "readable", o)
        return r

    def test_secret_from_the_environment_is_injected_for_its_host_only_and_absent_inside(self):
        token = new_secret()
        proc = self.run_box({"LSB_TEST_API_TOKEN": token})
        self.check_injected_and_absent(proc, token)

    def test_secret_from_a_secrets_file_wins_over_the_environment(self):
        token, decoy = new_secret(), new_secret()
        path = os.path.join(self.dir, "lsb.secrets")
        with open(path, "w") as f:
            f.write(f"# for the test\nLSB_TEST_API_TOKEN={token}\n")
        os.chmod(path, 0o600)
        proc = self.run_box({"LSB_TEST_API_TOKEN": decoy}, ["--secrets-file", path], secrets_file=path)
        self.check_injected_and_absent(proc, token)
        self.assertNotIn(decoy, proc.stdout)

    def test_a_group_readable_secrets_file_is_refused(self):
        path = os.path.join(self.dir, "open.secrets")
        with open(path, "w") as f:
            f.write("LSB_TEST_API_TOKEN=x\n")
        os.chmod(path, 0o644)
        proc = self.run_box({}, ["--secrets-file", path])
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("chmod 600", proc.stderr + proc.stdout)

    def test_a_missing_variable_refuses_the_run_naming_it(self):
        proc = self.run_box({})
        text = proc.stdout + proc.stderr
        self.assertNotEqual(proc.returncode, 0, text)
        self.assertIn("${LSB_TEST_API_TOKEN}", text)
        self.assertIn("network.secrets[0]", text)
        self.assertEqual(EchoHandler.seen, [])  # nothing ran


# Over HTTPS: default TLS settings (no cafile: SSL_CERT_FILE is the box's bundle), urllib and curl.
TLS_PROGRAM = r'''
import json, os, ssl, subprocess, urllib.request
marker = "lsb" + "secret-"
def get(url, ctx=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "forged"}), timeout=30,
                                    context=ctx) as r:
            return [r.status, r.headers.get("X-Seen-Authorization", ""), r.read().decode(errors="replace")]
    except urllib.error.HTTPError as e:
        return [e.code, "", e.read().decode(errors="replace")]
    except Exception as e:
        return ["error", "", repr(e)]
test_ca = "/tmp/test-ca.pem"
open(test_ca, "w").write(%(test_ca)r)
api = get("https://api.test:%(port)d/tls")
wrong = get("https://wrong.test:%(port)d/tls")
other = get("https://other.test:%(port)d/plain", ssl.create_default_context(cafile=test_ca))
curl = subprocess.run(["/usr/bin/curl", "-sS", "--max-time", "30", "-D", "-", "https://api.test:%(port)d/curl"],
                      capture_output=True, text=True) if os.path.exists("/usr/bin/curl") else None
curl = [curl.returncode, curl.stdout, curl.stderr] if curl else None
bundle = os.environ.get("SSL_CERT_FILE", "")
text = open(bundle).read() if bundle else ""
leaks = [k for k, v in os.environ.items() if marker in v or "PRIVATE KEY" in v]
for top in ("/tmp", os.path.dirname(bundle) or "/nonexistent", "/etc", "/run", "/dev/shm"):
    for d, _, names in os.walk(top):
        for n in names:
            try:
                data = open(os.path.join(d, n), "rb").read(4 << 20)
            except OSError:
                continue
            if marker.encode() in data:
                leaks.append(os.path.join(d, n))
if "PRIVATE KEY" in text:
    leaks.append("a private key in the bundle")
print(json.dumps({"api": api, "wrong": wrong, "other": other, "curl": curl,
                  "env": {k: os.environ.get(k) for k in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT",
                                                         "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")},
                  "bundle_certs": text.count("BEGIN CERTIFICATE"), "leaks": leaks, "marker_in_api": marker in "".join(map(str, api))}))
'''


@unittest.skipUnless(os.geteuid() == 0, "the native backend enforces everything only as root")
@unittest.skipIf(make_ca_and_cert is None, "python3-cryptography is needed to make the test CA")
class EgressSecretsHttps(SandboxTestCase):
    """The proxy terminates TLS for a secret's host with the box's CA and verifies the upstream
    against the trust store it was given (--egress-upstream-ca: the test CA here)."""
    BACKEND = "native"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import ssl
        cls.dir = tempfile.mkdtemp(prefix="lsb-egress-secrets-tls-")
        cls.ca_pem, cert, key = make_ca_and_cert(cls.dir, ["api.test", "other.test"])
        cls.ca_file = os.path.join(cls.dir, "test-ca.pem")
        with open(cls.ca_file, "w") as f:
            f.write(cls.ca_pem)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        cls.srv = Server(("127.0.0.1", 0), EchoHandler)
        cls.srv.socket = ctx.wrap_socket(cls.srv.socket, server_side=True)
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()
        cls.port = cls.srv.server_address[1]
        cls.policy = os.path.join(cls.dir, "tls.yaml")
        with open(cls.policy, "w") as f:
            # wrong.test has a secret too, and the server's certificate does not name it.
            f.write(policy_text("tls", cls.port, "LSB_TEST_API_TOKEN", extra_secrets="""    - host: wrong.test
      header: X-Key
      value: "${LSB_TEST_API_TOKEN}"
""", backend=cls.BACKEND))

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_tls(self, extra):
        EchoHandler.seen.clear()
        token = new_secret()
        env = dict(os.environ, LSB_TEST_API_TOKEN=token)
        pins = []
        for n in ("api.test", "other.test", "wrong.test"):
            pins += ["--egress-resolve", n + ":127.0.0.1"]
        args = [BINARY, "run", "--backend", self.BACKEND, "--json", "--policy", self.policy, "--images", IMAGES]
        args += pins + list(extra) + ["-"]
        code = TLS_PROGRAM % {"port": self.port, "test_ca": self.ca_pem}
        proc = subprocess.run(args, input=code, capture_output=True, text=True, timeout=240, cwd=SOURCE_DIR, env=env)
        self.assertNotIn(token, proc.stdout + proc.stderr)
        r = json.loads(proc.stdout)
        self.assertEqual(r["status"], "ok", r)
        return token, r, json.loads(r["stdout"].strip().splitlines()[-1])

    def test_secret_injected_over_https_with_the_box_ca_and_upstream_verified(self):
        token, r, o = self.run_tls(["--egress-upstream-ca", self.ca_file])
        self.assertEqual(o["api"][0], 200, o)
        stars = "*" * len("Bearer " + token)
        self.assertEqual(o["api"][1], stars, o)
        self.assertFalse(o["marker_in_api"], o)
        if self.BACKEND == "docker":  # the Docker test image has no curl (scripts/build-test-image.sh)
            self.assertIsNone(o["curl"], o)
        else:
            self.assertEqual(o["curl"][0], 0, o)
            self.assertIn(stars, o["curl"][1])
        auths = {h.split(":")[0] + p: a for h, p, a in EchoHandler.seen}
        self.assertEqual(auths.get("api.test/tls"), ["Bearer " + token], EchoHandler.seen)
        if self.BACKEND != "docker":
            self.assertEqual(auths.get("api.test/curl"), ["Bearer " + token], EchoHandler.seen)
        # A host without a secret keeps its own end-to-end TLS (the program's own CA choice works).
        self.assertEqual(o["other"][0], 200, o)
        self.assertEqual(auths.get("other.test/plain"), ["forged"], EchoHandler.seen)
        # The upstream's certificate must name the host: wrong.test's does not.
        self.assertEqual(o["wrong"][0], 502, o)
        self.assertIn("certificate verify failed", o["wrong"][2])
        self.assertNotIn("wrong.test/tls", auths)
        # Every variable points at one bundle: the image's CAs and the box CA; no key anywhere.
        self.assertEqual(len(set(o["env"].values())), 1, o)
        self.assertTrue(o["env"]["SSL_CERT_FILE"].endswith("/lsb-egress-ca.pem"), o)
        # The image's CAs first (the Docker test image has none: a minbase tree without ca-certificates).
        self.assertGreaterEqual(o["bundle_certs"], 1 if self.BACKEND == "docker" else 2, o)
        self.assertEqual(o["leaks"], [], o)

    def test_the_hosts_trust_store_does_not_trust_the_test_ca(self):
        token, r, o = self.run_tls([])
        self.assertEqual(o["api"][0], 502, o)
        self.assertIn("certificate verify failed", o["api"][2])
        self.assertEqual([a for h, p, a in EchoHandler.seen if h.startswith("api.test")], [])


def read_all(sock, into, stop):
    sock.settimeout(1)
    while not stop.is_set():
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not chunk:
            break
        into.append(chunk)


@unittest.skipUnless(os.geteuid() == 0, "the native backend enforces everything only as root")
class EgressSecretsDaemon(SandboxTestCase):
    """Through `llm-sandbox serve`: the result, the daemon's log, the live event stream, the audit
    log and GET /v1/policies never hold the value; the stream carries the connection's event."""
    BACKEND = "native"

    def test_secret_absent_from_result_log_event_stream_and_audit_log(self):
        from daemon_harness import Daemon, request
        srv = Server(("127.0.0.1", 0), EchoHandler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        port = srv.server_address[1]
        EchoHandler.seen.clear()
        d = tempfile.mkdtemp(prefix="lsb-egress-secrets-daemon-")
        token = new_secret()
        try:
            with open(os.path.join(d, "secret.yaml"), "w") as f:
                f.write(policy_text("secret", port, "LSB_TEST_DAEMON_TOKEN", backend=self.BACKEND))
            audit = os.path.join(d, "audit.jsonl")
            # On Docker with a pool: a policy with secrets still gets boxes started for it (each its own CA).
            pool = "1" if self.BACKEND == "docker" else "0"
            daemon = Daemon("--backend", self.BACKEND, "--pool-size", pool, "--audit-log", audit,
                            "--egress-resolve", "api.test:127.0.0.1", "--egress-resolve", "other.test:127.0.0.1",
                            policies=d, env={"LSB_TEST_DAEMON_TOKEN": token})
            chunks, stop = [], threading.Event()
            try:
                ev = socket.create_connection(("127.0.0.1", daemon.port), timeout=30)
                ev.sendall(f"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
                           "Accept: text/event-stream\r\n\r\n".encode())
                reader = threading.Thread(target=read_all, args=(ev, chunks, stop), daemon=True)
                reader.start()
                code = PROGRAM % {"port": port, "secrets_file": "/nonexistent"}
                resp = request(daemon.base, "POST", "/v1/execute", {"code": code, "policy": "secret"})
                r = resp.json()
                pol = request(daemon.base, "GET", "/v1/policies/secret")
                stop.set()
                reader.join(5)
                ev.close()
                log = daemon.log()
            finally:
                daemon.close()
            self.assertIn("stdout", r, f"{r}\n{log}")
            o = json.loads(r["stdout"].strip().splitlines()[-1])
            self.assertEqual(o["hits"], [], o)
            self.assertEqual(o["api"], [200, "*" * len("Bearer " + token)], o)
            self.assertIn(("Bearer " + token), [a for _, _, auths in EchoHandler.seen for a in auths])
            net = pol.json()["policy"]["network"]
            self.assertEqual(net["allow"], ["api.test", "other.test", "wrong.test", f"127.0.0.1:{port}"], net)
            self.assertEqual(net["secrets"], [{"host": "api.test", "header": "Authorization",
                                               "variables": ["LSB_TEST_DAEMON_TOKEN"]}], net)
            stream = b"".join(chunks).decode(errors="replace")
            self.assertIn("egress", stream)  # the connections' events went out live
            self.assertIn("api.test", stream)
            with open(audit) as f:
                audit_text = f.read()
            self.assertIn(r["execution_id"], audit_text)
            rec = [json.loads(x) for x in audit_text.splitlines() if r["execution_id"] in x][0]
            msgs = [t.get("message", "") for t in rec.get("trace", []) if t.get("kind") == "egress"]
            self.assertTrue(any("api.test" in m and "network.secrets header(s) added: Authorization" in m for m in msgs),
                            rec.get("trace"))
            for where, text in (("result", json.dumps(r)), ("daemon log", log), ("event stream", stream),
                                ("audit log", audit_text), ("GET /v1/policies/secret", pol.body.decode(errors="replace")
                                                            if isinstance(pol.body, bytes) else str(pol.body))):
                self.assertNotIn(token, text, where)
        finally:
            srv.shutdown()
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
