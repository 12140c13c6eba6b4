"""A test image made from the host's own files, imported into a temporary image store, for the
adversarial suite's `native-image` backend and the image-root benchmark (issue 18).

It is laid out as the official Python images are (python:3.12-slim): a Debian base layer (sh, bash,
su, the C library, /etc) and a Python layer above it with the interpreter at
/usr/local/bin/python3 -> python3.11 and its standard library in /usr/local/lib/python3.11 (the
host's /usr/lib/python3.11, compiled .pyc files included, mtimes kept). /usr/bin/python3 is a
symlink into /usr/local/bin, so the cases' `/usr/bin/python3` and the image's own path both work
(and /usr/lib/python3.11 one to the stdlib: the host's python was built for prefix /usr).
The layers are written as an OCI image layout (tar+gzip, no Docker involved) and imported with
`llm-sandbox image import` into a temp store, so the box's root is the store's unpacked layers,
read-only overlayfs, as for a pulled image. Built once per process (about 10 s), removed by
cleanup().
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

IMAGE = "lsb-adversarial/python:3.11-image"
OS_MARK = "LSB_ADVERSARIAL_IMAGE=1"
HOST_PYTHON = "/usr/bin/python3.11"
HOST_STDLIB = "/usr/lib/python3.11"
# What the cases exec or look for, besides python: the shells the policy denies, a setuid binary,
# and what ldd finds for them and for the stdlib's extension modules (ctypes, ssl, ...).
BASE_PROGRAMS = ["/usr/bin/dash", "/usr/bin/bash", "/usr/bin/su", "/usr/bin/id", "/usr/bin/true"]
SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data"}
ENV = ["PATH=/usr/local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "LANG=C.UTF-8", "PYTHON_VERSION=3.11"]

_state = {}


def unavailable():
    for p in [HOST_PYTHON, HOST_STDLIB + "/os.py"] + BASE_PROGRAMS:
        if not os.path.exists(p):
            return f"{p} is missing on this host (the test image is made from the host's files)"
    if not shutil.which("ldd"):
        return "ldd is missing (the test image's libraries are found with it)"
    return None


class _Layer:
    """A layer's tar, built in memory: directories first as they are needed, files with their mode
    and mtime, symlinks as they are."""

    def __init__(self):
        self.buf = io.BytesIO()
        self.tar = tarfile.open(fileobj=self.buf, mode="w", format=tarfile.PAX_FORMAT)
        self.names = set()

    def _dirs(self, name):
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.names:
                self.dir(d)

    def dir(self, name, mode=0o755):
        if name in self.names:
            return
        self._dirs(name)
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 1700000000
        self.tar.addfile(info)
        self.names.add(name)

    def file(self, name, data=None, src=None, mode=0o644):
        if name in self.names:
            return
        self._dirs(name)
        info = tarfile.TarInfo(name)
        if src:
            st = os.stat(src)
            info.size, info.mode, info.mtime = st.st_size, st.st_mode & 0o7777, int(st.st_mtime)
            with open(src, "rb") as f:
                self.tar.addfile(info, f)
        else:
            info.size, info.mode, info.mtime = len(data), mode, 1700000000
            self.tar.addfile(info, io.BytesIO(data))
        self.names.add(name)

    def symlink(self, name, target):
        if name in self.names:
            return
        self._dirs(name)
        info = tarfile.TarInfo(name)
        info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, 1700000000
        self.tar.addfile(info)
        self.names.add(name)

    def host_path(self, path):
        """`path` of the host, with every symlink on the way (a usr-merged /lib64 becomes usr/lib64)."""
        real_dir = os.path.realpath(os.path.dirname(path))
        p = os.path.join(real_dir, os.path.basename(path))
        if os.path.islink(p):
            target = os.readlink(p)
            self.symlink(p.lstrip("/"), target)
            self.host_path(os.path.join(real_dir, target) if not target.startswith("/") else target)
        elif os.path.isfile(p):
            self.file(p.lstrip("/"), src=p)

    def finish(self):
        self.tar.close()
        return self.buf.getvalue()


def _libraries(binaries):
    libs = set()
    for b in binaries:
        out = subprocess.run(["ldd", b], capture_output=True, text=True, timeout=60).stdout
        for line in out.splitlines():
            parts = line.split()
            for p in parts:
                if p.startswith("/") and os.path.exists(p):
                    libs.add(p)
    return sorted(libs)


def _base_layer(ext_modules):
    layer = _Layer()
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        layer.symlink(link, target)
    for d in ("usr/bin", "usr/sbin", "usr/lib64", "usr/lib/x86_64-linux-gnu", "usr/local/bin", "usr/local/lib",
              "etc", "root", "home", "srv", "opt", "mnt", "media", "var/tmp", "var/lib", "run"):
        layer.dir(d)
    for d, mode in (("tmp", 0o1777), ("proc", 0o555), ("sys", 0o555), ("dev", 0o755)):
        layer.dir(d, mode)
    for p in BASE_PROGRAMS + ["/usr/bin/sh"]:
        layer.host_path(p)
    for lib in _libraries(BASE_PROGRAMS + [HOST_PYTHON] + ext_modules):
        layer.host_path(lib)
    with open("/usr/lib/os-release") as f:
        os_release = f.read()
    layer.file("usr/lib/os-release", (os_release + OS_MARK + "\n").encode())
    layer.symlink("etc/os-release", "../usr/lib/os-release")
    # A Debian image's accounts: no entry for the box's uid (the runtime adds it, init/image_etc.h),
    # and the files a container runtime lays over (hostname, hosts, resolv.conf), empty here.
    layer.file("etc/passwd", b"root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    layer.file("etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    for name in ("hostname", "hosts", "resolv.conf"):
        layer.file("etc/" + name, b"")
    for p in ("/etc/nsswitch.conf", "/usr/lib/ssl/cert.pem", "/usr/lib/ssl/openssl.cnf"):
        if os.path.exists(p):
            layer.host_path(p)  # the CA bundle (ca-certificates) and openssl.cnf, through their symlinks
    return layer.finish()


def _python_layer():
    layer = _Layer()
    layer.file("usr/local/bin/python3.11", src=HOST_PYTHON)
    layer.symlink("usr/local/bin/python3", "python3.11")
    layer.symlink("usr/local/bin/python", "python3")
    layer.symlink("usr/bin/python3", "../local/bin/python3")
    # The host's python was built for prefix /usr, the official images' for /usr/local: where it
    # cannot locate itself (argv[0] "x" through /proc/self/exe) it falls back to its built-in prefix.
    layer.symlink("usr/lib/python3.11", "../local/lib/python3.11")
    dest = "usr/local/lib/python3.11"
    for root, dirs, files in os.walk(HOST_STDLIB):
        rel = os.path.relpath(root, HOST_STDLIB)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in SKIP_STDLIB and d != "site-packages" and d != "dist-packages"]
        dirs.sort()
        name = dest if rel == "." else f"{dest}/{rel}"
        layer.dir(name)
        for f in sorted(files):
            src = os.path.join(root, f)
            if os.path.islink(src):
                layer.symlink(f"{name}/{f}", os.readlink(src))
            elif os.path.isfile(src):
                layer.file(f"{name}/{f}", src=src)
    return layer.finish()


def _write_layout(path, tars):
    os.makedirs(os.path.join(path, "blobs", "sha256"))

    def blob(data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        with open(os.path.join(path, "blobs", "sha256", d[7:]), "wb") as f:
            f.write(data)
        return {"digest": d, "size": len(data)}

    layers, diff_ids = [], []
    for t in tars:
        diff_ids.append("sha256:" + hashlib.sha256(t).hexdigest())
        layers.append(dict(blob(gzip.compress(t, compresslevel=1, mtime=0)),
                           mediaType="application/vnd.oci.image.layer.v1.tar+gzip"))
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    config = {"architecture": arch, "os": "linux", "created": "2026-01-01T00:00:00Z",
              "config": {"Env": ENV, "Cmd": ["python3"]}, "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    cfg = dict(blob(json.dumps(config).encode()), mediaType="application/vnd.oci.image.config.v1+json")
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": cfg, "layers": layers}).encode()
    m = dict(blob(manifest), mediaType="application/vnd.oci.image.manifest.v1+json",
             annotations={"org.opencontainers.image.ref.name": "3.11-image"})
    with open(os.path.join(path, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [m]}, f)
    with open(os.path.join(path, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')


def prepare(binary):
    """Builds and imports the image (once); returns {store, images (an image map file), layers,
    seconds} or raises RuntimeError with the reason."""
    if "fixture" in _state:
        return _state["fixture"]
    import time
    t = time.monotonic()
    top = tempfile.mkdtemp(prefix="lsb-adv-image-")
    # The box's init opens the layers as the box's unprivileged user: the path must be searchable.
    os.chmod(top, 0o755)
    _state["top"] = top
    ext = [os.path.join(HOST_STDLIB, "lib-dynload", n) for n in os.listdir(os.path.join(HOST_STDLIB, "lib-dynload"))
           if n.endswith(".so")]
    layout = os.path.join(top, "layout")
    _write_layout(layout, [_base_layer(ext), _python_layer()])
    store = os.path.join(top, "store")
    p = subprocess.run([binary, "image", "import", "--store", store, "--name", IMAGE, layout],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"image import of the test image failed: {p.stderr.strip()}")
    shutil.rmtree(layout, ignore_errors=True)
    info = json.loads(subprocess.run([binary, "image", "inspect", "--store", store, "--json", IMAGE],
                                     capture_output=True, text=True, timeout=120, check=True).stdout)
    layers = [l["dir"] for l in info["layers"]]
    # Until the native backend reads the store itself (`--store`), the image map names the store's
    # unpacked layers: the same mount code path as a stored image's (docs/policy.md).
    images = os.path.join(top, "images.yaml")
    with open(images, "w") as f:
        f.write("images:\n  \"%s\":\n    layers: [%s]\n    env: [%s]\n" % (
            IMAGE, ", ".join(json.dumps(d) for d in layers), ", ".join(json.dumps(e) for e in ENV)))
    _state["fixture"] = {"store": store, "images": images, "layers": layers, "seconds": time.monotonic() - t}
    return _state["fixture"]


def policy_text(seed_text):
    """The seed policy on the test image, also allowing the image's own /usr/local/bin/python3."""
    assert "image: python:3.12-slim" in seed_text
    text = seed_text.replace("image: python:3.12-slim", f'image: "{IMAGE}"')
    return text.replace('    - "/usr/bin/python3"\n', '    - "/usr/bin/python3"\n    - "/usr/local/bin/python3"\n', 1)


def cleanup():
    top = _state.pop("top", None)
    _state.pop("fixture", None)
    if top:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":  # python3 image_fixture.py BINARY: build it and print where it is
    fx = prepare(sys.argv[1])
    print(json.dumps(fx, indent=2))
