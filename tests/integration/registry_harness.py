"""A real OCI registry on loopback for the pull tests, and what they need around it (stdlib plus
python3-cryptography for the token service's JWTs and the test CA).

- Registry: Debian's `docker-registry serve CONFIG` on a free 127.0.0.1 port with a temp storage
  dir; optional TLS, htpasswd basic auth or token auth. Several registries may share one storage
  dir: the tests push into an open one and pull from the guarded ones.
- write_oci_image: an OCI image layout written here (tar layers, gzip), so no Docker engine is
  needed; skopeo copies it into the registry (and recompresses with zstd when asked).
- TokenService: a token endpoint as Docker Hub's auth.docker.io, signing RS256 JWTs with a test key
  whose certificate is the registry's rootcertbundle.
- Proxy: a loopback HTTP proxy in front of a registry that can cut a blob response halfway, flip
  a byte of one, slow them down, or redirect blob GETs to another origin (blob storage).
"""
import base64
import datetime
import gzip
import hashlib
import http.client
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
import unittest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_tools():
    for tool in ("docker-registry", "skopeo", "htpasswd"):
        if shutil.which(tool) is None:
            raise unittest.SkipTest(f"{tool} is not installed (scripts/install-deps.sh installs it)")


def wait_port(port, proc, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class Registry:
    """docker-registry on 127.0.0.1:<free port>; stop() (or the context manager) ends it."""

    def __init__(self, storage, tls=None, htpasswd=None, token=None, workdir=None):
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.workdir = workdir or tempfile.mkdtemp(prefix="lsb-registry-")
        cfg = [
            "version: 0.1",
            "log:",
            "  level: error",
            "  accesslog:",
            "    disabled: true",
            "storage:",
            "  filesystem:",
            f"    rootdirectory: {storage}",
            "  delete:",
            "    enabled: true",
            "http:",
            f"  addr: 127.0.0.1:{self.port}",
            f"  secret: {'s' * 16}",
        ]
        if tls:
            cfg += ["  tls:", f"    certificate: {tls[0]}", f"    key: {tls[1]}"]
        if htpasswd:
            cfg += ["auth:", "  htpasswd:", "    realm: lsb-test", f"    path: {htpasswd}"]
        if token:
            cfg += ["auth:", "  token:", f"    realm: {token['realm']}", f"    service: {token['service']}",
                    f"    issuer: {token['issuer']}", f"    rootcertbundle: {token['bundle']}"]
        self.config = os.path.join(self.workdir, f"registry-{self.port}.yml")
        with open(self.config, "w") as f:
            f.write("\n".join(cfg) + "\n")
        self.log = open(os.path.join(self.workdir, f"registry-{self.port}.log"), "w")
        self.proc = subprocess.Popen(["docker-registry", "serve", self.config], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=dict(os.environ, OTEL_TRACES_EXPORTER="none"))
        try:
            wait_port(self.port, self.proc)
        except Exception:
            self.stop()
            raise

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def skopeo_push(layout_ref, dest, *extra, all_images=False):
    """skopeo copy oci:DIR[:tag] docker://dest (plain HTTP to loopback)."""
    cmd = ["skopeo", "copy", "-q", "--dest-tls-verify=false"] + list(extra)
    if all_images:
        cmd.append("--all")
    cmd += [f"oci:{layout_ref}", f"docker://{dest}"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)


def skopeo_inspect_layout(layout_dir, raw=False):
    cmd = ["skopeo", "inspect"] + (["--raw"] if raw else []) + [f"oci:{layout_dir}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _tar_layer(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class OciWriter:
    """Builds an OCI image layout directory blob by blob."""

    def __init__(self, path):
        self.path = path
        os.makedirs(os.path.join(path, "blobs", "sha256"), exist_ok=True)
        with open(os.path.join(path, "oci-layout"), "w") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)
        self.entries = []

    def blob(self, data):
        d = sha256(data)
        with open(os.path.join(self.path, "blobs", "sha256", d[7:]), "wb") as f:
            f.write(data)
        return d

    def image(self, layers_files, arch="amd64", os_="linux", variant=None, env=None):
        """layers_files: list of {name: bytes}; returns the manifest descriptor."""
        layer_descs, diff_ids = [], []
        for files in layers_files:
            tar = _tar_layer(files)
            gz = gzip.compress(tar, compresslevel=1, mtime=0)
            diff_ids.append(sha256(tar))
            layer_descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                "digest": self.blob(gz), "size": len(gz)})
        config = {"architecture": arch, "os": os_,
                  "config": {"Env": env or ["PATH=/usr/local/bin:/usr/bin:/bin"], "WorkingDir": "/"},
                  "rootfs": {"type": "layers", "diff_ids": diff_ids}}
        if variant:
            config["variant"] = variant
        cfg = json.dumps(config).encode()
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                               "digest": self.blob(cfg), "size": len(cfg)},
                    "layers": layer_descs}
        mb = json.dumps(manifest).encode()
        desc = {"mediaType": manifest["mediaType"], "digest": self.blob(mb), "size": len(mb),
                "platform": {"architecture": arch, "os": os_}}
        if variant:
            desc["platform"]["variant"] = variant
        return desc

    def tag(self, desc, tag):
        d = dict(desc)
        d["annotations"] = {"org.opencontainers.image.ref.name": tag}
        self.entries.append(d)
        self._write_index()

    def tag_index(self, descs, tag):
        """An image index of `descs` tagged `tag` (a multi-platform image)."""
        idx = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": descs}
        ib = json.dumps(idx).encode()
        self.entries.append({"mediaType": idx["mediaType"], "digest": self.blob(ib), "size": len(ib),
                             "annotations": {"org.opencontainers.image.ref.name": tag}})
        self._write_index()

    def _write_index(self):
        with open(os.path.join(self.path, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": self.entries}, f)


# --- a test CA and certificates (python3-cryptography)

def make_ca_and_cert(workdir, name="lsb-test"):
    """Writes ca.crt, server.crt/server.key (for 127.0.0.1 and localhost); returns their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress
    now = datetime.datetime.utcnow() - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {k: os.path.join(workdir, k) for k in ("ca.crt", "server.crt", "server.key")}
    with open(paths["ca.crt"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.crt"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption()))
    return paths


# --- the token service

def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenService:
    """GET /token?service=&scope= -> {"token": JWT}, as Docker Hub's auth service. With `users`
    ({name: password}) it wants basic auth; without, it grants pulls to anyone (anonymous)."""

    def __init__(self, workdir, service="lsb-test-registry", issuer="lsb-test-issuer", users=None):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID
        self.service, self.issuer, self.users = service, issuer, users
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = datetime.datetime.utcnow() - datetime.timedelta(minutes=5)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lsb token signer")])
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=2))
                .sign(self.key, hashes.SHA256()))
        self.bundle = os.path.join(workdir, "token-signer.crt")
        with open(self.bundle, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        # The registry finds the key by libtrust's key id: base32 of the SPKI's SHA-256, 240 bits.
        spki = self.key.public_key().public_bytes(serialization.Encoding.DER,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo)
        b32 = base64.b32encode(hashlib.sha256(spki).digest()[:30]).decode().rstrip("=")
        self.kid = ":".join(b32[i:i + 4] for i in range(0, len(b32), 4))
        self.requests = []
        svc = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                from urllib.parse import urlparse, parse_qs
                q = parse_qs(urlparse(self.path).query)
                auth = self.headers.get("Authorization", "")
                svc.requests.append({"path": self.path, "authorization": auth})
                if svc.users is not None:
                    ok = False
                    if auth.startswith("Basic "):
                        user, _, pw = base64.b64decode(auth[6:]).decode().partition(":")
                        ok = svc.users.get(user) == pw
                    if not ok:
                        self.send_response(401)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                access = []
                for scope in q.get("scope", []):
                    kind, _, rest = scope.partition(":")
                    repo, _, actions = rest.rpartition(":")
                    access.append({"type": kind, "name": repo, "actions": actions.split(",")})
                body = json.dumps({"token": svc.sign(access), "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.realm = f"http://127.0.0.1:{self.port}/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def sign(self, access):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "kid": self.kid}
        claims = {"iss": self.issuer, "sub": "", "aud": self.service, "exp": now + 300, "nbf": now - 10,
                  "iat": now, "jti": os.urandom(8).hex(), "access": access}
        signing_input = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
        sig = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + _b64url(sig)

    def registry_config(self):
        return {"realm": self.realm, "service": self.service, "issuer": self.issuer, "bundle": self.bundle}

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


# --- the proxy

class Proxy:
    """Forwards every request to `upstream` ("127.0.0.1:PORT", plain HTTP). Behaviours for blob
    GETs (path contains /blobs/sha256:): cut_once (send half the body, then close, the first time
    per blob), tamper (flip one byte of each blob body), delay_per_chunk (seconds between 64 KiB
    chunks), redirect_to (answer 307 to that origin + the same path). Every request is logged."""

    def __init__(self, upstream, cut_once=False, tamper=False, delay_per_chunk=0.0, redirect_to=None,
                 only_digest=None):
        self.upstream = upstream
        self.cut_once, self.tamper, self.delay = cut_once, tamper, delay_per_chunk
        self.redirect_to, self.only_digest = redirect_to, only_digest
        self.cut_done = set()
        self.requests = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _forward(self, method):
                with proxy.lock:
                    proxy.requests.append({"method": method, "path": self.path,
                                           "range": self.headers.get("Range"),
                                           "authorization": self.headers.get("Authorization")})
                is_blob = "/blobs/sha256:" in self.path and method == "GET"
                if is_blob and proxy.only_digest and proxy.only_digest not in self.path:
                    is_blob = False
                if is_blob and proxy.redirect_to:
                    self.send_response(307)
                    self.send_header("Location", proxy.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                conn = http.client.HTTPConnection(proxy.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(method, self.path, headers=headers)
                resp = conn.getresponse()
                length = resp.getheader("Content-Length")
                cut = False
                if is_blob and proxy.cut_once and resp.status in (200, 206):
                    with proxy.lock:
                        if self.path not in proxy.cut_done:
                            proxy.cut_done.add(self.path)
                            cut = True
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding"):
                        self.send_header(k, v)
                if length is None:
                    self.send_header("Connection", "close")
                self.end_headers()
                if method == "HEAD":
                    conn.close()
                    return
                total = int(length) if length is not None else None
                sent, flipped = 0, False
                while True:
                    chunk = resp.read(65536)
                    if not chunk:
                        break
                    if is_blob and proxy.tamper and not flipped:
                        chunk = bytes([chunk[0] ^ 0xFF]) + chunk[1:]
                        flipped = True
                    if cut and total is not None and sent + len(chunk) >= total // 2:
                        self.wfile.write(chunk[:max(0, total // 2 - sent)])
                        self.wfile.flush()
                        self.close_connection = True
                        conn.close()
                        return
                    self.wfile.write(chunk)
                    sent += len(chunk)
                    if is_blob and proxy.delay:
                        self.wfile.flush()
                        time.sleep(proxy.delay)
                conn.close()
                if length is None:
                    self.close_connection = True

            def do_GET(self):
                self._forward("GET")

            def do_HEAD(self):
                self._forward("HEAD")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # a cut or refused transfer is the point
        self.port = self.server.server_address[1]
        self.host = f"127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def blob_requests(self):
        with self.lock:
            return [r for r in self.requests if "/blobs/" in r["path"]]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
