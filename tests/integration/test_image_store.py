"""`llm-sandbox image import|ls|inspect|rm|prune` through the real binary, on a store in a temp dir.

Fixtures: archives and OCI layouts written here with the stdlib (always), and, when a Docker
engine answers, `docker save llm-sandbox/python:3.11-test` and `skopeo copy docker-daemon:... oci:`
(the engine only makes fixtures; the store never talks to it). Run by the integration_images CTest
entry (LSB_IMAGE_SUITE=1), not a second time by integration_native.
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import unittest

from harness import BINARY

TEST_IMAGE = "llm-sandbox/python:3.11-test"
HOST_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def make_tar(members):
    """members: (name, bytes) for files, (name, None) for dirs, (name, '->target') for symlinks."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif isinstance(data, str) and data.startswith("->"):
                info.type, info.linkname = tarfile.SYMTYPE, data[2:]
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


BASE = make_tar([("etc", None), ("usr", None), ("usr/lib", None),
                 ("usr/lib/os-release", b'PRETTY_NAME="Fixture Linux 12 (store)"\nID=fixture\n'),
                 ("etc/os-release", "->../usr/lib/os-release"),
                 ("usr/local", None), ("usr/local/bin", None),
                 ("usr/local/bin/python3.11", b"#!/bin/false\n"), ("usr/local/bin/python3", "->python3.11"),
                 ("usr/bin", None), ("usr/bin/sh", b"#!/bin/false\n"), ("bin", "->usr/bin")])
APP = make_tar([("app", None), ("app/main.py", b"print(1)\n")])


def config_json(diff_ids):
    return json.dumps({"architecture": HOST_ARCH, "os": "linux", "created": "2024-05-06T07:08:09Z",
                       "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "PYTHON_VERSION=3.11.9"],
                                  "Cmd": ["python3"], "WorkingDir": "/app"},
                       "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()


def write_docker_save(path, tars, tag, pad=b""):
    """A classic `docker save` archive. `pad` adds an extra member (to make a big archive)."""
    cfg = config_json([sha256(t) for t in tars])
    members = [("manifest.json", json.dumps([{"Config": sha256(cfg)[7:] + ".json", "RepoTags": [tag],
                                               "Layers": [f"l{i}/layer.tar" for i in range(len(tars))]}]).encode()),
               (sha256(cfg)[7:] + ".json", cfg)]
    for i, t in enumerate(tars):
        members += [(f"l{i}", None), (f"l{i}/layer.tar", t)]
    if pad:
        members.append(("pad.bin", pad))
    with open(path, "wb") as f:
        f.write(make_tar(members))


def write_oci_layout(d, tars, tag):
    os.makedirs(os.path.join(d, "blobs", "sha256"))

    def blob(data):
        with open(os.path.join(d, "blobs", "sha256", sha256(data)[7:]), "wb") as f:
            f.write(data)
        return {"digest": sha256(data), "size": len(data)}

    layers = [dict(blob(gzip.compress(t)), mediaType="application/vnd.oci.image.layer.v1.tar+gzip") for t in tars]
    cfg = dict(blob(config_json([sha256(t) for t in tars])), mediaType="application/vnd.oci.image.config.v1+json")
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": cfg, "layers": layers}).encode()
    m = dict(blob(manifest), mediaType="application/vnd.oci.image.manifest.v1+json",
             annotations={"org.opencontainers.image.ref.name": tag})
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [m]}, f)
    with open(os.path.join(d, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')


def read_json(path):
    with open(path) as f:
        return json.load(f)


def engine_answers():
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "image", "inspect", TEST_IMAGE], capture_output=True, timeout=30).returncode == 0
    except subprocess.TimeoutExpired:
        return False


@unittest.skipUnless(os.access(BINARY, os.X_OK), f"{BINARY} is not built")
@unittest.skipUnless(os.environ.get("LSB_IMAGE_SUITE") == "1", "run by the integration_images CTest entry")
class ImageStoreCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lsb-image-it-")
        self.store = os.path.join(self.tmp, "store")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def image(self, *args, check=True, timeout=600):
        proc = subprocess.run([BINARY, "image", args[0], "--store", self.store, *args[1:]], capture_output=True,
                              text=True, timeout=timeout)
        if check:
            self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc

    def ls(self):
        return json.loads(self.image("ls", "--json").stdout)

    def inspect(self, ref):
        return json.loads(self.image("inspect", "--json", ref).stdout)

    def test_docker_save_archive_and_oci_layout_import_ls_inspect_rm_prune(self):
        archive = os.path.join(self.tmp, "saved.tar")
        write_docker_save(archive, [BASE, APP], "example.com/fixture:1")
        out = self.image("import", archive).stdout
        self.assertIn("imported example.com/fixture:1", out)
        layout = os.path.join(self.tmp, "layout")
        write_oci_layout(layout, [BASE], "base")
        self.image("import", layout, "--name", "fixture-base:latest")
        names = {e["name"]: e for e in self.ls()}
        self.assertEqual(set(names), {"example.com/fixture:1", "fixture-base:latest"})
        self.assertTrue(names["fixture-base:latest"]["digest"].startswith("sha256:"))
        self.assertEqual(names["example.com/fixture:1"]["created"], "2024-05-06T07:08:09Z")
        info = self.inspect("example.com/fixture:1")
        self.assertEqual(info["platform"], f"linux/{HOST_ARCH}")
        self.assertEqual(len(info["layers"]), 2)
        self.assertEqual(info["layers"][0]["diff_id"], sha256(BASE))
        self.assertEqual(info["os_release"], "Fixture Linux 12 (store)")
        self.assertEqual(info["interpreters"]["python3"]["resolved"], "/usr/local/bin/python3.11")
        self.assertEqual(info["interpreters"]["sh"]["resolved"], "/usr/bin/sh")
        self.assertNotIn("node", info["interpreters"])
        self.assertEqual(info["config"]["working_dir"], "/app")
        # The base layer is shared: unpacked once for both images.
        self.assertEqual(len(os.listdir(os.path.join(self.store, "layers", "sha256"))), 2)
        text = self.image("inspect", "example.com/fixture:1").stdout
        self.assertIn("python3  /usr/local/bin/python3 -> /usr/local/bin/python3.11", text)
        self.image("rm", "example.com/fixture:1")
        self.assertEqual([e["name"] for e in self.ls()], ["fixture-base:latest"])
        self.assertEqual(len(os.listdir(os.path.join(self.store, "layers", "sha256"))), 1)
        missing = self.image("inspect", "example.com/fixture:1", check=False)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("not in the image store", missing.stderr)
        self.image("rm", "fixture-base")
        self.assertIn("removed 0 blobs", self.image("prune").stdout)
        self.assertEqual(os.listdir(os.path.join(self.store, "blobs", "sha256")), [])

    def test_max_store_bytes_evicts_the_least_recently_used_image_and_a_bad_size_is_named(self):
        blobs = []
        for i in range(2):
            archive = os.path.join(self.tmp, f"n{i}.tar")
            write_docker_save(archive, [make_tar([(f"noise{i}", os.urandom(2 << 20))])], f"example.com/n{i}:1")
            blobs.append(archive)
        self.image("import", blobs[0], "--max-store-bytes", "6M")
        self.image("import", blobs[1], "--max-store-bytes", "6M")  # ~4 MiB each (blob + layer)
        self.assertEqual([e["name"] for e in self.ls()], ["example.com/n1:1"])
        bad = self.image("prune", "--max-store-bytes", "lots", check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("--max-store-bytes 'lots'", bad.stderr)

    def test_an_image_for_another_architecture_is_refused_naming_both(self):
        other = "arm64" if HOST_ARCH != "arm64" else "amd64"
        archive = os.path.join(self.tmp, "foreign.tar")
        global config_json
        real = config_json
        config_json = lambda d: real(d).replace(f'"architecture": "{HOST_ARCH}"'.encode(),  # noqa: E731
                                                f'"architecture": "{other}"'.encode())
        try:
            write_docker_save(archive, [BASE], "example.com/foreign:1")
        finally:
            config_json = real
        proc = self.image("import", archive, check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(f"the image is for linux/{other} but this host is linux/{HOST_ARCH}", proc.stderr)
        self.assertEqual(self.ls(), [])

    def test_bad_usage_exits_2_and_a_tampered_layer_exits_1(self):
        self.assertEqual(self.image("import", check=False).returncode, 2)
        self.assertEqual(self.image("frobnicate", check=False).returncode, 2)
        layout = os.path.join(self.tmp, "layout")
        write_oci_layout(layout, [BASE], "base")
        self.assertEqual(self.image("import", layout, check=False).returncode, 2)  # needs --name
        blob_dir = os.path.join(layout, "blobs", "sha256")
        manifest_digest = read_json(os.path.join(layout, "index.json"))["manifests"][0]["digest"]
        manifest = read_json(os.path.join(blob_dir, manifest_digest[7:]))
        layer = os.path.join(blob_dir, manifest["layers"][0]["digest"][7:])
        with open(layer, "r+b") as f:
            data = bytearray(f.read())
            data[len(data) // 2] ^= 0xFF
            f.seek(0)
            f.write(bytes(data))
        proc = self.image("import", layout, "--name", "tampered:1", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("does not match its digest", proc.stderr)
        self.assertEqual(self.ls(), [])

    def test_sigkill_mid_import_leaves_a_consistent_store_and_reimport_succeeds(self):
        archive = os.path.join(self.tmp, "big.tar")
        # A layer big enough that the import is still running when it is killed.
        big = make_tar([("big", None)] + [(f"big/f{i}", os.urandom(1 << 20)) for i in range(96)])
        write_docker_save(archive, [BASE, big], "example.com/big:1")
        self.image("ls")  # creates the store
        proc = subprocess.Popen([BINARY, "image", "import", "--store", self.store, archive],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        tmp = os.path.join(self.store, "tmp")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if any(n.startswith(("layer-", "import-")) and not n.endswith(".lock") for n in os.listdir(tmp)):
                break
            time.sleep(0.005)
        self.assertIsNone(proc.poll(), "the import ended before it could be killed")
        time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stderr.close()
        self.assertEqual(self.ls(), [])  # nothing half-imported is visible
        self.assertTrue(os.listdir(tmp))  # it did leave work behind
        index = read_json(os.path.join(self.store, "index.json"))
        self.assertEqual(index["manifests"], [])
        pruned = self.image("prune").stdout
        self.assertRegex(pruned, r"[1-9]\d* leftover temp dirs")
        self.assertEqual(os.listdir(tmp), [])
        self.image("import", archive)
        info = self.inspect("example.com/big:1")
        self.assertEqual([l["diff_id"] for l in info["layers"]], [sha256(BASE), sha256(big)])
        self.assertEqual(info["layers"][1]["size"], 96 << 20)


@unittest.skipUnless(os.access(BINARY, os.X_OK), f"{BINARY} is not built")
@unittest.skipUnless(os.environ.get("LSB_IMAGE_SUITE") == "1", "run by the integration_images CTest entry")
class DockerMadeFixturesTest(unittest.TestCase):
    """The real test image, as `docker save` and skopeo write it."""

    @classmethod
    def setUpClass(cls):
        if not engine_answers():
            raise unittest.SkipTest(f"no Docker engine with {TEST_IMAGE} (scripts/build-test-image.sh makes it)")
        cls.tmp = tempfile.mkdtemp(prefix="lsb-image-docker-")
        cls.store = os.path.join(cls.tmp, "store")
        cls.archive = os.path.join(cls.tmp, "saved.tar")
        subprocess.run(["docker", "save", "-o", cls.archive, TEST_IMAGE], check=True, timeout=600)
        cls.layout = os.path.join(cls.tmp, "oci")
        cls.skopeo = shutil.which("skopeo") is not None
        if cls.skopeo:
            subprocess.run(["skopeo", "copy", "-q", f"docker-daemon:{TEST_IMAGE}", f"oci:{cls.layout}:3.11-test"],
                           check=True, timeout=600)
        # What the image's files say, read independently of the store: /etc/os-release of the
        # running image and its python version.
        cls.pretty = subprocess.run(["docker", "run", "--rm", TEST_IMAGE, "sh", "-c", ". /etc/os-release; echo $PRETTY_NAME"],
                                    capture_output=True, text=True, timeout=120).stdout.strip()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def image(self, *args):
        proc = subprocess.run([BINARY, "image", args[0], "--store", self.store, *args[1:]], capture_output=True,
                              text=True, timeout=900)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def test_docker_save_archive_imports_with_its_python_and_os_release(self):
        self.assertIn(f"imported {TEST_IMAGE}", self.image("import", self.archive))
        info = json.loads(self.image("inspect", "--json", TEST_IMAGE))
        self.assertIn("python3", info["interpreters"])
        self.assertIn("3.11", info["interpreters"]["python3"]["resolved"])
        self.assertEqual(info["os_release"], self.pretty)
        self.assertIn(TEST_IMAGE, [e["name"] for e in json.loads(self.image("ls", "--json"))])

    def test_skopeo_oci_layout_imports_to_the_same_layers(self):
        if not self.skopeo:
            self.skipTest("no skopeo")
        self.image("import", self.layout, "--name", "skopeo/python:3.11-test")
        info = json.loads(self.image("inspect", "--json", "skopeo/python:3.11-test"))
        self.assertIn("3.11", info["interpreters"]["python3"]["resolved"])
        self.assertEqual(info["os_release"], self.pretty)


if __name__ == "__main__":
    unittest.main()
