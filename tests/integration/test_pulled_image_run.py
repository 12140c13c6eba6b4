"""A pulled image runs natively end to end, with no Docker engine (issue 18, first "Must show").

A REAL registry (Debian's docker-registry) on loopback gets a test image built here from files:
the host's python3 binary, its shared libraries and its standard library copied into one layer,
with an /etc/os-release and a stdlib module (lsb_pulled_image) the host does not have. It is
pushed with skopeo as 127.0.0.1:PORT/python:3.12-slim. Then:
  - `llm-sandbox image pull REF --store DIR` and `llm-sandbox run` with the seed policy naming
    REF: the program reads the image's /etc/os-release and imports the image's module;
  - `llm-sandbox serve` with a policy naming an image not yet stored and `container.pull:
    missing`: the first executes pull it (once, however many ask at once: the registry's blob
    GETs are counted by a proxy in front of it), image_pull events show the pull, GET /v1/images
    lists it, and a later execute does not contact the registry; `container.pull: never` is a
    clear error naming the image and `llm-sandbox image pull`.
Every process gets DOCKER_HOST pointing at a socket that does not exist: no engine is used.

Run by its own CTest entry (integration_pulled_image, LSB_PULLED_IMAGE_SUITE=1); needs root (the
native backend's boxes) and docker-registry + skopeo.
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import daemon_harness as dh  # noqa: E402
import registry_harness as rh  # noqa: E402
from harness import BINARY, SEED_POLICY  # noqa: E402

HOST_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
OS_RELEASE = b'PRETTY_NAME="LSB Pulled Test Image 7 (registry)"\nID=lsb-pulled-test\nVERSION_ID="7"\n'
MARKER_MODULE = "lsb_pulled_image"
HOST_PYTHON = "/usr/bin/python3"  # the system's, what the seed policy allows (not a pyenv shim)
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/lsb-no-docker.sock"}
PROGRAM = ("import os, sys\n"
           "print(open('/etc/os-release').read())\n"
           f"import {MARKER_MODULE}\n"
           f"print('marker:', {MARKER_MODULE}.WHERE)\n"
           "print('bash here:', os.path.exists('/usr/bin/bash'))\n")


def setUpModule():
    if os.environ.get("LSB_PULLED_IMAGE_SUITE") != "1":
        raise unittest.SkipTest("run by the integration_pulled_image CTest entry (LSB_PULLED_IMAGE_SUITE=1)")
    if os.geteuid() != 0:
        raise unittest.SkipTest("the native backend's boxes need root here")
    rh.require_tools()
    if not os.access(HOST_PYTHON, os.X_OK):
        raise unittest.SkipTest(f"{HOST_PYTHON} is missing: the test image is made of the host's python")
    global WORK, REG, EMPTY_MAP
    WORK = tempfile.mkdtemp(prefix="lsb-pulled-run-")
    os.chmod(WORK, 0o755)  # the boxes' own uids read the stores' layers below it (docs/images.md)
    REG = rh.Registry(os.path.join(WORK, "storage"), workdir=WORK)
    layout = os.path.join(WORK, "layout")
    write_python_image(layout)
    # The same image under the names the tests pull, each not yet in any store.
    for name in ("python:3.12-slim", "lsb/daemon-python:1", "lsb/never-pulled:1"):
        rh.skopeo_push(f"{layout}:img", f"{REG.host}/{name}")
    EMPTY_MAP = os.path.join(WORK, "images.yaml")
    with open(EMPTY_MAP, "w") as f:
        f.write("images: {}\n")  # nothing mapped: every image comes from the store


def tearDownModule():
    REG.stop()
    shutil.rmtree(WORK, True)


def _add_host_file(t, path, arcname=None):
    """Adds `path` (a file or symlink) at its own path, and the symlink's target too."""
    arcname = arcname or path.lstrip("/")
    info = t.gettarinfo(path, arcname)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if info.isreg():
        with open(path, "rb") as f:
            t.addfile(info, f)
    else:
        t.addfile(info)


def _dir(t, name, mode=0o755):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    t.addfile(info)


def _symlink(t, name, target):
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    t.addfile(info)


def _data(t, name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    t.addfile(info, io.BytesIO(data))


SKIP_STDLIB = {"test", "idlelib", "tkinter", "lib2to3", "ensurepip", "pydoc_data", "turtledemo",
               "site-packages", "dist-packages"}


def python_layer():
    """One tar layer: the host's python3 as /usr/bin/python3, its libraries, its stdlib (without
    tests, GUI and build files), merged-/usr links, and the image's own os-release and module."""
    exe = os.path.realpath(HOST_PYTHON)
    stdlib = subprocess.run([HOST_PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()  # /usr/lib/python3.11
    libs = []
    for line in subprocess.run(["ldd", exe], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            libs.append(path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d in ("usr", "usr/bin", "usr/lib", "usr/lib64", "etc", "tmp"):
            _dir(t, d, 0o1777 if d == "tmp" else 0o755)
        for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
            _symlink(t, link, target)
        _add_host_file(t, exe, "usr/bin/python3")
        seen = set()
        for lib in libs:
            for p in (lib, os.path.realpath(lib)):
                # Below /usr (merged /usr): /lib/x86_64-linux-gnu/libc.so.6 -> usr/lib/...
                real_dir = os.path.realpath(os.path.dirname(p))
                arc = os.path.join(real_dir, os.path.basename(p)).lstrip("/")
                if arc in seen:
                    continue
                for i in range(1, arc.count("/") + 1):
                    parent = "/".join(arc.split("/")[:i])
                    if parent not in seen and parent not in ("usr", "usr/lib", "usr/lib64"):
                        seen.add(parent)
                        _dir(t, parent)
                seen.add(arc)
                _add_host_file(t, p, arc)

        def keep(info):
            rel = info.name[len(stdlib.lstrip("/")) + 1:].split("/")
            if rel and (rel[0] in SKIP_STDLIB or rel[0].startswith("config-")):
                return None
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            return info

        t.add(stdlib, arcname=stdlib.lstrip("/"), filter=keep)
        _data(t, stdlib.lstrip("/") + f"/{MARKER_MODULE}.py", b'WHERE = "the pulled image"\n')
        _data(t, "etc/os-release", OS_RELEASE)
    return buf.getvalue()


def write_python_image(layout):
    """An OCI layout with one image, tagged `img`, whose one layer is python_layer()."""
    import gzip
    w = rh.OciWriter(layout)
    tar = python_layer()
    gz = gzip.compress(tar, compresslevel=1, mtime=0)
    layer = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": w.blob(gz), "size": len(gz)}
    config = json.dumps({"architecture": HOST_ARCH, "os": "linux",
                         "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "WorkingDir": "/"},
                         "rootfs": {"type": "layers", "diff_ids": [rh.sha256(tar)]}}).encode()
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": w.blob(config), "size": len(config)},
                           "layers": [layer]}).encode()
    w.tag({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": w.blob(manifest),
           "size": len(manifest)}, "img")


def policy_text(name, image, pull):
    """The seed policy, renamed, naming `image` with container.pull `pull`."""
    with open(SEED_POLICY) as f:
        text = f.read()
    assert "image: python:3.12-slim" in text and "name: code-sandbox" in text
    text = text.replace("name: code-sandbox", f"name: {name}")
    return text.replace("image: python:3.12-slim", f"image: {image}\n  pull: {pull}")


def env(**extra):
    e = dict(os.environ, DOCKER_CONFIG=os.path.join(WORK, "no-docker-config"), **NO_ENGINE)
    e.pop("LLM_SANDBOX_IMAGE_STORE", None)
    e.update(extra)
    return e


def new_store_dir():
    """A path for a store the command creates (mode 0755, as a store's directories are)."""
    return os.path.join(WORK, f"store-{os.urandom(4).hex()}")


def host_pretty_name():
    with open("/etc/os-release") as f:
        for line in f:
            if line.startswith("PRETTY_NAME="):
                return line.strip()
    return ""


class PulledImageRunsWithTheSeedPolicy(unittest.TestCase):
    def test_image_pull_then_run_sees_the_images_os_release_and_python_not_the_hosts(self):
        ref = f"{REG.host}/python:3.12-slim"
        store = new_store_dir()
        p = subprocess.run([BINARY, "image", "pull", ref, "--store", store, "--quiet"], capture_output=True,
                           text=True, timeout=300, env=env())
        self.assertEqual(p.returncode, 0, p.stderr)
        # Pulled again into the same store: the manifest is fetched, the blobs the store has are not.
        again = subprocess.run([BINARY, "image", "pull", ref, "--store", store], capture_output=True, text=True,
                               timeout=300, env=env())
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("0 B downloaded", again.stdout)
        policy = os.path.join(WORK, "seed-pulled.yaml")
        with open(policy, "w") as f:
            f.write(policy_text("code-sandbox", ref, "never"))  # never: the run may not pull, only use
        prog = os.path.join(WORK, "os_release.py")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        r = subprocess.run([BINARY, "run", "--backend", "native", "--policy", policy, "--images", EMPTY_MAP,
                            "--store", store, prog], capture_output=True, text=True, timeout=120, env=env())
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout!r}\nstderr={r.stderr!r}")
        self.assertIn("LSB Pulled Test Image 7", r.stdout)
        self.assertNotIn(host_pretty_name(), r.stdout)
        self.assertIn("marker: the pulled image", r.stdout)   # the image's python stdlib
        self.assertIn("bash here: False", r.stdout)             # the host's /usr/bin is not there
        # The host's python has no such module: what ran was the image's.
        host = subprocess.run([HOST_PYTHON, "-c", f"import {MARKER_MODULE}"], capture_output=True, timeout=30)
        self.assertNotEqual(host.returncode, 0)

    def test_run_without_the_image_and_pull_never_names_the_image_and_image_pull(self):
        ref = f"{REG.host}/lsb/never-pulled:1"
        store = new_store_dir()
        policy = os.path.join(WORK, "seed-never.yaml")
        with open(policy, "w") as f:
            f.write(policy_text("code-sandbox", ref, "never"))
        r = subprocess.run([BINARY, "run", "--backend", "native", "--policy", policy, "--images", EMPTY_MAP,
                            "--store", store, "-"], input="print(1)\n", capture_output=True, text=True,
                           timeout=120, env=env())
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(ref, r.stderr)
        self.assertIn("llm-sandbox image pull", r.stderr)
        self.assertIn("container.pull: never", r.stderr)


class EventReader:
    """GET /v1/events?types=image_pull in a thread: the (type, data) pairs as they arrive."""

    def __init__(self, base):
        self.events = []
        self.resp = urllib.request.urlopen(base + "/v1/events?types=image_pull", timeout=300)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        kind = None
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind:
                    self.events.append((kind, json.loads(line[6:])))
                    kind = None
        except (OSError, ValueError, AttributeError):  # AttributeError: closed under the reader
            pass

    def close(self):
        try:
            self.resp.close()
        except OSError:
            pass


class DaemonPullsOnFirstUse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proxy = rh.Proxy(REG.host)  # counts every request the daemon makes to the registry
        cls.addClassCleanup(cls.proxy.stop)
        cls.ref = f"{cls.proxy.host}/lsb/daemon-python:1"
        cls.never_ref = f"{cls.proxy.host}/lsb/never-pulled:1"
        pdir = tempfile.mkdtemp(prefix="policies-", dir=WORK)
        with open(os.path.join(pdir, "pulled.yaml"), "w") as f:
            f.write(policy_text("pulled", cls.ref, "missing"))
        with open(os.path.join(pdir, "never.yaml"), "w") as f:
            f.write(policy_text("never", cls.never_ref, "never"))
        cls.store = new_store_dir()
        cls.daemon = dh.Daemon("--backend", "native", "--store", cls.store, "--images", EMPTY_MAP,
                               "--pool-size", "0", "--default-policy", "pulled", "--monitoring", "on",
                               "--audit-log", "none", policies=pdir, env=env())
        cls.addClassCleanup(cls.daemon.close)

    def execute(self, policy, code):
        return dh.request(self.daemon.base, "POST", "/v1/execute",
                          {"policy": policy, "language": "python", "code": code}, timeout=300)

    def test_first_executes_pull_once_with_events_later_ones_do_not_and_images_lists_it(self):
        events = EventReader(self.daemon.base)
        self.addCleanup(events.close)
        time.sleep(0.3)  # subscribed before the pull starts
        results = [None, None, None]

        def run(i):
            results[i] = self.execute("pulled", "print(open('/etc/os-release').read())")

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        start = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        pull_seconds = time.time() - start
        for r in results:
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["status"], "ok", r.body)
            self.assertIn("LSB Pulled Test Image 7", r.json()["stdout"])
        # One download however many asked at once: each blob GET reached the registry once.
        blob_gets = [q["path"] for q in self.proxy.blob_requests() if q["method"] == "GET"]
        self.assertEqual(len(blob_gets), 2, blob_gets)  # the config and the one layer
        self.assertEqual(len(set(blob_gets)), len(blob_gets), blob_gets)

        deadline = time.time() + 10
        while time.time() < deadline and not any(d["state"] == "done" for _, d in events.events):
            time.sleep(0.05)
        mine = [d for k, d in events.events if k == "image_pull" and d["reference"] == self.ref]
        states = [d["state"] for d in mine]
        self.assertEqual(states.count("started"), 1, states)
        self.assertEqual(states[0], "started", states)
        self.assertEqual(states[-1], "done", states)
        done = mine[-1]
        self.assertEqual(len(done["layers"]), 1, done)
        self.assertEqual(done["layers"][0]["done"], done["layers"][0]["total"], done)
        self.assertGreater(done["bytes_total"], 1 << 20, done)
        self.assertEqual(done["bytes_done"], done["bytes_total"], done)
        self.assertTrue(done["digest"].startswith("sha256:"), done)
        # Throttled: at most one progress event per 500 ms of the pull, plus the start and the end.
        self.assertLessEqual(states.count("progress"), int(pull_seconds / 0.5) + 2, states)

        # Stored now: the next execute does not contact the registry at all.
        before = len(self.proxy.requests)
        r = self.execute("pulled", "print(2)")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["stdout"], "2\n", r.body)
        self.assertEqual(len(self.proxy.requests), before, self.proxy.requests[before:])
        self.assertEqual([d["state"] for k, d in events.events if d["reference"] == self.ref].count("started"), 1)

        listed = dh.request(self.daemon.base, "GET", "/v1/images")
        self.assertEqual(listed.status, 200, listed.body)
        dh.OpenApi().check("GET", "/v1/images", 200, listed.json())
        entry = [i for i in listed.json()["images"] if i["reference"] == self.ref]
        self.assertEqual(len(entry), 1, listed.body)
        self.assertEqual(entry[0]["digest"], done["digest"])
        self.assertEqual(entry[0]["layers"], 1)
        self.assertEqual(entry[0]["platform"], f"linux/{HOST_ARCH}")
        self.assertGreater(entry[0]["size"], 1 << 20)

    def test_pull_never_with_the_image_missing_is_a_clear_error_naming_it_and_image_pull(self):
        r = self.execute("never", "print(1)")
        self.assertGreaterEqual(r.status, 400, r.body)
        message = r.json()["error"]["message"]
        self.assertIn(self.never_ref, message)
        self.assertIn("llm-sandbox image pull", message)
        self.assertIn("container.pull: never", message)
        self.assertFalse([q for q in self.proxy.requests if "never-pulled" in q["path"]], self.proxy.requests)


if __name__ == "__main__":
    unittest.main()


class DefaultPathsInTheOrderANewUserTakesThem(unittest.TestCase):
    """serve, then `image pull`, then a native run, on the default paths from an empty state
    directory (issue 32, class 7): serve's audit log used to create the state directory 0750,
    so the boxes' unprivileged uids could not reach the store's layers below it."""

    def setUp(self):
        base = tempfile.mkdtemp(prefix="default-paths-", dir=WORK)
        os.chmod(base, 0o755)  # stands for /var/lib: searchable by everyone
        self.state = os.path.join(base, "llm-sandbox")  # not created yet: serve makes it
        self.env = env(LLM_SANDBOX_STATE_DIR=self.state)
        self.env.pop("LLM_SANDBOX_AUDIT_LOG", None)
        self.ref = f"{REG.host}/python:3.12-slim"
        self.policy = os.path.join(base, "seed-pulled.yaml")
        with open(self.policy, "w") as f:
            f.write(policy_text("code-sandbox", self.ref, "never"))
        self.prog = os.path.join(base, "os_release.py")
        with open(self.prog, "w") as f:
            f.write(PROGRAM)

    def pull_and_run(self):
        p = subprocess.run([BINARY, "image", "pull", self.ref, "--quiet"], capture_output=True, text=True,
                           timeout=300, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.state, "images")), "the pull used the default store")
        return subprocess.run([BINARY, "run", "--backend", "native", "--policy", self.policy, "--images", EMPTY_MAP,
                               self.prog], capture_output=True, text=True, timeout=120, env=self.env)

    def test_serve_then_pull_then_run_on_the_default_paths(self):
        d = dh.Daemon("--backend", "native", "--images", EMPTY_MAP, "--pool-size", "0", env=self.env)
        try:
            self.assertTrue(os.path.exists(os.path.join(self.state, "daemons", f"127.0.0.1_{d.port}", "audit.jsonl")),
                            "serve wrote its audit log there")
        finally:
            d.close()
        mode = os.stat(self.state).st_mode & 0o777
        self.assertEqual(mode & 0o001, 0o001, f"the state directory is {oct(mode)}: others cannot search it")
        self.assertEqual(mode & 0o004, 0, f"the state directory is {oct(mode)}: others can list it")
        r = self.pull_and_run()
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout!r}\nstderr={r.stderr!r}")
        self.assertIn("marker: the pulled image", r.stdout)

    def test_a_state_directory_an_older_version_made_0750_is_made_searchable(self):
        os.mkdir(self.state, 0o750)
        os.chmod(self.state, 0o750)
        r = self.pull_and_run()
        self.assertEqual(r.returncode, 0, f"stdout={r.stdout!r}\nstderr={r.stderr!r}")
        self.assertEqual(os.stat(self.state).st_mode & 0o777, 0o751)

    def test_a_store_below_a_directory_boxes_cannot_search_names_it_and_the_fix(self):
        store = os.path.join(self.state, "private", "images")
        os.makedirs(store)
        os.chmod(os.path.join(self.state, "private"), 0o700)
        p = subprocess.run([BINARY, "image", "pull", self.ref, "--quiet", "--store", store], capture_output=True,
                           text=True, timeout=300, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = subprocess.run([BINARY, "run", "--backend", "native", "--policy", self.policy, "--images", EMPTY_MAP,
                            "--store", store, self.prog], capture_output=True, text=True, timeout=120, env=self.env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("chmod o+x " + os.path.join(self.state, "private"), r.stderr)
