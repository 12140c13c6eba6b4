"""`llm-sandbox image pull REF --layout DIR` against a REAL registry on loopback (Debian's
docker-registry), with the images written here as OCI layouts and pushed with skopeo, so no Docker
engine is needed (registry_harness.py). Run by the integration_image_pull CTest entry
(LSB_IMAGE_PULL_SUITE=1); skipped when docker-registry, skopeo or htpasswd is missing."""
import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import registry_harness as rh  # noqa: E402
from harness import BINARY  # noqa: E402

HOST_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
OTHER_ARCH = "arm64" if HOST_ARCH == "amd64" else "amd64"


def setUpModule():
    if os.environ.get("LSB_IMAGE_PULL_SUITE") != "1":
        raise unittest.SkipTest("run by the integration_image_pull CTest entry (LSB_IMAGE_PULL_SUITE=1)")
    rh.require_tools()
    global WORK, STORAGE, OPEN, FIX
    WORK = tempfile.mkdtemp(prefix="lsb-pull-test-")
    STORAGE = os.path.join(WORK, "storage")
    OPEN = rh.Registry(STORAGE, workdir=WORK)
    FIX = build_fixtures(os.path.join(WORK, "src"))


def tearDownModule():
    OPEN.stop()
    shutil.rmtree(WORK, True)


def build_fixtures(src):
    """Pushes the test images into the open registry; returns what the tests compare against."""
    w = rh.OciWriter(src)
    rnd = os.urandom
    small = w.image([{"etc/os-release": b"ID=lsbtest\n", "bin/tool": rnd(300_000)},
                     {"usr/lib/data": rnd(700_000)},
                     {"usr/share/doc": b"x" * 400_000}], arch=HOST_ARCH)
    w.tag(small, "small")
    big = w.image([{"big/blob": rnd(24 << 20)}, {"big/second": rnd(4 << 20)}], arch=HOST_ARCH)
    w.tag(big, "big")
    host_img = w.image([{"arch": HOST_ARCH.encode()}], arch=HOST_ARCH)
    other_img = w.image([{"arch": OTHER_ARCH.encode()}], arch=OTHER_ARCH, variant="v8" if OTHER_ARCH == "arm64" else None)
    w.tag_index([other_img, host_img], "multi")
    # Its own layers: skopeo would reuse blobs the registry already has, whatever the compression asked.
    zstd = w.image([{"etc/zstd-layer": rnd(200_000)}, {"usr/zstd-data": b"z" * 300_000}], arch=HOST_ARCH)
    w.tag(zstd, "zstd")
    py = w.image([{"etc/os-release": b'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n',
                   "usr/local/bin/python3": rnd(100_000)}], arch=HOST_ARCH)
    w.tag(py, "py")
    reg = OPEN.host
    rh.skopeo_push(f"{src}:small", f"{reg}/test/small:1")
    rh.skopeo_push(f"{src}:big", f"{reg}/test/big:1")
    rh.skopeo_push(f"{src}:multi", f"{reg}/test/multi:1", all_images=True)
    rh.skopeo_push(f"{src}:zstd", f"{reg}/test/zstd:1", "--dest-compress-format", "zstd", "--dest-compress")
    rh.skopeo_push(f"{src}:py", f"{reg}/library/python:3.12-slim")
    return {"small": small, "big": big, "host_img": host_img, "other_img": other_img, "src": src}


def pull(ref, layout, *extra, env=None, timeout=120):
    e = dict(os.environ, DOCKER_CONFIG=os.path.join(WORK, "no-docker-config"))
    e.update(env or {})
    return subprocess.run([BINARY, "image", "pull", ref, "--layout", layout] + list(extra),
                          capture_output=True, text=True, timeout=timeout, env=e)


def layout_manifest(layout):
    with open(os.path.join(layout, "index.json")) as f:
        idx = json.load(f)
    desc = idx["manifests"][0]
    with open(os.path.join(layout, "blobs", "sha256", desc["digest"][7:]), "rb") as f:
        return idx, desc, json.loads(f.read())


def assert_layout_complete(test, layout):
    """skopeo accepts it, and every blob it names hashes to its digest."""
    p = rh.skopeo_inspect_layout(layout)
    test.assertEqual(p.returncode, 0, p.stderr)
    idx, desc, man = layout_manifest(layout)
    for d in [man["config"]] + man["layers"]:
        with open(os.path.join(layout, "blobs", "sha256", d["digest"][7:]), "rb") as f:
            data = f.read()
        test.assertEqual(rh.sha256(data), d["digest"])
        test.assertEqual(len(data), d["size"])
    leftovers = [n for n in os.listdir(os.path.join(layout, "blobs", "sha256")) if n.endswith(".partial")]
    test.assertEqual(leftovers, [])
    return idx, desc, man


class PullFromLoopbackRegistry(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lsb-pull-", dir=WORK)

    def layout(self, name="layout"):
        return os.path.join(self.tmp, name)

    def test_pull_by_tag_writes_a_layout_skopeo_accepts_with_the_same_manifest_as_skopeo_copy(self):
        out = self.layout()
        p = pull(f"{OPEN.host}/test/small:1", out, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")  # --quiet prints nothing
        idx, desc, man = assert_layout_complete(self, out)
        ann = desc["annotations"]
        self.assertEqual(ann["org.opencontainers.image.ref.name"], "1")
        self.assertEqual(ann["io.containerd.image.name"], f"{OPEN.host}/test/small:1")
        ref = os.path.join(self.tmp, "skopeo")
        subprocess.run(["skopeo", "copy", "-q", "--src-tls-verify=false", f"docker://{OPEN.host}/test/small:1",
                        f"oci:{ref}:1"], check=True, capture_output=True, timeout=120)
        with open(os.path.join(ref, "index.json")) as f:
            skopeo_desc = json.load(f)["manifests"][0]
        self.assertEqual(desc["digest"], skopeo_desc["digest"])
        self.assertEqual(len(man["layers"]), 3)

    def test_pull_by_digest_and_a_digest_the_registry_lacks_is_not_found_naming_both(self):
        first = self.layout("a")
        self.assertEqual(pull(f"{OPEN.host}/test/small:1", first, "--quiet").returncode, 0)
        _, desc, _ = layout_manifest(first)
        by_digest = self.layout("b")
        p = pull(f"{OPEN.host}/test/small@{desc['digest']}", by_digest, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(layout_manifest(by_digest)[1]["digest"], desc["digest"])
        missing = "sha256:" + "0" * 64
        p = pull(f"{OPEN.host}/test/small@{missing}", self.layout("c"), "--quiet")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not found", p.stderr)
        self.assertIn(OPEN.host, p.stderr)
        self.assertIn(missing, p.stderr)

    def test_without_layout_the_pull_lands_in_the_image_store_and_inspect_reads_its_files(self):
        store = os.path.join(self.tmp, "store")
        e = dict(os.environ, DOCKER_CONFIG=os.path.join(WORK, "no-docker-config"))
        ref = f"{OPEN.host}/library/python:3.12-slim"
        p = subprocess.run([BINARY, "image", "pull", ref, "--store", store], capture_output=True, text=True,
                           timeout=120, env=e)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("into the store " + store, p.stdout)
        ls = subprocess.run([BINARY, "image", "ls", "--store", store, "--json"], capture_output=True, text=True,
                            timeout=60)
        self.assertEqual(ls.returncode, 0, ls.stderr)
        self.assertIn(ref, ls.stdout)
        ins = subprocess.run([BINARY, "image", "inspect", "--store", store, ref], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(ins.returncode, 0, ins.stderr)
        self.assertIn("Debian GNU/Linux 12 (bookworm)", ins.stdout)  # the image's os-release, from its layers
        # Nothing of the pull is left in the store's scratch space.
        self.assertEqual([n for n in os.listdir(os.path.join(store, "tmp")) if n.startswith(("pull", "resume"))], [])

    def test_an_unknown_image_names_the_reference_and_the_registry(self):
        p = pull(f"{OPEN.host}/test/nothing:here", self.layout(), "--quiet")
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"{OPEN.host}/test/nothing:here", p.stderr)
        self.assertIn("MANIFEST_UNKNOWN", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.layout(), "index.json")))

    def test_a_multi_platform_index_gives_the_hosts_image(self):
        out = self.layout()
        p = pull(f"{OPEN.host}/test/multi:1", out, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        idx, desc, man = assert_layout_complete(self, out)
        self.assertEqual(desc["digest"], FIX["host_img"]["digest"])
        self.assertEqual(desc["platform"]["architecture"], HOST_ARCH)
        self.assertIn("io.llm-sandbox.image.index.digest", desc["annotations"])

    def test_zstd_layers_are_pulled_as_they_are(self):
        out = self.layout()
        p = pull(f"{OPEN.host}/test/zstd:1", out, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        _, _, man = assert_layout_complete(self, out)
        self.assertTrue(all(layer["mediaType"].endswith("+zstd") for layer in man["layers"]), man["layers"])
        for layer in man["layers"]:
            with open(os.path.join(out, "blobs", "sha256", layer["digest"][7:]), "rb") as f:
                self.assertEqual(f.read(4), b"\x28\xb5\x2f\xfd")  # the zstd frame magic

    def test_a_mirror_serves_docker_hubs_official_image_by_its_familiar_name(self):
        out = self.layout()
        p = pull("python:3.12-slim", out, "--quiet", "--registry-mirror", f"http://{OPEN.host}")
        self.assertEqual(p.returncode, 0, p.stderr)
        idx, desc, man = assert_layout_complete(self, out)
        self.assertEqual(desc["annotations"]["io.containerd.image.name"], "docker.io/library/python:3.12-slim")

    def test_a_failing_mirror_falls_back_to_the_registry_and_the_error_names_both(self):
        dead = f"http://127.0.0.1:{rh.free_port()}"
        p = pull("python:3.12-slim", self.layout(), "--registry-mirror", dead, timeout=180)
        if p.returncode == 0:  # a machine that reaches Docker Hub: the fallback served it
            self.assertIn("from https://registry-1.docker.io", p.stdout)
            return
        self.assertEqual(p.returncode, 1)
        self.assertIn(dead, p.stderr)  # the mirror was tried first...
        self.assertIn("registry-1.docker.io", p.stderr)  # ...then Docker Hub (unreachable here)

    def test_progress_is_plain_lines_per_blob_when_not_a_terminal(self):
        p = pull(f"{OPEN.host}/test/small:1", self.layout())
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        self.assertEqual(len([line for line in lines if line.startswith("layer ")]), 3, p.stderr)
        self.assertEqual(len([line for line in lines if line.startswith("config ")]), 1, p.stderr)
        self.assertNotIn("\x1b[", p.stderr)
        self.assertIn("3 layers", p.stdout)

    def test_progress_on_a_terminal_redraws_one_line_per_layer_and_a_total(self):
        import pty
        pid, fd = pty.fork()
        if pid == 0:
            os.environ["DOCKER_CONFIG"] = os.path.join(WORK, "no-docker-config")
            os.execv(BINARY, [BINARY, "image", "pull", f"{OPEN.host}/test/small:1", "--layout", self.layout()])
        out = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out)
        text = out.decode(errors="replace")
        self.assertIn("\x1b[", text)  # cursor movement: redrawn in place
        self.assertIn("total", text)
        self.assertEqual(text.count("\x1b[5A") > 0, True, text[-2000:])  # 1 config + 3 layers + total

    def test_concurrent_downloads_are_bounded_and_validated(self):
        p = pull(f"{OPEN.host}/test/small:1", self.layout(), "--jobs", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--jobs", p.stderr)
        p = pull(f"{OPEN.host}/test/small:1", self.layout(), "--jobs", "1", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)


class PullWithAuth(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lsb-auth-", dir=WORK)

    def docker_config(self, host, user, password):
        d = os.path.join(self.tmp, "docker-config")
        os.makedirs(d, exist_ok=True)
        auth = base64.b64encode(f"{user}:{password}".encode()).decode()
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"auths": {host: {"auth": auth}}}, f)
        return {"DOCKER_CONFIG": d}

    def test_basic_auth_with_credentials_from_docker_config_and_a_401_saying_how_to_give_them(self):
        htfile = os.path.join(self.tmp, "htpasswd")
        with open(htfile, "w") as f:
            subprocess.run(["htpasswd", "-Bbn", "alice", "s3cret"], stdout=f, check=True)
        with rh.Registry(STORAGE, htpasswd=htfile, workdir=self.tmp) as reg:
            p = pull(f"{reg.host}/test/small:1", os.path.join(self.tmp, "anon"), "--quiet")
            self.assertEqual(p.returncode, 1)
            self.assertIn("401", p.stderr)
            self.assertIn("docker login", p.stderr)
            self.assertIn("config.json", p.stderr)
            p = pull(f"{reg.host}/test/small:1", os.path.join(self.tmp, "wrong"), "--quiet",
                     env=self.docker_config(reg.host, "alice", "wrong"))
            self.assertEqual(p.returncode, 1)
            self.assertIn("basic auth as \"alice\"", p.stderr)
            out = os.path.join(self.tmp, "ok")
            p = pull(f"{reg.host}/test/small:1", out, "--quiet", env=self.docker_config(reg.host, "alice", "s3cret"))
            self.assertEqual(p.returncode, 0, p.stderr)
            assert_layout_complete(self, out)

    def test_anonymous_token_auth_as_docker_hub_requires_it(self):
        tokens = rh.TokenService(self.tmp)
        try:
            with rh.Registry(STORAGE, token=tokens.registry_config(), workdir=self.tmp) as reg:
                out = os.path.join(self.tmp, "out")
                p = pull(f"{reg.host}/test/small:1", out, "--quiet")
                self.assertEqual(p.returncode, 0, p.stderr)
                assert_layout_complete(self, out)
                self.assertTrue(tokens.requests, "the token service was never asked")
                first = tokens.requests[0]
                self.assertIn("scope=repository%3Atest%2Fsmall%3Apull", first["path"])
                self.assertIn("service=lsb-test-registry", first["path"])
                self.assertEqual(first["authorization"], "")  # anonymous
                # One token serves the whole pull (every blob), not one token per request.
                self.assertLessEqual(len(tokens.requests), 2, tokens.requests)
        finally:
            tokens.stop()

    def test_a_token_service_that_wants_credentials_gets_them_from_docker_config(self):
        tokens = rh.TokenService(self.tmp, users={"bob": "pw"})
        try:
            with rh.Registry(STORAGE, token=tokens.registry_config(), workdir=self.tmp) as reg:
                p = pull(f"{reg.host}/test/small:1", os.path.join(self.tmp, "anon"), "--quiet")
                self.assertEqual(p.returncode, 1)
                self.assertIn("token service", p.stderr)
                self.assertIn("docker login", p.stderr)
                out = os.path.join(self.tmp, "out")
                p = pull(f"{reg.host}/test/small:1", out, "--quiet", env=self.docker_config(reg.host, "bob", "pw"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(tokens.requests[-1]["authorization"].startswith("Basic "))
        finally:
            tokens.stop()

    def test_blob_redirects_are_followed_without_the_registrys_authorization(self):
        htfile = os.path.join(self.tmp, "htpasswd")
        with open(htfile, "w") as f:
            subprocess.run(["htpasswd", "-Bbn", "alice", "s3cret"], stdout=f, check=True)
        storage = rh.Proxy(OPEN.host)  # "blob storage": another origin, serving the blobs
        with rh.Registry(STORAGE, htpasswd=htfile, workdir=self.tmp) as reg:
            front = rh.Proxy(reg.host, redirect_to=f"http://{storage.host}")
            try:
                out = os.path.join(self.tmp, "out")
                p = pull(f"{front.host}/test/small:1", out, "--quiet",
                         env=self.docker_config(front.host, "alice", "s3cret"))
                self.assertEqual(p.returncode, 0, p.stderr)
                assert_layout_complete(self, out)
                blobs = storage.blob_requests()
                self.assertEqual(len(blobs), 4)  # config and three layers, all redirected
                self.assertTrue(all(r["authorization"] is None for r in blobs), blobs)
                self.assertTrue(any(r["authorization"] for r in front.requests), "the registry got no credentials")
            finally:
                front.stop()
                storage.stop()


class PullOverTls(unittest.TestCase):
    def test_tls_with_a_test_ca_from_the_option_or_certs_d_and_a_clear_error_without(self):
        tmp = tempfile.mkdtemp(prefix="lsb-tls-", dir=WORK)
        certs = rh.make_ca_and_cert(tmp)
        with rh.Registry(STORAGE, tls=(certs["server.crt"], certs["server.key"]), workdir=tmp) as reg:
            empty_certs_d = os.path.join(tmp, "empty-certs.d")
            os.makedirs(empty_certs_d)
            p = pull(f"{reg.host}/test/small:1", os.path.join(tmp, "a"), "--quiet", "--certs-dir", empty_certs_d)
            self.assertEqual(p.returncode, 1)
            self.assertIn(reg.host, p.stderr)
            self.assertIn("--ca-file", p.stderr)
            self.assertIn("not trusted", p.stderr)
            out = os.path.join(tmp, "b")
            p = pull(f"{reg.host}/test/small:1", out, "--quiet", "--ca-file", certs["ca.crt"],
                     "--certs-dir", empty_certs_d)
            self.assertEqual(p.returncode, 0, p.stderr)
            assert_layout_complete(self, out)
            certs_d = os.path.join(tmp, "certs.d")
            os.makedirs(os.path.join(certs_d, reg.host))
            shutil.copy(certs["ca.crt"], os.path.join(certs_d, reg.host, "ca.crt"))
            p = pull(f"{reg.host}/test/small:1", os.path.join(tmp, "c"), "--quiet", "--certs-dir", certs_d)
            self.assertEqual(p.returncode, 0, p.stderr)


class PullSurvivesBrokenTransfers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lsb-broken-", dir=WORK)

    def test_a_blob_cut_halfway_is_resumed_with_range(self):
        proxy = rh.Proxy(OPEN.host, cut_once=True)
        try:
            out = os.path.join(self.tmp, "out")
            p = pull(f"{proxy.host}/test/big:1", out, "--quiet")
            self.assertEqual(p.returncode, 0, p.stderr)
            assert_layout_complete(self, out)
            ranges = [r["range"] for r in proxy.blob_requests() if r["range"]]
            self.assertTrue(ranges, proxy.blob_requests())
            self.assertTrue(all(r.startswith("bytes=") and r != "bytes=0-" for r in ranges), ranges)
        finally:
            proxy.stop()

    def test_a_tampered_blob_is_refused_naming_its_digest_and_deleted(self):
        proxy = rh.Proxy(OPEN.host, tamper=True)
        try:
            out = os.path.join(self.tmp, "out")
            p = pull(f"{proxy.host}/test/small:1", out, "--quiet", "--jobs", "1")
            self.assertEqual(p.returncode, 1)
            self.assertIn("does not match its digest", p.stderr)
            bad = [r["path"].rsplit("/", 1)[1] for r in proxy.blob_requests()]
            self.assertTrue(any(d in p.stderr for d in bad), (p.stderr, bad))
            blobs = os.listdir(os.path.join(out, "blobs", "sha256"))
            for d in bad:
                self.assertNotIn(d[7:], blobs)
                self.assertNotIn(d[7:] + ".partial", blobs)
            self.assertFalse(os.path.exists(os.path.join(out, "index.json")))
        finally:
            proxy.stop()

    def test_a_killed_pull_leaves_no_index_and_a_re_pull_resumes_to_a_valid_layout(self):
        slow = rh.Proxy(OPEN.host, delay_per_chunk=0.02)
        out = os.path.join(self.tmp, "out")
        e = dict(os.environ, DOCKER_CONFIG=os.path.join(WORK, "no-docker-config"))
        proc = subprocess.Popen([BINARY, "image", "pull", f"{slow.host}/test/big:1", "--layout", out, "--quiet"],
                                env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            blobs = os.path.join(out, "blobs", "sha256")
            deadline = time.time() + 60
            partial = []
            while time.time() < deadline:
                if os.path.isdir(blobs):
                    partial = [n for n in os.listdir(blobs) if n.endswith(".partial")
                               and os.path.getsize(os.path.join(blobs, n)) > (1 << 20)]
                if partial:
                    break
                time.sleep(0.05)
            self.assertTrue(partial, "no partial blob appeared")
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            slow.stop()
        self.assertFalse(os.path.exists(os.path.join(out, "index.json")))
        self.assertNotEqual(rh.skopeo_inspect_layout(out).returncode, 0)
        kept = os.path.getsize(os.path.join(out, "blobs", "sha256", partial[0]))
        watcher = rh.Proxy(OPEN.host)
        try:
            p = pull(f"{watcher.host}/test/big:1", out, "--quiet")
            self.assertEqual(p.returncode, 0, p.stderr)
            assert_layout_complete(self, out)
            ranges = [r["range"] for r in watcher.blob_requests() if r["range"]]
            self.assertTrue(any(int(r[6:].rstrip("-")) >= kept for r in ranges), (ranges, kept))
        finally:
            watcher.stop()


def start_store_pull(ref, store):
    e = dict(os.environ, DOCKER_CONFIG=os.path.join(WORK, "no-docker-config"))
    return subprocess.Popen([BINARY, "image", "pull", ref, "--store", store, "--quiet"], env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def store_pull(ref, store, timeout=120):
    p = start_store_pull(ref, store)
    out, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def store_images(store):
    with open(os.path.join(store, "index.json")) as f:
        return [m["annotations"]["org.opencontainers.image.ref.name"] for m in json.load(f)["manifests"]]


def pull_dir_files(store):
    """{name: size} of the files in the blobs of the store's resumable pull dirs."""
    out = {}
    tmp = os.path.join(store, "tmp")
    for d in os.listdir(tmp) if os.path.isdir(tmp) else []:
        blobs = os.path.join(tmp, d, "blobs", "sha256")
        if d.startswith(("resume-", "pull-")) and os.path.isdir(blobs):
            for n in os.listdir(blobs):
                try:
                    out[n] = os.path.getsize(os.path.join(blobs, n))
                except FileNotFoundError:
                    pass
    return out


def wait_for(pred, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def kill(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)


def manifest_blobs(layout, desc):
    with open(os.path.join(layout, "blobs", "sha256", desc["digest"][7:]), "rb") as f:
        man = json.loads(f.read())
    return {d["digest"]: d["size"] for d in [man["config"]] + man["layers"]}


class StorePullHygiene(unittest.TestCase):
    """Pulls into the image store (image/store_puller.h): a killed pull leaves the store consistent and
    the next one downloads only what was not verified yet; an image is downloaded once however many
    pull it at a time, and the download of one image never blocks the pull of another."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lsb-store-pull-", dir=WORK)
        self.store = os.path.join(self.tmp, "store")
        self.big = manifest_blobs(FIX["src"], FIX["big"])

    def repull(self, proxy):
        """The same reference again (one proxy: the pull dir is the reference's), now at full speed;
        returns the blob GETs of this pull."""
        proxy.delay = 0
        with proxy.lock:
            proxy.requests.clear()
        p = store_pull(f"{proxy.host}/test/big:1", self.store)
        self.assertEqual(p.returncode, 0, p.stderr)
        return [r for r in proxy.blob_requests() if r["method"] == "GET"]

    def assert_one_image_and_no_leftovers(self):
        self.assertEqual(len(store_images(self.store)), 1)
        self.assertEqual([n for n in os.listdir(os.path.join(self.store, "tmp"))], [])

    def test_sigkill_mid_download_keeps_the_verified_blobs_and_the_next_pull_resumes_the_rest(self):
        slow = rh.Proxy(OPEN.host, delay_per_chunk=0.02)
        done_first = min(self.big, key=self.big.get)[7:]  # the config: done long before the 24 MiB layer

        def verified_and_partial():
            f = pull_dir_files(self.store)
            big_partial = any(n.endswith(".partial") and s > (1 << 20) for n, s in f.items())
            return f if done_first in f and big_partial else None

        try:
            proc = start_store_pull(f"{slow.host}/test/big:1", self.store)
            try:
                seen = wait_for(verified_and_partial, "a verified blob and a partial one in the pull dir")
            finally:
                kill(proc)
            self.assertEqual(store_images(self.store), [], "a killed pull indexes nothing")
            gets = self.repull(slow)
        finally:
            slow.stop()
        verified = [n for n in seen if not n.endswith(".partial")]
        partial = {n[:-len(".partial")]: s for n, s in seen.items() if n.endswith(".partial")}
        fetched = [r["path"].rsplit("sha256:", 1)[1] for r in gets]
        for hex_ in verified:
            self.assertNotIn(hex_, fetched, "a blob verified before the kill was downloaded again")
        for hex_, kept in partial.items():
            ranges = [r["range"] for r in gets if hex_ in r["path"]]
            self.assertTrue(ranges and ranges[0] and int(ranges[0][6:].rstrip("-")) >= kept, (ranges, kept))
        self.assert_one_image_and_no_leftovers()

    def test_sigkill_mid_import_and_the_next_pull_downloads_no_blob_again(self):
        proxy = rh.Proxy(OPEN.host)
        tmp = os.path.join(self.store, "tmp")
        try:
            proc = start_store_pull(f"{proxy.host}/test/big:1", self.store)
            try:
                wait_for(lambda: os.path.isdir(tmp) and any(n.startswith("layer-") for n in os.listdir(tmp)),
                         "the import unpacking a layer")
            finally:
                kill(proc)
            self.assertEqual(store_images(self.store), [], "a pull killed in its import indexes nothing")
            self.assertEqual(self.repull(proxy), [], "every blob was verified before the kill: none is downloaded again")
        finally:
            proxy.stop()
        self.assert_one_image_and_no_leftovers()

    def test_two_concurrent_pulls_of_one_image_both_succeed_and_download_each_blob_once(self):
        proxy = rh.Proxy(OPEN.host, delay_per_chunk=0.002)
        try:
            procs = [start_store_pull(f"{proxy.host}/test/big:1", self.store) for _ in range(2)]
            results = [p.communicate(timeout=180) + (p.returncode,) for p in procs]
            gets = [r["path"].rsplit("/", 1)[1] for r in proxy.blob_requests() if r["method"] == "GET"]
        finally:
            proxy.stop()
        for out, err, rc in results:
            self.assertEqual(rc, 0, err)
        for digest in self.big:
            self.assertEqual(gets.count(digest), 1, f"{digest} fetched {gets.count(digest)} times: {gets}")
        self.assert_one_image_and_no_leftovers()

    def test_a_long_download_of_one_image_does_not_block_the_pull_of_another(self):
        slow = rh.Proxy(OPEN.host, delay_per_chunk=0.02)
        try:
            big = start_store_pull(f"{slow.host}/test/big:1", self.store)
            try:
                wait_for(lambda: any(n.endswith(".partial") for n in pull_dir_files(self.store)), "the big download")
                p = store_pull(f"{OPEN.host}/test/small:1", self.store)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIsNone(big.poll(), "the slow pull ended before the other image's pull did")
                self.assertEqual(len(store_images(self.store)), 1, "small:1 is stored while big:1 downloads")
            finally:
                kill(big)
        finally:
            slow.stop()


class PullRefusesWhatItShould(unittest.TestCase):
    def test_schema_1_manifests_are_refused_with_a_clear_error(self):
        # A registry serving schema 1: a tiny HTTP server, since docker-registry 2.8 converts on push.
        import http.server
        import threading
        body = json.dumps({"schemaVersion": 1, "name": "old/img", "tag": "1", "fsLayers": []}).encode()

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.docker.distribution.manifest.v1+prettyjws")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            tmp = tempfile.mkdtemp(dir=WORK)
            p = pull(f"127.0.0.1:{srv.server_address[1]}/old/img:1", os.path.join(tmp, "o"), "--quiet")
            self.assertEqual(p.returncode, 1)
            self.assertIn("schema 1", p.stderr)
        finally:
            srv.shutdown()
            srv.server_close()

    def test_plain_http_to_a_non_loopback_registry_needs_insecure_registry(self):
        addr = non_loopback_address()
        if addr is None:
            self.skipTest("no non-loopback IPv4 address on this machine")
        tmp = tempfile.mkdtemp(dir=WORK)
        # The open registry is reached through a proxy listening on that address.
        proxy = rh.Proxy(OPEN.host)
        proxy.server.server_close()
        import http.server
        import threading
        srv = http.server.ThreadingHTTPServer((addr, 0), proxy.server.RequestHandlerClass)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        host = f"{addr}:{srv.server_address[1]}"
        try:
            p = pull(f"{host}/test/small:1", os.path.join(tmp, "a"), "--quiet", timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertIn("TLS", p.stderr)
            p = pull(f"{host}/test/small:1", os.path.join(tmp, "b"), "--quiet", "--insecure-registry", host)
            self.assertEqual(p.returncode, 0, p.stderr)
        finally:
            srv.shutdown()
            srv.server_close()


def non_loopback_address():
    import socket
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if "inet" in parts:
            a = parts[parts.index("inet") + 1].split("/")[0]
            if not a.startswith("127."):
                try:
                    with socket.socket() as s:
                        s.bind((a, 0))
                    return a
                except OSError:
                    continue
    return None


if __name__ == "__main__":
    unittest.main()
