"""Images with no registry, no Docker and no skopeo (issue 37, item 2), through the real binary:

  - `image create` from a root filesystem directory and from a tarball of it. debootstrap needs a
    Debian mirror, which these machines cannot reach, and the apt cache here lacks the essential
    packages (libc6, dpkg, base-files...) a local mirror would need, so the rootfs is laid out as
    debootstrap lays out Debian's (merged /usr, /usr/bin/python3 -> python3.11, the stdlib in
    /usr/lib/python3.11) from the host's own python3.11, its libraries and dash;
  - the seed policy (policies/code-sandbox.yaml, unchanged) runs natively on the created image;
  - `image import` of an OCI layout by its own ref.name ("python:3.12-slim", as `skopeo copy
    docker://python:3.12-slim oci:DIR:python:3.12-slim` writes it), no --name; a layout naming its
    image only by a tag is refused naming the fix; then the seed policy, unchanged, on that image
    (the image map not mapping python:3.12-slim), and `container.build` on it (a run step);
  - attacks on `image create` of a tarball: '..', absolute names, a write through a symlink, device
    nodes (left out), a truncated huge entry: refused by the store's unpacker, or dropped.
Run by the integration_images CTest entry (LSB_IMAGE_SUITE=1); the runs need root.
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from harness import BINARY, SEED_POLICY

HOST_PYTHON = "/usr/bin/python3.11"
HOST_STDLIB = "/usr/lib/python3.11"
SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "site-packages",
               "dist-packages"}
MARK = "LSB_OFFLINE_ROOTFS=1"
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/lsb-no-docker.sock"}


def copy_host_path(root, path):
    """`path` of the host into `root`, with every symlink on the way (a usr-merged /lib64 too)."""
    real_dir = os.path.realpath(os.path.dirname(path))
    p = os.path.join(real_dir, os.path.basename(path))
    dst = os.path.join(root, p.lstrip("/"))
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.islink(p):
        target = os.readlink(p)
        if not os.path.lexists(dst):
            os.symlink(target, dst)
        copy_host_path(root, target if target.startswith("/") else os.path.join(real_dir, target))
    elif os.path.isfile(p) and not os.path.exists(dst):
        shutil.copy2(p, dst)


def libraries(binaries):
    libs = set()
    for b in binaries:
        out = subprocess.run(["ldd", b], capture_output=True, text=True, timeout=60).stdout
        libs.update(w for line in out.splitlines() for w in line.split() if w.startswith("/") and os.path.exists(w))
    return sorted(libs)


def debian_like_rootfs(root):
    """A minimal Debian-shaped root filesystem from the host's python3.11, as debootstrap makes one."""
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        os.makedirs(os.path.join(root, target), exist_ok=True)
        os.symlink(target, os.path.join(root, link))
    for d in ("etc", "root", "home", "run", "var/tmp", "usr/local/bin", "proc", "sys", "dev"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.makedirs(os.path.join(root, "tmp"))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    dynload = os.path.join(HOST_STDLIB, "lib-dynload")
    ext = [os.path.join(dynload, n) for n in os.listdir(dynload) if n.endswith(".so")]
    for p in ["/usr/bin/python3", "/usr/bin/dash"] + libraries([HOST_PYTHON, "/usr/bin/dash"] + ext):
        copy_host_path(root, p)
    os.symlink("dash", os.path.join(root, "usr/bin/sh"))
    shutil.copytree(HOST_STDLIB, os.path.join(root, HOST_STDLIB.lstrip("/")), symlinks=True,
                    ignore=lambda d, names: [n for n in names if d == HOST_STDLIB and n in SKIP_STDLIB])
    with open(os.path.join(root, "etc/os-release"), "w") as f:
        f.write('PRETTY_NAME="Offline Debian-like rootfs"\nID=debian\n' + MARK + "\n")
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    with open(os.path.join(root, "etc/group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")


def tar_of_dir(src, path, compress=""):
    with tarfile.open(path, "w" + (":" + compress if compress else ""), format=tarfile.PAX_FORMAT) as t:
        t.add(src, arcname=".")


def oci_layout(path, layer_tar, ref_name):
    """An OCI image layout holding one image of one (uncompressed) layer, named `ref_name`."""
    blobs = os.path.join(path, "blobs", "sha256")
    os.makedirs(blobs)

    def blob(data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        with open(os.path.join(blobs, d[7:]), "wb") as f:
            f.write(data)
        return {"digest": d, "size": len(data)}

    with open(layer_tar, "rb") as f:
        layer = dict(blob(f.read()), mediaType="application/vnd.oci.image.layer.v1.tar")
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    config = {"architecture": arch, "os": "linux", "created": "2026-01-01T00:00:00Z",
              "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "Cmd": ["python3"]},
              "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}
    cfg = dict(blob(json.dumps(config).encode()), mediaType="application/vnd.oci.image.config.v1+json")
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": cfg, "layers": [layer]}).encode()
    m = dict(blob(manifest), mediaType="application/vnd.oci.image.manifest.v1+json",
             annotations={"org.opencontainers.image.ref.name": ref_name})
    with open(os.path.join(path, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [m]}, f)
    with open(os.path.join(path, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')


def hostile_tar(path, members):
    """members: (TarInfo fields dict, bytes or None); written as they are, nothing checked."""
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as t:
        for fields, data in members:
            info = tarfile.TarInfo(fields.pop("name"))
            for k, v in fields.items():
                setattr(info, k, v)
            if data is not None:
                info.size = len(data)
            t.addfile(info, io.BytesIO(data) if data is not None else None)


def setUpModule():
    if os.environ.get("LSB_IMAGE_SUITE") != "1":
        raise unittest.SkipTest("run by the integration_images CTest entry (LSB_IMAGE_SUITE=1)")
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest(f"{BINARY} not built")
    if not os.path.isfile(HOST_PYTHON):
        raise unittest.SkipTest(f"{HOST_PYTHON} is missing (the rootfs is made from it)")
    global WORK, ROOTFS
    WORK = tempfile.mkdtemp(prefix="lsb-offline-")
    os.chmod(WORK, 0o755)  # a box's init opens the store's layers as the box's user
    ROOTFS = os.path.join(WORK, "rootfs")
    debian_like_rootfs(ROOTFS)


def tearDownModule():
    shutil.rmtree(WORK, True)


def lsb(*args, timeout=600):
    env = dict(os.environ, **NO_ENGINE)
    env.pop("LLM_SANDBOX_IMAGE_STORE", None)
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, env=env)


class OfflineImages(unittest.TestCase):
    def setUp(self):
        self.store = tempfile.mkdtemp(prefix="store-", dir=WORK)
        os.chmod(self.store, 0o755)
        self.images = os.path.join(WORK, "no-map.yaml")  # maps nothing: every image is the store's
        with open(self.images, "w") as f:
            f.write("images: {}\n")

    def run_policy(self, policy, code):
        prog = os.path.join(WORK, f"prog-{os.urandom(3).hex()}.py")
        with open(prog, "w") as f:
            f.write(code)
        return lsb("run", "--store", self.store, "--images", self.images, "--policy", policy, prog)

    def policy_on(self, image, extra=""):
        with open(SEED_POLICY) as f:
            text = f.read()
        self.assertIn("image: python:3.12-slim", text)
        d = tempfile.mkdtemp(prefix="policy-", dir=WORK)
        path = os.path.join(d, "policy.yaml")
        with open(path, "w") as f:
            f.write(text.replace("image: python:3.12-slim", f'image: "{image}"\n  pull: never' + extra))
        return path

    PROBE = "import sys\nprint(sys.version_info[:2])\nprint([l for l in open('/etc/os-release') if 'LSB_' in l])\n"

    def test_create_from_a_directory_and_run_the_seed_policy_on_it(self):
        c = lsb("image", "create", "--store", self.store, "--name", "offline/debian-python:1",
                "--env", "LANG=C.UTF-8", "--workdir", "/tmp", ROOTFS)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("created offline/debian-python:1", c.stdout)
        info = json.loads(lsb("image", "inspect", "--store", self.store, "--json", "offline/debian-python:1").stdout)
        self.assertEqual(info["interpreters"]["python3"]["path"], "/usr/bin/python3", info["interpreters"])
        self.assertIn("LANG=C.UTF-8", info["config"]["env"])
        self.assertEqual(info["config"]["working_dir"], "/tmp")
        r = self.run_policy(self.policy_on("offline/debian-python:1"), self.PROBE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("(3, 11)", r.stdout)
        self.assertIn(MARK, r.stdout)  # the image's /etc, not the host's

    def test_create_from_a_tarball(self):
        tarball = os.path.join(WORK, "rootfs.tar.gz")
        if not os.path.exists(tarball):
            tar_of_dir(ROOTFS, tarball, "gz")
        c = lsb("image", "create", "--store", self.store, "--name", "offline/from-tar:1", tarball)
        self.assertEqual(c.returncode, 0, c.stderr)
        r = self.run_policy(self.policy_on("offline/from-tar:1"), self.PROBE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(MARK, r.stdout)

    def test_oci_layout_by_its_own_ref_then_the_seed_policy_and_a_build_on_it(self):
        layer = os.path.join(WORK, "layer.tar")
        if not os.path.exists(layer):
            tar_of_dir(ROOTFS, layer)
        layout = os.path.join(WORK, f"layout-{os.urandom(3).hex()}")
        oci_layout(layout, layer, "python:3.12-slim")
        i = lsb("image", "import", "--store", self.store, layout)
        self.assertEqual(i.returncode, 0, i.stderr)
        self.assertIn("imported python:3.12-slim", i.stdout)
        # The seed policy as shipped: python:3.12-slim is the store's (no map entry, no pull).
        prog = os.path.join(WORK, "probe.py")
        with open(prog, "w") as f:
            f.write(self.PROBE)
        r = lsb("run", "--store", self.store, "--images", self.images, "--policy", SEED_POLICY, prog)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(MARK, r.stdout)
        # container.build on it: a run step, then a run of the built environment.
        step = '\n  build:\n    run: ["echo built-offline > /usr/local/marker.txt"]'
        policy = self.policy_on("python:3.12-slim", step)
        b = lsb("image", "build", "--store", self.store, "--images", self.images, policy)
        self.assertEqual(b.returncode, 0, b.stdout + b.stderr)
        r = self.run_policy(policy, "print(open('/usr/local/marker.txt').read().strip())\n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("built-offline", r.stdout)

    def test_a_layout_naming_its_image_by_a_tag_only_needs_name(self):
        layer = os.path.join(WORK, "small.tar")
        hostile_tar(layer, [({"name": "etc", "type": tarfile.DIRTYPE, "mode": 0o755}, None)])
        layout = os.path.join(WORK, f"layout-{os.urandom(3).hex()}")
        oci_layout(layout, layer, "3.12-slim")
        i = lsb("image", "import", "--store", self.store, layout)
        self.assertEqual(i.returncode, 2, i.stdout + i.stderr)  # a usage error: --name fixes it
        self.assertIn("only by the tag '3.12-slim'", i.stderr)
        self.assertIn("--name", i.stderr)
        i = lsb("image", "import", "--store", self.store, "--name", "tiny/img:1", layout)
        self.assertEqual(i.returncode, 0, i.stderr)

    def create_tar(self, members):
        path = os.path.join(WORK, f"hostile-{os.urandom(3).hex()}.tar")
        hostile_tar(path, members)
        return lsb("image", "create", "--store", self.store, "--name", "hostile/x:1", path)

    def assert_refused(self, r, *words):
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for w in words:
            self.assertIn(w, r.stderr)
        ls = lsb("image", "ls", "--store", self.store, "--json")
        self.assertEqual(json.loads(ls.stdout), [], "a refused tarball left an image")

    def test_hostile_tarballs_are_refused_by_the_stores_unpacker(self):
        d = {"type": tarfile.DIRTYPE, "mode": 0o755}
        self.assert_refused(self.create_tar([({"name": "../evil"}, b"x")]), "'..' is refused")
        self.assert_refused(self.create_tar([({"name": "/etc/evil"}, b"x")]), "absolute paths are refused")
        # A symlink to an absolute path, then a file written through it: never followed on the host.
        self.assert_refused(self.create_tar([({"name": "etc", **d}, None),
                                             ({"name": "etc/link", "type": tarfile.SYMTYPE, "linkname": "/tmp"}, None),
                                             ({"name": "etc/link/owned"}, b"x")]), "etc/link")
        self.assertFalse(os.path.exists("/tmp/owned"))
        # A huge entry: a header claiming 1 TiB with a few bytes behind it.
        path = os.path.join(WORK, "huge.tar")
        info = tarfile.TarInfo("big")
        info.size = 1 << 40
        with open(path, "wb") as f:
            f.write(info.tobuf(tarfile.GNU_FORMAT) + b"\0" * 4096)
        self.assert_refused(lsb("image", "create", "--store", self.store, "--name", "hostile/x:1", path))

    def test_device_nodes_are_left_out(self):
        d = {"type": tarfile.DIRTYPE, "mode": 0o755}
        r = self.create_tar([({"name": "dev", **d}, None),
                             ({"name": "dev/sda", "type": tarfile.BLKTYPE, "devmajor": 8, "devminor": 0}, None),
                             ({"name": "dev/mem", "type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 1}, None),
                             ({"name": "etc", **d}, None), ({"name": "etc/ok", "mode": 0o4755}, b"fine\n")])
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(lsb("image", "inspect", "--store", self.store, "--json", "hostile/x:1").stdout)
        layer = info["layers"][0]["dir"]
        self.assertEqual(os.listdir(os.path.join(layer, "dev")), [])
        self.assertEqual(os.stat(os.path.join(layer, "etc/ok")).st_mode & 0o7000, 0, "setuid kept")

    def test_bad_usage(self):
        r = lsb("image", "create", "--store", self.store, ROOTFS)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--name REF", r.stderr)
        r = lsb("image", "create", "--store", self.store, "--name", "x:1", os.path.join(WORK, "missing"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing", r.stderr)
        r = lsb("image", "create", "--store", self.store, "--name", "x:1", "--env", "NOEQUALS", ROOTFS)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
