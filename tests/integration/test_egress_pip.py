"""`pip install` through the egress proxy (docs/network.md; issue 19's Must show): a native box whose
policy allows only the test's package index host installs a package with the host's own pip from a
PyPI-style simple index (PEP 503) served over HTTPS on 127.0.0.1, and cannot fetch a package whose
file lives on another host.

Nothing here is faked: the wheel is a real pure-Python wheel built with zipfile, the index a real
HTTPS server with a certificate from a CA made in the test (pip verifies it: the box gets the CA's
certificate and passes it with --cert, as pip uses its own bundle), and pip reaches the index only
through HTTPS_PROXY (the box has no other route). `pypi.test` and `files.denied.test` are pinned to
127.0.0.1 with --egress-resolve; the index's loopback address is named in `allow` (the proxy refuses
loopback behind a name otherwise)."""
import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import socketserver
import ssl
import subprocess
import tempfile
import threading
import unittest
import zipfile

from harness import IMAGES, SandboxTestCase, alerts_with_rule, run_cli
from test_egress import make_ca_and_cert, x509

PY = "/usr/bin/python3"


def host_pip():
    """Why the box's python cannot run pip (None when it can): pip comes from python3-pip, which
    scripts/install-deps.sh installs."""
    try:
        p = subprocess.run([PY, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return repr(e)
    return None if p.returncode == 0 else p.stderr.strip()[-300:]


def build_wheel(name, version, source):
    """A pure-Python wheel (PEP 427) of one module `name` with `source`; returns (filename, bytes)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": source.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lsb-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(data)}\n"
    record += f"{dist}/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{dist}/RECORD", record)
    return f"{name}-{version}-py3-none-any.whl", buf.getvalue()


class Index(http.server.BaseHTTPRequestHandler):
    """/simple/<name>/ (PEP 503 links with the file's sha256) and /packages/<file>."""
    protocol_version = "HTTP/1.1"
    pages = {}   # path -> (content type, body)
    seen = []    # request paths, in order

    def do_GET(self):
        self.seen.append(self.path)
        page = self.pages.get(self.path)
        if page is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", page[0])
        self.send_header("Content-Length", str(len(page[1])))
        self.end_headers()
        self.wfile.write(page[1])

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


@unittest.skipUnless(os.geteuid() == 0, "the native backend enforces everything only as root")
@unittest.skipIf(x509 is None, "python3-cryptography is needed to make the test CA")
class EgressPip(SandboxTestCase):
    # tests/docker/test_docker_egress.py runs this class again with "docker" and an image with pip.
    BACKEND = "native"
    IMAGES = IMAGES

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        why = host_pip()
        if why:
            raise unittest.SkipTest(f"{PY} has no pip (install python3-pip: scripts/install-deps.sh): {why}")
        cls.dir = tempfile.mkdtemp(prefix="lsb-egress-pip-")
        cls.ca_pem, cert, key = make_ca_and_cert(cls.dir, ["pypi.test", "files.denied.test"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        cls.srv = Server(("127.0.0.1", 0), Index)
        cls.srv.socket = ctx.wrap_socket(cls.srv.socket, server_side=True)
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()
        port = cls.port = cls.srv.server_address[1]
        Index.seen = []
        Index.pages = {}
        # lsbdemo: its file on the index host. lsbother: its file on a host the policy does not allow.
        for name, host in (("lsbdemo", "pypi.test"), ("lsbother", "files.denied.test")):
            fname, data = build_wheel(name, "1.0", f'VALUE = "{name} installed through the egress proxy"\n')
            sha = hashlib.sha256(data).hexdigest()
            link = f"https://{host}:{port}/packages/{fname}#sha256={sha}"
            html = f'<!DOCTYPE html><html><body><a href="{link}">{fname}</a></body></html>\n'.encode()
            Index.pages[f"/simple/{name}/"] = ("text/html", html)
            Index.pages[f"/packages/{fname}"] = ("application/octet-stream", data)
        cls.policy = os.path.join(cls.dir, "pip.yaml")
        with open(cls.policy, "w") as f:
            f.write(f"""version: "1.0"
name: egress-pip
backend: {cls.BACKEND}
container:
  image: python:3.12-slim
  tmpfs:
    /tmp: "size=64M,noexec,nosuid"
network:
  enabled: true
  allow: ["pypi.test:{port}", "127.0.0.1:{port}"]
commands:
  allow: ["{PY}"]
resources:
  memory: "512M"
  timeout: 120
""")

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def pip_box(self, package):
        """Runs pip install PACKAGE --target /tmp/site in a box, then imports it; the program's JSON."""
        code = f'''
import json, os, subprocess, sys
open("/tmp/ca.pem", "w").write({self.ca_pem!r})
p = subprocess.run([{PY!r}, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check",
                    "--no-input", "--target", "/tmp/site", "--cert", "/tmp/ca.pem", "--retries", "0",
                    "--timeout", "20", "--index-url", "https://pypi.test:{self.port}/simple/", {package!r}],
                   capture_output=True, text=True, env=dict(os.environ, HOME="/tmp"))
imp = subprocess.run([{PY!r}, "-c", "import {package}; print({package}.VALUE)"], capture_output=True, text=True,
                     env=dict(os.environ, PYTHONPATH="/tmp/site"))
print(json.dumps({{"proxy": os.environ.get("HTTPS_PROXY"), "pip_rc": p.returncode, "pip": p.stdout[-1500:] + p.stderr[-1500:],
                  "import": imp.stdout.strip(), "import_err": imp.stderr[-300:]}}))
'''
        args = ["run", "--backend", self.BACKEND, "--json", "--policy", self.policy, "--images", self.IMAGES,
                "--egress-resolve", "pypi.test:127.0.0.1", "--egress-resolve", "files.denied.test:127.0.0.1", "-"]
        proc = run_cli(args, stdin=code, timeout=240)
        try:
            r = json.loads(proc.stdout)
        except json.JSONDecodeError:
            self.fail(f"no JSON (exit {proc.returncode}): {proc.stdout[:2000]} {proc.stderr[:2000]}")
        self.assertEqual(r["status"], "ok", r)
        self.assertTrue(r["backend"].startswith(self.BACKEND), r["backend"])
        return r, json.loads(r["stdout"].strip().splitlines()[-1])

    def test_pip_install_from_the_allowed_index_through_the_proxy(self):
        r, o = self.pip_box("lsbdemo")
        self.assertEqual(o["proxy"], "http://127.0.0.1:3128")
        self.assertEqual(o["pip_rc"], 0, o["pip"])
        self.assertIn("Successfully installed lsbdemo-1.0", o["pip"])
        self.assertEqual(o["import"], "lsbdemo installed through the egress proxy", o)
        self.assertIn("/simple/lsbdemo/", Index.seen)
        self.assertIn("/packages/lsbdemo-1.0-py3-none-any.whl", Index.seen)
        self.assertEqual(alerts_with_rule(r, "network_denied"), [], r.get("alerts"))

    def test_a_package_file_on_another_host_is_refused_with_an_alert(self):
        r, o = self.pip_box("lsbother")
        self.assertNotEqual(o["pip_rc"], 0, o["pip"])
        self.assertNotEqual(o["import"], "lsbother installed through the egress proxy", o)
        self.assertNotIn("/packages/lsbother-1.0-py3-none-any.whl", Index.seen)
        denied = alerts_with_rule(r, "network_denied")
        self.assertIn(f"files.denied.test:{self.port}", [a.get("address") for a in denied], r.get("alerts"))
        self.assertTrue(any("not in network.allow" in a["message"] for a in denied), denied)


if __name__ == "__main__":
    unittest.main()
