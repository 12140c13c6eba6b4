"""Network egress by name (docs/network.md), through the real binary: a box
with network.enabled reaches only its egress proxy, which lets allowed names through over HTTP and
HTTPS (CONNECT, SNI checked), refuses the rest with a network_denied alert, resolves names itself
(pinned here with --egress-resolve) and refuses loopback and link-local addresses behind a name.

Real servers on 127.0.0.1: an HTTP server and an HTTPS server whose certificate (for allowed.test
and denied.test) is signed by a CA made in this test. The box gets the CA's certificate inside the
program text (it has no access to the test's files).

The classes here run on the native backend (integration_native); tests/docker/test_docker_egress.py
runs them again on Docker/runc (integration_docker) with BACKEND = "docker": the same policies with
backend: docker, the same assertions. The Docker test image has no curl: those checks skip there."""
import datetime
import http.server
import json
import os
import shutil
import socketserver
import ssl
import tempfile
import threading
import unittest

from harness import IMAGES, SandboxTestCase, alerts_with_rule, run_cli

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
except ImportError:  # pragma: no cover
    x509 = None

BIG = 10 * 1024 * 1024


def make_ca_and_cert(directory, names):
    """A test CA and a server certificate for `names`; returns (ca_pem_text, cert_path, key_path)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lsb egress test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = os.path.join(directory, "server.pem"), os.path.join(directory, "server.key")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM).decode(), cert_path, key_path


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = (b"x" * BIG) if self.path.startswith("/big") else (
            "hello from %s via %s\n" % (self.path, self.headers.get("Host"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except ConnectionError:
            pass  # the proxy cut the download (the byte limit test)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def start_server(context=None):
    srv = Server(("127.0.0.1", 0), Handler)
    if context:
        srv.socket = context.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


# The program's prelude: the CA written into the box's /tmp, and an HTTPS opener that trusts it.
PRELUDE = r'''
import json, os, socket, ssl, subprocess, urllib.request, urllib.error
CA = "/tmp/ca.pem"
open(CA, "w").write(%r)
CTX = ssl.create_default_context(cafile=CA)
def get(url):
    try:
        with urllib.request.urlopen(url, context=CTX, timeout=20) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except Exception as e:
        return "error", repr(e)
'''


def skip_without_curl(test):
    if test.BACKEND == "docker":
        test.skipTest("the Docker test image (scripts/build-test-image.sh) has no curl")


@unittest.skipUnless(os.geteuid() == 0, "the native backend enforces everything only as root")
@unittest.skipIf(x509 is None, "python3-cryptography is needed to make the test CA")
class EgressNative(SandboxTestCase):
    BACKEND = "native"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = tempfile.mkdtemp(prefix="lsb-egress-")
        cls.ca_pem, cert, key = make_ca_and_cert(cls.dir, ["allowed.test", "denied.test", "meta.test"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        cls.http = start_server()
        cls.https = start_server(ctx)
        cls.hp, cls.sp = cls.http.server_address[1], cls.https.server_address[1]
        cls.pins = ["--egress-resolve", "allowed.test:127.0.0.1", "--egress-resolve", "denied.test:127.0.0.1",
                    "--egress-resolve", "other.test:127.0.0.1", "--egress-resolve", "meta.test:169.254.169.254"]
        # The test servers are on the host's loopback: the policy must name that address to reach them.
        cls.policy = cls.write_policy("egress", ["allowed.test", "meta.test", f"127.0.0.1:{cls.hp}",
                                                  f"127.0.0.1:{cls.sp}"], ["denied.test"])
        # The same names without the address entries: an allowed name pinned to loopback is refused.
        cls.ssrf_policy = cls.write_policy("egress-ssrf", ["allowed.test", "meta.test"], [])

    @classmethod
    def tearDownClass(cls):
        cls.http.shutdown()
        cls.https.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def write_policy(cls, name, allow, deny):
        path = os.path.join(cls.dir, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"""version: "1.0"
name: {name}
backend: {cls.BACKEND}
container:
  image: python:3.12-slim
  tmpfs:
    /tmp: "size=64M,noexec,nosuid"
network:
  enabled: true
  allow: {json.dumps(allow)}
  deny: {json.dumps(deny)}
commands:
  allow: ["/usr/bin/python3", "/usr/bin/curl"]
resources:
  memory: "256M"
  timeout: 60
""")
        return path

    def run_box(self, body, policy=None, extra=()):
        code = PRELUDE % self.ca_pem + body
        args = ["run", "--backend", self.BACKEND, "--json", "--policy", policy or self.policy, "--images", IMAGES]
        args += self.pins + list(extra) + ["-"]
        proc = run_cli(args, stdin=code, timeout=180)
        try:
            r = json.loads(proc.stdout)
        except json.JSONDecodeError:
            self.fail(f"no JSON (exit {proc.returncode}): {proc.stdout[:2000]} {proc.stderr[:2000]}")
        return r, proc

    def out(self, r):
        self.assertEqual(r["status"], "ok", r)
        return json.loads(r["stdout"].strip().splitlines()[-1])

    def denied_hosts(self, r):
        return [a.get("address", "") for a in alerts_with_rule(r, "network_denied")]

    def test_allowed_name_reachable_over_http_and_https_through_the_env_proxy(self):
        r, _ = self.run_box(f'''
print(json.dumps({{"env": os.environ.get("HTTPS_PROXY"),
                  "http": get("http://allowed.test:{self.hp}/plain"),
                  "https": get("https://allowed.test:{self.sp}/tls")}}))
''')
        o = self.out(r)
        self.assertEqual(o["env"], "http://127.0.0.1:3128")
        self.assertEqual(o["http"], [200, f"hello from /plain via allowed.test:{self.hp}\n"])
        self.assertEqual(o["https"], [200, f"hello from /tls via allowed.test:{self.sp}\n"])
        self.assertEqual(alerts_with_rule(r, "network_denied"), [])

    def test_curl_uses_the_proxy_for_http_and_https(self):
        skip_without_curl(self)
        r, _ = self.run_box(f'''
a = subprocess.run(["/usr/bin/curl", "-sS", "--max-time", "20", "http://allowed.test:{self.hp}/c"], capture_output=True, text=True)
b = subprocess.run(["/usr/bin/curl", "-sS", "--max-time", "20", "--cacert", CA, "https://allowed.test:{self.sp}/c"], capture_output=True, text=True)
print(json.dumps([a.stdout, b.stdout, a.stderr + b.stderr]))
''')
        o = self.out(r)
        self.assertEqual(o[0], f"hello from /c via allowed.test:{self.hp}\n", o)
        self.assertEqual(o[1], f"hello from /c via allowed.test:{self.sp}\n", o)

    def test_denied_and_unlisted_names_are_refused_with_an_alert(self):
        r, _ = self.run_box(f'''
print(json.dumps([get("http://denied.test:{self.hp}/"), get("http://other.test:{self.hp}/"),
                  get("https://denied.test:{self.sp}/")]))
''')
        o = self.out(r)
        self.assertEqual(o[0][0], 403, o)
        self.assertIn("network.deny", o[0][1])
        self.assertEqual(o[1][0], 403, o)
        self.assertIn("not in network.allow", o[1][1])
        self.assertEqual(o[2][0], "error", o)  # urllib: "Tunnel connection failed: 403"
        hosts = self.denied_hosts(r)
        for want in (f"denied.test:{self.hp}", f"other.test:{self.hp}", f"denied.test:{self.sp}"):
            self.assertIn(want, hosts, r["alerts"])

    def test_ssrf_an_allowed_name_pinned_to_loopback_or_metadata_is_refused(self):
        r, _ = self.run_box(f'''
print(json.dumps([get("http://allowed.test:{self.hp}/"), get("http://meta.test/latest/meta-data/"),
                  get("https://allowed.test:{self.sp}/")]))
''', policy=self.ssrf_policy)
        o = self.out(r)
        self.assertEqual(o[0][0], 403, o)
        self.assertIn("loopback", o[0][1])
        self.assertEqual(o[1][0], 403, o)
        self.assertIn("link-local", o[1][1])
        self.assertEqual(o[2][0], "error", o)
        msgs = " ".join(a["message"] for a in alerts_with_rule(r, "network_denied"))
        self.assertIn("127.0.0.1 is loopback", msgs)
        self.assertIn("169.254.169.254 is link-local", msgs)

    def test_connect_with_a_mismatched_sni_is_refused(self):
        r, _ = self.run_box(f'''
def tunnel(sni):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT allowed.test:{self.sp} HTTP/1.1\\r\\n\\r\\n")
    head = s.recv(4096)
    ctx = ssl.create_default_context(cafile=CA)
    ctx.check_hostname = False
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET /sni HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
        return [head.decode(), t.recv(4096).decode(errors="replace")]
    except Exception as e:
        return [head.decode(), "error " + repr(e)]
print(json.dumps([tunnel("denied.test"), tunnel("allowed.test")]))
''')
        o = self.out(r)
        self.assertTrue(o[0][1].startswith("error"), o)
        self.assertIn("200 OK", o[1][1], o)
        msgs = [a["message"] for a in alerts_with_rule(r, "network_denied")]
        self.assertTrue(any("names 'denied.test', not the CONNECT target 'allowed.test'" in m for m in msgs), msgs)

    def test_direct_ip_ipv6_udp_and_dns_fail_from_the_box(self):
        r, _ = self.run_box(f'''
def attempt(fn):
    try:
        fn()
        return "reached"
    except Exception as e:
        return type(e).__name__
def tcp(host, port, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(5); s.connect((host, port))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("8.8.8.8", 53))
def udp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.sendto(b"x", ("2001:4860:4860::8888", 53))
def dns():
    socket.getaddrinfo("example.com", 80)
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
print(json.dumps({{"host_http": attempt(lambda: tcp("127.0.0.1", {self.hp})),
                  "public": attempt(lambda: tcp("93.184.216.34", 80)),
                  "ipv6": attempt(lambda: tcp("::1", {self.hp}, socket.AF_INET6)),
                  "ipv6_public": attempt(lambda: tcp("2606:2800:220:1:248:1893:25c8:1946", 80, socket.AF_INET6)),
                  "udp": attempt(udp), "udp6": attempt(udp6), "dns": attempt(dns), "raw": attempt(raw),
                  "proxy_direct_ip": get("http://127.0.0.1:{self.hp}/") }}))
''', policy=self.ssrf_policy)
        o = self.out(r)
        for k in ("host_http", "public", "ipv6", "ipv6_public", "udp", "udp6", "dns", "raw"):
            self.assertNotEqual(o[k], "reached", o)
        # An address the policy does not name is refused by the proxy too.
        self.assertEqual(o["proxy_direct_ip"][0], 403, o)
        attempts = [a.get("address") for a in alerts_with_rule(r, "network_attempt")]
        self.assertIn(f"127.0.0.1:{self.hp}", attempts, r["alerts"])
        self.assertIn("8.8.8.8:53", attempts, r["alerts"])

    def test_bytes_per_execution_limit_cuts_a_download(self):
        r, _ = self.run_box(f'''
st, body = get("http://allowed.test:{self.hp}/big")
print(json.dumps([st, len(body)]))
''', extra=["--egress-max-bytes", "1M"])
        self.assertLess(json.loads(r["stdout"].strip().splitlines()[-1])[1] if r["stdout"].strip() else 0, BIG)
        msgs = [a["message"] for a in alerts_with_rule(r, "network_denied")]
        self.assertTrue(any("byte limit" in m for m in msgs), r["alerts"])

    def test_the_bandwidth_cap_paces_downloads_over_http_and_https(self):
        # 4 MiB/s for the box: its bucket holds 512 KiB, so two 10 MiB downloads (one plain, one
        # through a CONNECT tunnel) need at least (20 MiB - 512 KiB) / 4 MiB/s = 4.875 s. A lower
        # bound: load can only make it slower.
        r, _ = self.run_box(f'''
import time
t0 = time.monotonic()
a = get("http://allowed.test:{self.hp}/big")
b = get("https://allowed.test:{self.sp}/big")
print(json.dumps([a[0], len(a[1]), b[0], len(b[1]), time.monotonic() - t0]))
''', extra=["--egress-max-bandwidth", "4M", "--egress-max-bytes", "64M"])
        st_a, len_a, st_b, len_b, seconds = self.out(r)
        self.assertEqual([st_a, len_a, st_b, len_b], [200, BIG, 200, BIG], r)
        self.assertGreaterEqual(seconds, 4.8, "the box moved 20 MiB faster than its 4 MiB/s cap allows")
        self.assertEqual(alerts_with_rule(r, "network_denied"), [], r["alerts"])

    def test_an_empty_allowlist_reaches_nothing(self):
        nothing = self.write_policy("egress-none", [], [])
        r, _ = self.run_box(f'print(json.dumps(get("http://allowed.test:{self.hp}/")))', policy=nothing)
        o = self.out(r)
        self.assertEqual(o[0], 403, o)
        self.assertIn(f"allowed.test:{self.hp}", self.denied_hosts(r))


@unittest.skipUnless(os.geteuid() == 0, "the native backend enforces everything only as root")
class EgressDaemon(SandboxTestCase):
    """Through `llm-sandbox serve`: the proxy's events reach the result's alerts and the audit log."""
    BACKEND = "native"

    def test_allowed_and_denied_connections_reach_the_result_and_the_audit_log(self):
        from daemon_harness import Daemon, request
        srv = start_server()
        port = srv.server_address[1]
        d = tempfile.mkdtemp(prefix="lsb-egress-daemon-")
        try:
            with open(os.path.join(d, "egress.yaml"), "w") as f:
                f.write(f"""version: "1.0"
name: egress
backend: {self.BACKEND}
container:
  image: python:3.12-slim
  tmpfs:
    /tmp: "size=16M"
network:
  enabled: true
  allow: ["allowed.test", "127.0.0.1:{port}"]
commands:
  allow: ["/usr/bin/python3"]
""")
            audit = os.path.join(d, "audit.jsonl")
            # On Docker with a warm pool: a pooled container gets its proxy when it is taken.
            pool = "1" if self.BACKEND == "docker" else "0"
            daemon = Daemon("--backend", self.BACKEND, "--pool-size", pool, "--audit-log", audit,
                            "--egress-resolve", "allowed.test:127.0.0.1", "--egress-resolve", "denied.test:127.0.0.1",
                            policies=d)
            try:
                code = (f"import urllib.request, urllib.error\n"
                        f"print(urllib.request.urlopen('http://allowed.test:{port}/d').read().decode(), end='')\n"
                        f"try:\n    urllib.request.urlopen('http://denied.test:{port}/')\n"
                        f"except urllib.error.HTTPError as e:\n    print(e.code)\n")
                r = request(daemon.base, "POST", "/v1/execute", {"code": code, "policy": "egress"}).json()
                log = daemon.log()
            finally:
                daemon.close()
            self.assertIn("stdout", r, f"{r}\n{log}")
            self.assertEqual(r["stdout"], f"hello from /d via allowed.test:{port}\n403\n", r)
            denied = alerts_with_rule(r, "network_denied")
            self.assertEqual([a["address"] for a in denied], [f"denied.test:{port}"], r)
            self.assertEqual(denied[0]["egress"]["host"], "denied.test")
            with open(audit) as f:
                records = [json.loads(line) for line in f if line.strip()]
            rec = [x for x in records if x.get("execution_id") == r["execution_id"]][0]
            self.assertIn("network_denied", [a["rule"] for a in rec["alerts"]])
            allowed = [t for t in rec.get("trace", []) if t.get("kind") == "egress"]
            self.assertEqual(len(allowed), 1, rec)
            self.assertEqual(allowed[0]["decision"], "allowed")
            self.assertEqual(allowed[0]["egress"]["path"], "/d")
            self.assertGreater(allowed[0]["egress"]["bytes_down"], 0)
        finally:
            srv.shutdown()
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
