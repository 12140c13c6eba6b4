"""Environments built from the policy (issue 20): container.build on the native backend, no Docker.

The base image is the adversarial suite's test image made from the host's files
(tests/adversarial/image_fixture.py: a Debian base layer, the host's python3.11 and its stdlib)
plus a layer with Debian's pip, imported into a temp store. A wheel made here is served as a
PEP 503 simple index on 127.0.0.1 by a real HTTP server; the policy's build.pip_index_url names it
as pypi.test, pinned to 127.0.0.1 through the egress proxy's resolve option, and
build.network.allow lists it. Then:
  - `image build` runs the pip and run steps (the index is asked), `run` imports the package and
    reads the run step's file; a second `run` and `image build` find every step cached (their
    progress lines say so, and the index gets no request);
  - a changed run step rebuilds that step only (pip: cached, run: building);
  - a failing step's error names it, its exit code and its output;
  - attacks: a step reaching a host build.network.allow does not list (refused by the proxy), files
    sources leaving the policy dir by '..' (refused by the loader) or through a symlink (refused at
    build), and a step printing without end (bounded by build.output, the step fails);
  - `image ls` names the policy a derived image serves, `image inspect` its python and packages.
build.apt (AptBuild): a Debian base with apt (the debootstrap tree scripts/build-test-image.sh keeps,
imported as a one-layer OCI layout) and a local apt repository on loopback (apt_repo.py): the package
is installed by the apt step and read by the program; the second build is cached; a package name
with shell metacharacters is refused at load; an apt_sources archive build.network.allow does not
list is refused by the proxy and the step fails naming its output.
Own CTest entry (integration_environment_build, LSB_ENV_BUILD_SUITE=1); needs root (box uids).
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adversarial"))
import image_fixture as fx  # noqa: E402
import daemon_harness as dh  # noqa: E402
import apt_repo  # noqa: E402
from served_dir import ServedDir  # noqa: E402
from harness import BINARY, SEED_POLICY  # noqa: E402

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/lsb-no-docker.sock"}
HOST_PIP = "/usr/lib/python3/dist-packages/pip"
PROGRAM = ("import tinypkg\n"
           "print('tinypkg says', tinypkg.VALUE)\n"
           "print('marker', open('/usr/local/marker.txt').read().strip())\n")


def make_wheel(directory, name="tinypkg", version="1.0"):
    """A pure-Python wheel, written by hand (a zip with its dist-info), as pip installs it."""
    fname = f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{name}/__init__.py": b"VALUE = 'from the loopback index'\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: lsb-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for path, data in files.items():
        digest = hashlib.sha256(data).digest()
        import base64
        record += f"{path},sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},{len(data)}\n"
    record += f"{name}-{version}.dist-info/RECORD,,\n"
    files[f"{name}-{version}.dist-info/RECORD"] = record.encode()
    path = os.path.join(directory, fname)
    with zipfile.ZipFile(path, "w") as z:
        for p, data in files.items():
            z.writestr(p, data)
    with open(path, "rb") as f:
        return fname, hashlib.sha256(f.read()).hexdigest()


class Index(ServedDir):
    """A PEP 503 simple index on 127.0.0.1:0 serving one wheel; counts the requests it gets."""

    def __init__(self, root):
        os.makedirs(os.path.join(root, "simple", "tinypkg"))
        os.makedirs(os.path.join(root, "packages"))
        wheel, sha = make_wheel(os.path.join(root, "packages"))
        with open(os.path.join(root, "simple", "tinypkg", "index.html"), "w") as f:
            f.write(f'<html><body><a href="../../packages/{wheel}#sha256={sha}">{wheel}</a></body></html>\n')
        with open(os.path.join(root, "simple", "index.html"), "w") as f:
            f.write('<html><body><a href="tinypkg/">tinypkg</a></body></html>\n')
        super().__init__(root)


def _pip_layer():
    layer = fx._Layer()
    dest = "usr/local/lib/python3.11/dist-packages/pip"
    layer.dir("usr/local/lib/python3.11/dist-packages")
    for root, dirs, files in os.walk(HOST_PIP):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(root, HOST_PIP)
        name = dest if rel == "." else f"{dest}/{rel}"
        layer.dir(name)
        for f in sorted(files):
            src = os.path.join(root, f)
            if os.path.isfile(src) and not os.path.islink(src):
                layer.file(f"{name}/{f}", src=src)
    return layer.finish()


def setUpModule():
    if os.environ.get("LSB_ENV_BUILD_SUITE") != "1":
        raise unittest.SkipTest("run by the integration_environment_build CTest entry (LSB_ENV_BUILD_SUITE=1)")
    if os.geteuid() != 0:
        raise unittest.SkipTest("the native backend's boxes need root here")
    why = fx.unavailable()
    if why:
        raise unittest.SkipTest(why)
    if not os.path.isdir(HOST_PIP):
        raise unittest.SkipTest(f"{HOST_PIP} is missing (Debian's python3-pip makes the test image's pip)")
    global WORK, STORE, INDEX
    WORK = tempfile.mkdtemp(prefix="lsb-env-build-")
    os.chmod(WORK, 0o755)
    ext = [os.path.join(fx.HOST_STDLIB, "lib-dynload", n) for n in os.listdir(os.path.join(fx.HOST_STDLIB, "lib-dynload"))
           if n.endswith(".so")]
    layout = os.path.join(WORK, "layout")
    fx._write_layout(layout, [fx._base_layer(ext), fx._python_layer(), _pip_layer()])
    STORE = os.path.join(WORK, "store")
    p = subprocess.run([BINARY, "image", "import", "--store", STORE, "--name", fx.IMAGE, layout],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("import of the test image failed: " + p.stderr)
    shutil.rmtree(layout, ignore_errors=True)
    INDEX = Index(os.path.join(WORK, "index"))


def tearDownModule():
    INDEX.stop()
    shutil.rmtree(WORK, True)


DEBIAN_IMAGE = "lsb-apt-test/debian:bookworm-minbase"


def import_debian_image():
    """The debootstrap tree (apt, dpkg, python3) as a one-layer OCI layout, imported into STORE; made
    by scripts/build-test-image.sh (LSB_TARBALL_ONLY=1: debootstrap only, no Docker) when missing.
    Returns None, or why it cannot be had."""
    if not os.path.isfile(apt_repo.DEBIAN_TARBALL):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "build-test-image.sh")
        p = subprocess.run([script], env=dict(os.environ, LSB_TARBALL_ONLY="1"), capture_output=True, text=True, timeout=900)
        if p.returncode != 0 or not os.path.isfile(apt_repo.DEBIAN_TARBALL):
            return "no Debian tree with apt: scripts/build-test-image.sh failed: " + p.stderr[-500:]
    layout = os.path.join(WORK, "debian-layout")
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    h = hashlib.sha256()
    with open(apt_repo.DEBIAN_TARBALL, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    diff_id = "sha256:" + h.hexdigest()
    shutil.copyfile(apt_repo.DEBIAN_TARBALL, os.path.join(layout, "blobs", "sha256", diff_id[7:]))

    def blob(data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        with open(os.path.join(layout, "blobs", "sha256", d[7:]), "wb") as f:
            f.write(data)
        return {"digest": d, "size": len(data)}

    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    config = {"architecture": arch, "os": "linux", "created": "2026-01-01T00:00:00Z",
              "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], "Cmd": ["python3"]},
              "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
    cfg = dict(blob(json.dumps(config).encode()), mediaType="application/vnd.oci.image.config.v1+json")
    layer = {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": diff_id,
             "size": os.path.getsize(apt_repo.DEBIAN_TARBALL)}
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": cfg, "layers": [layer]}).encode()
    m = dict(blob(manifest), mediaType="application/vnd.oci.image.manifest.v1+json",
             annotations={"org.opencontainers.image.ref.name": "bookworm-minbase"})
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [m]}, f)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    p = subprocess.run([BINARY, "image", "import", "--store", STORE, "--name", DEBIAN_IMAGE, layout],
                       capture_output=True, text=True, timeout=600)
    shutil.rmtree(layout, ignore_errors=True)
    return None if p.returncode == 0 else "import of the Debian image failed: " + p.stderr


def write_policy(name, build_yaml, files=None, image=None):
    """A policy NAME in a directory of its own (files: {relative path: bytes or ('link', target)})."""
    d = tempfile.mkdtemp(prefix="policy-", dir=WORK)
    with open(SEED_POLICY) as f:
        text = fx.policy_text(f.read())
    text = text.replace("name: code-sandbox", f"name: {name}")
    text = text.replace(f'image: "{fx.IMAGE}"', f'image: "{image or fx.IMAGE}"\n  pull: never\n  build:\n' +
                        "".join("    " + line + "\n" for line in build_yaml.strip("\n").split("\n")))
    for rel, content in (files or {}).items():
        path = os.path.join(d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(content, tuple):
            os.symlink(content[1], path)
        else:
            with open(path, "wb") as f:
                f.write(content)
    path = os.path.join(d, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def pip_build(run_steps, extra="", req="tinypkg==1.0"):
    return (f'pip_index_url: "http://pypi.test:{INDEX.port}/simple"\n'
            f'pip: ["{req}"]\n'
            "run:\n" + "".join(f"  - {json.dumps(r)}\n" for r in run_steps) +
            f'network:\n  allow: ["pypi.test", "127.0.0.1:{INDEX.port}"]\n' + extra)


def lsb(*args, timeout=600):
    env = dict(os.environ, **NO_ENGINE)
    env.pop("LLM_SANDBOX_IMAGE_STORE", None)
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, env=env)


def build(policy):
    return lsb("image", "build", "--store", STORE, "--egress-resolve", "pypi.test:127.0.0.1", policy)


def run(policy, program=PROGRAM):
    prog = os.path.join(WORK, f"prog-{os.urandom(3).hex()}.py")
    with open(prog, "w") as f:
        f.write(program)
    return lsb("run", "--store", STORE, "--egress-resolve", "pypi.test:127.0.0.1", "--policy", policy, prog)


class BuiltEnvironment(unittest.TestCase):
    def test_pip_package_from_the_loopback_index_is_built_once_and_imported(self):
        policy = write_policy("built-env", pip_build(["echo step-one > /usr/local/marker.txt"]))
        before = len(INDEX.requests)
        b = build(policy)
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertIn("step 1/2 (pip install tinypkg==1.0): building", b.stderr)
        self.assertIn("step 2/2 (run echo step-one > /usr/local/marker.txt): building", b.stderr)
        self.assertIn("2 run now", b.stdout)
        self.assertTrue(any("tinypkg" in r for r in INDEX.requests[before:]), INDEX.requests)

        r = run(policy)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("tinypkg says from the loopback index", r.stdout)
        self.assertIn("marker step-one", r.stdout)
        # The second run and build: every step from the cache, the index not asked again.
        after_first = len(INDEX.requests)
        self.assertIn("step 1/2 (pip install tinypkg==1.0): cached", r.stderr)
        self.assertNotIn("building", r.stderr)
        again = build(policy)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("0 run now", again.stdout)
        self.assertNotIn("building", again.stderr)
        self.assertEqual(len(INDEX.requests), after_first)

        ref = again.stdout.split()[1]
        ls = json.loads(lsb("image", "ls", "--store", STORE, "--json").stdout)
        mine = [i for i in ls if i["reference"].endswith(ref.split("/")[-1])]
        self.assertEqual(mine[0]["policy"], "built-env", ls)
        info = json.loads(lsb("image", "inspect", "--store", STORE, "--json", ref).stdout)
        self.assertTrue(info["build"]["python"].startswith("3.11"), info["build"])
        self.assertIn({"name": "tinypkg", "version": "1.0"}, info["build"]["packages"])

        # A changed run step: pip is cached, only the run step is built.
        changed = write_policy("built-env", pip_build(["echo step-two > /usr/local/marker.txt"]))
        c = build(changed)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("step 1/2 (pip install tinypkg==1.0): cached", c.stderr)
        self.assertIn("step 2/2 (run echo step-two > /usr/local/marker.txt): building", c.stderr)
        self.assertEqual(len(INDEX.requests), after_first)
        r2 = run(changed)
        self.assertIn("marker step-two", r2.stdout, r2.stderr)

    def test_a_failing_step_names_the_step_its_exit_code_and_its_output(self):
        policy = write_policy("fails", 'run: ["echo preparing; echo the-reason-it-broke >&2; exit 3"]')
        b = build(policy)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertIn("step 1/1 (run echo preparing; echo the-reason-it-broke >&2; exit 3) failed with exit code 3", b.stderr)
        self.assertIn("the-reason-it-broke", b.stderr)
        r = run(policy, "print('never')\n")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("exit code 3", r.stderr)
        self.assertNotIn("never", r.stdout)

    def test_a_step_cannot_reach_a_host_build_network_allow_does_not_list(self):
        before = len(INDEX.requests)
        step = ("python3 -c \"import urllib.request; "
                f"urllib.request.urlopen('http://forbidden.test:{INDEX.port}/simple/'); print('REACH' + 'ED')\"")
        policy = write_policy("reach", pip_build([step], req="tinypkg>=0.1"))
        b = lsb("image", "build", "--store", STORE, "--egress-resolve", "pypi.test:127.0.0.1",
                "--egress-resolve", "forbidden.test:127.0.0.1", policy)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertNotIn("REACHED", b.stderr)
        self.assertIn("HTTP Error 403", b.stderr)
        self.assertFalse(any("forbidden" in r for r in INDEX.requests[before:]))
        # Without the proxy there is no route at all: the box's loopback is its own.
        direct = write_policy("direct", "run: [\"python3 -c \\\"import socket; socket.create_connection(('127.0.0.1', "
                              f"{INDEX.port}), 5); print('REACH' + 'ED')\\\"\"]")
        d = build(direct)
        self.assertEqual(d.returncode, 1, d.stdout + d.stderr)
        self.assertNotIn("REACHED", d.stderr)
        self.assertIn("ConnectionRefusedError", d.stderr)

    def test_files_sources_cannot_leave_the_policy_directory(self):
        dotdot = write_policy("dotdot", 'files: {"/opt/x": "../outside"}')
        c = lsb("policy", "check", dotdot)
        self.assertNotEqual(c.returncode, 0)
        self.assertIn("'..' component", c.stdout + c.stderr)
        link = write_policy("link", 'files: {"/opt/x/": "data/"}', files={"data": ("link", "/etc")})
        b = build(link)
        self.assertEqual(b.returncode, 1, b.stdout)
        self.assertIn("symbolic link", b.stderr)
        inner = write_policy("inner", 'files: {"/opt/x/": "data/"}',
                             files={"data/ok.txt": b"fine\n", "data/passwd": ("link", "/etc/passwd")})
        b = build(inner)
        self.assertEqual(b.returncode, 1, b.stdout)
        self.assertIn("'opt/x/passwd' is a symbolic link", b.stderr)
        good = write_policy("files-ok", 'files: {"/usr/local/share/fixtures/": "data/"}', files={"data/hello.txt": b"hello from files\n"})
        b = build(good)
        self.assertEqual(b.returncode, 0, b.stderr)
        r = run(good, "print(open('/usr/local/share/fixtures/hello.txt').read())\n")
        self.assertIn("hello from files", r.stdout, r.stderr)

    def test_files_under_opt_are_readable_and_importable_but_never_writable(self):
        # build.files targets get Landlock read rules (BoxSetup.readable): read and import, no write.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docker"))
        from test_docker_build import HIDE_STEP, OPT_PROGRAM
        policy = write_policy("files-opt", 'files: {"/opt/fixtures/": "data/"}\nrun: [' + json.dumps(HIDE_STEP) + ']',
                              files={"data/fixmod.py": b"GREETING = 'imported from /opt'\n",
                                     "data/table.csv": b"a,b\n1,2\n"})
        b = build(policy)
        self.assertEqual(b.returncode, 0, b.stderr)
        r = run(policy, OPT_PROGRAM)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("imported from /opt", r.stdout)
        self.assertIn("row 1,2", r.stdout)
        self.assertIn("listing ['fixmod.py', 'table.csv']", r.stdout)
        self.assertNotIn("WROTE", r.stdout)
        self.assertIn("no write /opt/fixtures/table.csv", r.stdout)
        self.assertIn("no write /opt/fixtures/new.txt", r.stdout)
        self.assertIn("no read /srv/hidden.txt", r.stdout)  # what a run step wrote elsewhere: not granted

    def test_a_step_printing_without_end_is_stopped_at_build_output(self):
        policy = write_policy("flood", 'run: ["python3 -c \\"while True: print(\'flood\' * 100)\\""]\noutput: 1M\ntimeout: 120s')
        b = build(policy)
        self.assertEqual(b.returncode, 1, b.stdout)
        self.assertIn("printed more than build.output (1048576 bytes)", b.stderr)
        self.assertLess(len(b.stderr), 20000)

    def test_two_processes_building_the_same_step_build_it_once(self):
        policy = write_policy("twice", 'run: ["sleep 2; echo once > /usr/local/once.txt"]')
        env = dict(os.environ, **NO_ENGINE)
        procs = [subprocess.Popen([BINARY, "image", "build", "--store", STORE, policy], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
        outs = [p.communicate(timeout=300) for p in procs]
        self.assertEqual([p.returncode for p in procs], [0, 0], outs)
        err = "".join(e for _, e in outs)
        self.assertEqual(err.count("): building"), 1, err)
        self.assertEqual(err.count("cached (built by another build meanwhile)"), 1, err)

    def test_apt_entries_that_are_not_package_names_are_refused_by_the_loader(self):
        for entry, why in (("git; touch /tmp/owned", "is not a Debian package name"),
                           ("$(id)", "is not a Debian package name"),
                           ("-oAPT::Get::Foo=1", "is not a Debian package name"),
                           ("git=1.0`id`", "has a bad version")):
            policy = write_policy("apt-bad", "apt: [" + json.dumps(entry) + "]")
            c = lsb("policy", "check", policy)
            self.assertNotEqual(c.returncode, 0, entry)
            self.assertIn("container.build.apt[0]", c.stdout + c.stderr)
            self.assertIn(why, c.stdout + c.stderr)
        src = write_policy("apt-src", 'apt: ["git"]\napt_sources: ["deb http://apt.test/ ./\\nEvil: 1"]')
        c = lsb("policy", "check", src)
        self.assertNotEqual(c.returncode, 0)
        self.assertIn("a control character", c.stdout + c.stderr)
        rpm = write_policy("apt-src2", 'apt: ["git"]\napt_sources: ["rpm http://apt.test/ ./"]')
        self.assertIn("does not start with 'deb '", lsb("policy", "check", rpm).stdout + lsb("policy", "check", rpm).stderr)
        unlisted = write_policy("apt-unlisted", 'apt: ["git"]\napt_sources: ["deb http://apt.test/ ./"]\n'
                                'network:\n  allow: ["example.org"]')
        c = lsb("policy", "check", unlisted)
        self.assertIn("does not reach the build.apt_sources archive http://apt.test/'s host 'apt.test'", c.stdout + c.stderr)
        ok = write_policy("apt-ok", 'apt: ["git", "libc6:amd64=2.36-9+deb12u4"]\napt_sources: ["deb [trusted=yes] http://apt.test/ ./"]')
        e = lsb("policy", "explain", ok)
        self.assertEqual(e.returncode, 0, e.stdout + e.stderr)
        self.assertIn("apt: git, libc6:amd64=2.36-9+deb12u4", e.stdout)
        self.assertIn("apt_sources: deb [trusted=yes] http://apt.test/ ./", e.stdout)
        self.assertIn("apt.test", e.stdout)  # the archive's host, allowed implicitly

    def test_pip_options_and_an_unreachable_index_are_refused_by_the_loader(self):
        opt = write_policy("opt", 'pip: ["--index-url=http://evil/simple"]')
        c = lsb("policy", "check", opt)
        self.assertIn("is a pip option, not a requirement", c.stdout + c.stderr)
        unlisted = write_policy("unlisted", 'pip: ["x"]\npip_index_url: "https://pypi.test/simple"\n'
                                'network:\n  allow: ["example.org"]')
        c = lsb("policy", "check", unlisted)
        self.assertIn("does not reach build.pip_index_url's host 'pypi.test'", c.stdout + c.stderr)


PROBE = b"""import ctypes, os, socket
for line in open('/proc/self/status'):
    if line.split(':')[0] in ('Uid', 'NoNewPrivs', 'Seccomp', 'CapEff', 'CapBnd', 'CapPrm', 'CapAmb'):
        print('STATUS', ' '.join(line.split()))
def attempt(name, make):
    try:
        make()
        print(name, 'OPENED')
    except OSError as e:
        print(name, 'REFUSED', e.errno)
attempt('NETLINK_NETFILTER', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12))
attempt('NETLINK_ROUTE', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt('AF_PACKET', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
libc = ctypes.CDLL(None, use_errno=True)
print('UNSHARE_USER', 'REFUSED' if libc.unshare(0x10000000) != 0 else 'MADE', ctypes.get_errno())
os.makedirs('/mnt/probe', exist_ok=True)
print('MOUNT', 'REFUSED' if libc.mount(b'none', b'/mnt/probe', b'tmpfs', 0, None) != 0 else 'MADE', ctypes.get_errno())
"""
# CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETGID, CAP_SETUID (bits 0 1 3 4 6 7).
STEP_CAPS = "00000000000000db"


class StepConfinement(unittest.TestCase):
    """Issue 32 class 5 and 6: a build step runs with the box's confinement minus what a package
    manager needs, and writes at most build.disk into the store's filesystem."""

    def test_a_step_has_no_new_privs_a_seccomp_filter_and_cannot_open_netfilter(self):
        # The step prints what it has and fails, so that its output is in the build's error.
        policy = write_policy("probe", 'files: {"/opt/probe.py": "probe.py"}\nrun: ["python3 /opt/probe.py; exit 7"]',
                              files={"probe.py": PROBE})
        b = build(policy)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        out = b.stderr
        self.assertIn("failed with exit code 7", out)
        self.assertIn("STATUS Uid: 0 0 0 0", out)  # root of its own user namespace, as before
        self.assertIn("STATUS NoNewPrivs: 1", out)
        self.assertIn("STATUS Seccomp: 2", out)
        for s in ("CapEff", "CapPrm", "CapBnd"):
            self.assertIn(f"STATUS {s}: {STEP_CAPS}", out)
        self.assertIn("STATUS CapAmb: 0000000000000000", out)
        self.assertIn("NETLINK_NETFILTER REFUSED", out)
        self.assertNotIn("NETLINK_NETFILTER OPENED", out)
        self.assertIn("NETLINK_ROUTE REFUSED", out)
        self.assertIn("AF_PACKET REFUSED", out)
        self.assertIn("UNSHARE_USER REFUSED 1", out)  # EPERM
        self.assertIn("MOUNT REFUSED 1", out)

    def test_a_step_writing_past_build_disk_fails_naming_it_and_the_host_disk_grows_by_at_most_the_bound(self):
        bound = 64 << 20
        step = ("python3 -c \\\"f = open('/big', 'wb'); [f.write(b'x' * (1 << 20)) or f.flush() for _ in range(512)]\\\"")
        policy = write_policy("disk-hog", f'run: ["{step}"]\ndisk: 64M')
        st = os.statvfs(STORE)
        used = lambda s: (s.f_blocks - s.f_bfree) * s.f_frsize  # noqa: E731
        before = used(st)
        peak = [before]
        done = threading.Event()

        def watch():
            while not done.is_set():
                peak[0] = max(peak[0], used(os.statvfs(STORE)))
                time.sleep(0.01)

        t = threading.Thread(target=watch)
        t.start()
        try:
            b = build(policy)
        finally:
            done.set()
            t.join()
        grew = peak[0] - before
        print(f"build.disk 64M: the store's filesystem grew by at most {grew / 2**20:.1f} MiB while the step wrote",
              file=sys.stderr)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertIn("after it filled build.disk (64Mi", b.stderr)
        self.assertIn("raise container.build.disk", b.stderr)
        self.assertIn("No space left on device", b.stderr)
        # The bound, plus what other processes of this machine wrote meanwhile (a shared disk).
        self.assertLess(grew, bound + (48 << 20), f"grew {grew} bytes")
        # Within the bound the same step builds.
        ok = write_policy("disk-ok", 'run: ["python3 -c \\"open(\'/mid\', \'wb\').write(b\'y\' * (16 << 20))\\""]\ndisk: 64M')
        b = build(ok)
        self.assertEqual(b.returncode, 0, b.stderr)

    def test_explain_names_build_disk_with_its_default(self):
        policy = write_policy("disk-default", 'run: ["true"]')
        e = lsb("policy", "explain", policy)
        self.assertEqual(e.returncode, 0, e.stdout + e.stderr)
        self.assertIn("build.disk 2Gi", e.stdout)
        self.assertIn("no_new_privs", e.stdout)

    def test_a_missing_build_step_binary_is_named_with_where_it_was_looked_for(self):
        d = tempfile.mkdtemp(prefix="lonely-", dir=WORK)
        shutil.copy2(BINARY, os.path.join(d, "llm-sandbox"))
        policy = write_policy("no-runner", 'run: ["echo no-runner-' + os.urandom(4).hex() + '"]')
        env = dict(os.environ, **NO_ENGINE)
        env.pop("LLM_SANDBOX_BUILD_STEP", None)
        p = subprocess.run([os.path.join(d, "llm-sandbox"), "image", "build", "--store", STORE, policy],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("cannot find llm-sandbox-build-step", p.stderr)
        self.assertIn(os.path.join(d, "llm-sandbox-build-step") + ": No such file or directory", p.stderr)
        self.assertNotIn("llm-sandbox-init", p.stderr)
        env["LLM_SANDBOX_BUILD_STEP"] = "/nonexistent/llm-sandbox-build-step"
        p = subprocess.run([BINARY, "image", "build", "--store", STORE, policy],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertIn("cannot find llm-sandbox-build-step", p.stderr)
        self.assertIn("/nonexistent/llm-sandbox-build-step: No such file or directory", p.stderr)
        self.assertIn("LLM_SANDBOX_BUILD_STEP=", p.stderr)


class AptBuild(unittest.TestCase):
    """build.apt from a loopback repository into a Debian base (one apt build: the CI budget)."""

    @classmethod
    def setUpClass(cls):
        why = apt_repo.unavailable() or import_debian_image()
        if why:
            raise unittest.SkipTest(why)
        cls.repo = apt_repo.AptRepo(os.path.join(WORK, "apt-repo"))

    @classmethod
    def tearDownClass(cls):
        cls.repo.stop()

    def build(self, policy):
        return lsb("image", "build", "--store", STORE, "--egress-resolve", "apt.test:127.0.0.1",
                   "--egress-resolve", "forbidden.test:127.0.0.1", policy)

    def test_apt_package_from_the_loopback_repository_is_installed_once_and_read(self):
        spec = (f'apt: ["{apt_repo.PACKAGE}"]\napt_sources: ["{self.repo.source()}"]\n'
                f'network:\n  allow: ["apt.test", "127.0.0.1:{self.repo.port}"]')
        policy = write_policy("apt-env", spec, image=DEBIAN_IMAGE)
        b = self.build(policy)
        self.assertEqual(b.returncode, 0, b.stdout + b.stderr)
        self.assertIn(f"step 1/1 (apt install {apt_repo.PACKAGE}): building", b.stderr)
        self.assertTrue(any(r.endswith(".deb") for r in self.repo.requests), self.repo.requests)
        program = (f"print(open('{apt_repo.INSTALLED_FILE}').read().strip())\n"
                   "import os\nprint('lists', sorted(os.listdir('/var/lib/apt/lists')))\n")
        r = lsb("run", "--store", STORE, "--policy", policy, self._prog(program))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(apt_repo.INSTALLED_TEXT, r.stdout)
        self.assertIn("lists []", r.stdout)  # apt's lists are not kept in the layer
        asked = len(self.repo.requests)
        again = self.build(policy)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn(f"step 1/1 (apt install {apt_repo.PACKAGE}): cached", again.stderr)
        self.assertIn("0 run now", again.stdout)
        self.assertEqual(len(self.repo.requests), asked)
        ref = again.stdout.split()[1]
        info = json.loads(lsb("image", "inspect", "--store", STORE, "--json", ref).stdout)
        self.assertIn({"name": apt_repo.PACKAGE, "version": apt_repo.VERSION}, info["build"]["apt"])
        self.assertTrue(info["build"]["python"].startswith("3.11"), info["build"])

    def test_an_apt_archive_build_network_does_not_allow_is_refused_by_the_proxy(self):
        # The loader refuses an apt_sources host build.network.allow misses (test above); the image's
        # own sources (deb.debian.org here) cannot be known at load: the proxy refuses them.
        spec = f'apt: ["{apt_repo.PACKAGE}"]\nnetwork:\n  allow: ["apt.test", "127.0.0.1:{self.repo.port}"]'
        policy = write_policy("apt-forbidden", spec, image=DEBIAN_IMAGE)
        before = len(self.repo.requests)
        b = self.build(policy)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertIn(f"step 1/1 (apt install {apt_repo.PACKAGE}) failed with exit code 100", b.stderr)
        self.assertIn("its output ends with", b.stderr)
        self.assertIn("403", b.stderr)
        self.assertIn("deb.debian.org", b.stderr)
        self.assertEqual(len(self.repo.requests), before)

    def test_an_image_without_apt_get_fails_the_step_naming_it(self):
        policy = write_policy("apt-none", 'apt: ["git"]\napt_sources: ["deb [trusted=yes] http://apt.test/ ./"]')
        b = self.build(policy)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertIn(f"build.apt needs apt-get in the image; {fx.IMAGE} has none", b.stderr)

    def _prog(self, text):
        prog = os.path.join(WORK, f"prog-{os.urandom(3).hex()}.py")
        with open(prog, "w") as f:
            f.write(text)
        return prog


class DaemonSeesTheEnvironment(unittest.TestCase):
    def test_serve_prebuild_builds_then_get_policy_lists_the_packages_and_execute_imports_it(self):
        policy = write_policy("daemon-built", pip_build(["echo from-daemon > /usr/local/marker.txt"], req="tinypkg<2"))
        d = dh.Daemon("--store", STORE, "--prebuild", "--pool-size", "0", "--backend", "native",
                      "--egress-resolve", "pypi.test:127.0.0.1", "--default-policy", "daemon-built",
                      policies=os.path.dirname(policy), env=NO_ENGINE)
        try:
            self.assertIn("prebuild: policy daemon-built is build.llm-sandbox.local/env:", d.log())
            r = dh.request(d.base, "GET", "/v1/policies/daemon-built")
            self.assertEqual(r.status, 200)
            env = r.json()["environment"]
            self.assertTrue(env["built"], env)
            self.assertEqual(env["pip"], ["tinypkg<2"])
            self.assertEqual((env["apt"], env["apt_sources"], env["apt_packages"]), ([], [], []))
            self.assertIn({"name": "tinypkg", "version": "1.0"}, env["packages"])
            listing = dh.request(d.base, "GET", "/v1/policies").json()["policies"]
            mine = [p for p in listing if p["name"] == "daemon-built"][0]
            self.assertIn("tinypkg 1.0", mine["packages"])
            sys.path.insert(0, os.path.join(os.environ.get("LSB_SOURCE_DIR", "."), "clients", "python"))
            from llm_sandbox.integrations.common import _describe
            self.assertIn("installed packages:", _describe(mine, None))
            self.assertIn("tinypkg 1.0", _describe(mine, None))
            ex = dh.request(d.base, "POST", "/v1/execute", {"code": PROGRAM, "policy": "daemon-built"}).json()
            self.assertIn("tinypkg says from the loopback index", ex.get("stdout", ""), ex)
            self.assertIn("marker from-daemon", ex.get("stdout", ""), ex)
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
