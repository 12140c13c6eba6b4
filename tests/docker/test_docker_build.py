"""container.build on the Docker backend (issue 20), on the real engine: the native suite's tests
(tests/integration/test_environment_build.py) mirrored.

The base is the Docker suite's test image plus Debian's pip (copied from the host, committed here as
BASE, removed at the end with every image built from it). A wheel made here is served as a PEP 503
simple index on 127.0.0.1 by a real HTTP server; the policy names it as pypi.test, pinned to
127.0.0.1 through the egress proxy's resolve option, and build.network.allow lists it. Each step
runs in a container with network mode none whose only way out is the build's egress proxy
(docker::AttachEgress). Then:
  - `image build --backend docker` runs the pip and run steps (the index is asked), `run` imports
    the package and reads the run step's file; a second `run` and `image build` find every step's
    image in the engine (their progress lines say so, and the index gets no request);
  - a changed run step rebuilds that step only (pip: cached, run: building);
  - a failing step's error names it, its exit code and its output;
  - a step reaching a host build.network.allow does not list is refused by the proxy, and a direct
    connection finds no route (the container's loopback is its own);
  - build.files into /opt: readable and importable at run time (Landlock), never writable;
  - a step printing without end is stopped at build.output;
  - `image ls --docker` names the policy each built image serves, `image inspect --docker` its
    Python version and packages (labels the build takes from the image's own python3);
  - build.apt (DockerAptBuild): a package made by dpkg-deb, served as a flat apt repository on
    loopback (tests/integration/apt_repo.py) as apt.test, installed into the test image (Debian,
    with apt) and read by the program; the second build is cached; `image inspect --docker` lists
    it; the image's own deb.debian.org, not in build.network.allow, is refused by the proxy.
Needs root (the egress proxy joins the build container's network namespace).
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

from daemon_util import BINARY, SEED_POLICY, prepare_engine_or_skip

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from test_environment_build import Index  # noqa: E402  (the loopback index and its wheel)
import apt_repo  # noqa: E402
import daemon_harness  # noqa: E402

TEST_IMAGE = "llm-sandbox/python:3.11-test"
BASE = "lsb-build-test/python-pip:" + os.urandom(4).hex()
HOST_PIP = "/usr/lib/python3/dist-packages/pip"
PROGRAM = ("import tinypkg\n"
           "print('tinypkg says', tinypkg.VALUE)\n"
           "print('marker', open('/usr/local/marker.txt').read().strip())\n")
RESOLVE = ["--egress-resolve", "pypi.test:127.0.0.1", "--egress-resolve", "apt.test:127.0.0.1"]


def docker(*args, **kw):
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=300, **kw)


def make_base():
    """TEST_IMAGE + Debian's pip in /usr/local/lib/python3.11/dist-packages, as BASE."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for d in ("usr", "usr/local", "usr/local/lib", "usr/local/lib/python3.11",
                  "usr/local/lib/python3.11/dist-packages"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            t.addfile(info)
        t.add(HOST_PIP, "usr/local/lib/python3.11/dist-packages/pip",
              filter=lambda i: None if "__pycache__" in i.name else i)
    cid = docker("create", TEST_IMAGE).stdout.strip()
    try:
        cp = subprocess.run(["docker", "cp", "-", cid + ":/"], input=buf.getvalue(), capture_output=True, timeout=300)
        if cp.returncode != 0:
            raise RuntimeError("docker cp: " + cp.stderr.decode())
        c = docker("commit", cid, BASE)
        if c.returncode != 0:
            raise RuntimeError("docker commit: " + c.stderr)
    finally:
        docker("rm", "-f", cid)


def setUpModule():
    prepare_engine_or_skip()
    if os.geteuid() != 0:
        raise unittest.SkipTest("container.build on Docker needs root (the egress proxy joins the build's namespace)")
    if not os.path.isdir(HOST_PIP):
        raise unittest.SkipTest(f"{HOST_PIP} is missing (Debian's python3-pip makes the base image's pip)")
    global WORK, INDEX
    WORK = tempfile.mkdtemp(prefix="lsb-docker-build-")
    os.chmod(WORK, 0o755)
    make_base()
    INDEX = Index(os.path.join(WORK, "index"))


def tearDownModule():
    INDEX.stop()
    shutil.rmtree(WORK, True)
    # Only what this suite made: the images built on BASE (and on TEST_IMAGE by policies named
    # docker-apt*), then BASE.
    for label in ("label=io.llm-sandbox.build.base=" + BASE, "label=io.llm-sandbox.policy=docker-apt"):
        ids = docker("images", "-q", "--filter", label).stdout.split()
        tags = docker("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", label).stdout.split()
        if tags:
            docker("rmi", *tags)
        if ids:
            docker("rmi", *set(ids))
    docker("rmi", BASE)


def write_policy(name, build_yaml, files=None, image=None):
    d = tempfile.mkdtemp(prefix="policy-", dir=WORK)
    with open(SEED_POLICY) as f:
        text = f.read()
    text = text.replace("name: code-sandbox", f"name: {name}")
    text = text.replace("image: python:3.12-slim", f'image: "{image or BASE}"\n  build:\n' +
                        "".join("    " + line + "\n" for line in build_yaml.strip("\n").split("\n")))
    for rel, content in (files or {}).items():
        path = os.path.join(d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content)
    path = os.path.join(d, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def pip_build(run_steps, req="tinypkg==1.0"):
    return (f'pip_index_url: "http://pypi.test:{INDEX.port}/simple"\n'
            f'pip: ["{req}"]\n'
            "run:\n" + "".join(f"  - {json.dumps(r)}\n" for r in run_steps) +
            f'network:\n  allow: ["pypi.test", "127.0.0.1:{INDEX.port}"]\n')


def lsb(*args, timeout=600):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout)


def build(policy, *extra):
    return lsb("image", "build", "--backend", "docker", *RESOLVE, *extra, policy)


def run(policy, program=PROGRAM):
    prog = os.path.join(WORK, f"prog-{os.urandom(3).hex()}.py")
    with open(prog, "w") as f:
        f.write(program)
    return lsb("run", "--backend", "docker", *RESOLVE, "--policy", policy, prog)


class DockerBuiltEnvironment(unittest.TestCase):
    def test_a_pip_package_from_the_loopback_index_is_built_once_and_imported(self):
        # (named to run before the network test, which then finds this pip step cached)
        policy = write_policy("docker-built", pip_build(["echo step-one > /usr/local/marker.txt"]))
        before = len(INDEX.requests)
        b = build(policy)
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertIn("step 1/2 (pip install tinypkg==1.0): building", b.stderr)
        self.assertIn("step 2/2 (run echo step-one > /usr/local/marker.txt): building", b.stderr)
        self.assertIn("2 run now, in the Docker engine", b.stdout)
        self.assertTrue(any("tinypkg" in r for r in INDEX.requests[before:]), INDEX.requests)
        ref = b.stdout.split()[1]
        self.assertTrue(ref.startswith("build.llm-sandbox.local/env:"), b.stdout)

        r = run(policy)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("tinypkg says from the loopback index", r.stdout)
        self.assertIn("marker step-one", r.stdout)
        # The second run and build: every step's image found in the engine, the index not asked.
        after_first = len(INDEX.requests)
        self.assertIn("step 1/2 (pip install tinypkg==1.0): cached", r.stderr)
        self.assertNotIn("building", r.stderr)
        again = build(policy)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("0 run now", again.stdout)
        self.assertNotIn("building", again.stderr)
        self.assertEqual(again.stdout.split()[1], ref)
        self.assertEqual(len(INDEX.requests), after_first)

        # Labelled so image ls --docker finds it, with the policy it serves.
        ls = json.loads(lsb("image", "ls", "--docker", "--json").stdout)
        mine = [i for i in ls if i["reference"] == ref]
        self.assertEqual(len(mine), 1, ls)
        self.assertEqual(mine[0]["policy"], "docker-built")
        self.assertEqual(mine[0]["key"], ref.split(":")[-1])
        self.assertEqual(mine[0]["base"], BASE)
        # image inspect --docker: the Python version and packages its python3 reported after the build.
        info = json.loads(lsb("image", "inspect", "--docker", "--json", ref).stdout)
        self.assertEqual(info["build"]["policy"], "docker-built", info)
        self.assertTrue(info["build"]["python"].startswith("3.11"), info["build"])
        self.assertIn({"name": "tinypkg", "version": "1.0"}, info["build"]["packages"])
        self.assertEqual(info["build"]["apt"], [])
        # The committed image keeps the base's command and carries no proxy variables.
        cfg = json.loads(docker("image", "inspect", ref, "--format", "{{json .Config}}").stdout)
        self.assertEqual(cfg.get("Cmd"), ["/usr/bin/python3"], cfg)
        self.assertFalse(cfg.get("Entrypoint"), cfg)
        self.assertFalse([e for e in cfg.get("Env") or [] if "PROXY" in e.upper()], cfg)

        # A changed run step: pip is cached, only the run step is built.
        changed = write_policy("docker-built", pip_build(["echo step-two > /usr/local/marker.txt"]))
        c = build(changed)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("step 1/2 (pip install tinypkg==1.0): cached", c.stderr)
        self.assertIn("step 2/2 (run echo step-two > /usr/local/marker.txt): building", c.stderr)
        self.assertIn("1 run now", c.stdout)
        self.assertEqual(len(INDEX.requests), after_first)
        r2 = run(changed)
        self.assertIn("marker step-two", r2.stdout, r2.stderr)

    def test_a_failing_step_names_the_step_its_exit_code_and_its_output(self):
        policy = write_policy("docker-fails", 'run: ["echo preparing; echo the-reason-it-broke >&2; exit 3"]')
        b = build(policy)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertIn("step 1/1 (run echo preparing; echo the-reason-it-broke >&2; exit 3) failed with exit code 3",
                      b.stderr)
        self.assertIn("the-reason-it-broke", b.stderr)
        self.assertIn("preparing", b.stderr)
        r = run(policy, "print('never')\n")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("exit code 3", r.stdout + r.stderr)
        self.assertNotIn("never\n", r.stdout)

    def test_a_policy_that_writes_build_disk_is_refused_on_docker(self):
        # Issue 32, class 6: the engine cannot bound a step's writes; a bound the policy asks for is
        # a promise it would not keep, so the policy is refused by name (fail closed).
        policy = write_policy("docker-disk", 'run: ["true"]\ndisk: 512M')
        r = run(policy, "print('never')\n")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("container.build.disk", r.stderr)
        self.assertNotIn("never\n", r.stdout)

    def test_a_step_reaches_only_what_build_network_allows(self):
        before = len(INDEX.requests)
        step = ("python3 -c \"import urllib.request; "
                f"urllib.request.urlopen('http://forbidden.test:{INDEX.port}/simple/'); print('REACH' + 'ED')\"")
        policy = write_policy("docker-reach", pip_build([step]))
        b = build(policy, "--egress-resolve", "forbidden.test:127.0.0.1")
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertNotIn("REACHED", b.stderr)
        self.assertIn("HTTP Error 403", b.stderr)
        self.assertFalse(any("forbidden" in r for r in INDEX.requests[before:]))
        direct = write_policy("docker-direct", "run: [\"python3 -c \\\"import socket; socket.create_connection(("
                              f"'127.0.0.1', {INDEX.port}), 5); print('REACH' + 'ED')\\\"\"]")
        d = build(direct)
        self.assertEqual(d.returncode, 1, d.stdout + d.stderr)
        self.assertNotIn("REACHED", d.stderr)
        self.assertIn("ConnectionRefusedError", d.stderr)

    def test_files_under_opt_are_readable_and_importable_but_never_writable(self):
        policy = write_policy("docker-files", 'files: {"/opt/fixtures/": "data/"}\nrun: [' + json.dumps(HIDE_STEP) + ']',
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
        policy = write_policy("docker-flood", 'run: ["python3 -c \\"while True: print(\'flood\' * 100)\\""]\n'
                              'output: 1M\ntimeout: 120s')
        b = build(policy)
        self.assertEqual(b.returncode, 1, b.stdout)
        self.assertIn("printed more than build.output (1048576 bytes)", b.stderr)
        self.assertLess(len(b.stderr), 20000)


class DockerAptBuild(unittest.TestCase):
    """build.apt from a loopback repository into the test image (Debian, with apt): one apt build."""

    @classmethod
    def setUpClass(cls):
        why = apt_repo.unavailable()
        if why:
            raise unittest.SkipTest(why)
        cls.repo = apt_repo.AptRepo(os.path.join(WORK, "apt-repo"))

    @classmethod
    def tearDownClass(cls):
        cls.repo.stop()

    def test_apt_package_from_the_loopback_repository_is_installed_once_listed_and_read(self):
        spec = (f'apt: ["{apt_repo.PACKAGE}"]\napt_sources: ["{self.repo.source()}"]\n'
                f'network:\n  allow: ["apt.test", "127.0.0.1:{self.repo.port}"]')
        policy = write_policy("docker-apt", spec, image=TEST_IMAGE)
        b = build(policy)
        self.assertEqual(b.returncode, 0, b.stdout + b.stderr)
        self.assertIn(f"step 1/1 (apt install {apt_repo.PACKAGE}): building", b.stderr)
        self.assertTrue(any(r.endswith(".deb") for r in self.repo.requests), self.repo.requests)
        ref = b.stdout.split()[1]
        r = run(policy, f"print(open('{apt_repo.INSTALLED_FILE}').read().strip())\n"
                        "import os\nprint('lists', sorted(os.listdir('/var/lib/apt/lists')))\n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(apt_repo.INSTALLED_TEXT, r.stdout)
        self.assertIn("lists []", r.stdout)
        asked = len(self.repo.requests)
        again = build(policy)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn(f"step 1/1 (apt install {apt_repo.PACKAGE}): cached", again.stderr)
        self.assertIn("0 run now", again.stdout)
        self.assertEqual(len(self.repo.requests), asked)
        info = json.loads(lsb("image", "inspect", "--docker", "--json", ref).stdout)
        self.assertIn({"name": apt_repo.PACKAGE, "version": apt_repo.VERSION}, info["build"]["apt"])
        self.assertTrue(info["build"]["python"].startswith("3.11"), info["build"])
        text = lsb("image", "inspect", "--docker", ref).stdout
        self.assertIn(f"apt packages:\n  {apt_repo.PACKAGE} {apt_repo.VERSION}", text)

    def test_a_docker_daemon_lists_the_built_environments_packages_for_the_tools(self):
        # pip and apt in one environment (BASE is the test image plus pip: Debian, with apt).
        spec = (f'apt: ["{apt_repo.PACKAGE}"]\napt_sources: ["{self.repo.source()}"]\n'
                f'pip_index_url: "http://pypi.test:{INDEX.port}/simple"\npip: ["tinypkg==1.0"]\n'
                f'network:\n  allow: ["apt.test", "127.0.0.1:{self.repo.port}", "pypi.test", "127.0.0.1:{INDEX.port}"]')
        policy = write_policy("docker-apt-daemon", spec)
        d = daemon_harness.Daemon("--backend", "docker", "--prebuild", "--pool-size", "0", *RESOLVE,
                                  "--default-policy", "docker-apt-daemon", policies=os.path.dirname(policy))
        try:
            env = daemon_harness.request(d.base, "GET", "/v1/policies/docker-apt-daemon").json()["environment"]
            self.assertTrue(env["built"], env)
            self.assertTrue(env["image"].startswith("build.llm-sandbox.local/env:"), env)
            self.assertTrue(env["python"].startswith("3.11"), env)
            self.assertIn({"name": "tinypkg", "version": "1.0"}, env["packages"])
            self.assertIn({"name": apt_repo.PACKAGE, "version": apt_repo.VERSION}, env["apt_packages"])
            listing = daemon_harness.request(d.base, "GET", "/v1/policies").json()["policies"]
            mine = [p for p in listing if p["name"] == "docker-apt-daemon"][0]
            self.assertIn("tinypkg 1.0", mine["packages"])
            self.assertIn(f"{apt_repo.PACKAGE} {apt_repo.VERSION}", mine["apt_packages"])
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
            from llm_sandbox.integrations.common import _describe
            described = _describe(mine, None)
            self.assertIn("installed packages: ", described)
            self.assertIn(f"system packages: {apt_repo.PACKAGE} {apt_repo.VERSION}", described)
        finally:
            d.close()

    def test_the_images_own_archive_build_network_does_not_allow_is_refused_by_the_proxy(self):
        spec = f'apt: ["{apt_repo.PACKAGE}"]\nnetwork:\n  allow: ["apt.test", "127.0.0.1:{self.repo.port}"]'
        policy = write_policy("docker-apt-forbidden", spec, image=TEST_IMAGE)
        before = len(self.repo.requests)
        b = build(policy)
        self.assertEqual(b.returncode, 1, b.stdout + b.stderr)
        self.assertIn(f"step 1/1 (apt install {apt_repo.PACKAGE}) failed with exit code 100", b.stderr)
        self.assertIn("403", b.stderr)
        self.assertIn("deb.debian.org", b.stderr)
        self.assertEqual(len(self.repo.requests), before)


# A run step writing outside the files targets (python: the native test image has no coreutils).
HIDE_STEP = ("python3 -c \"import os; os.makedirs('/srv', exist_ok=True); "
             "open('/srv/hidden.txt', 'w').write('hidden')\"")

# What build.files put under /opt is the program's to read and import (Landlock read rules for the
# targets), never to write; the rest of the image outside init's readable dirs stays unreadable.
OPT_PROGRAM = ("import os, sys\n"
               "sys.path.insert(0, '/opt/fixtures')\n"
               "import fixmod\n"
               "print(fixmod.GREETING)\n"
               "print('row', open('/opt/fixtures/table.csv').read().split()[1])\n"
               "print('listing', sorted(n for n in os.listdir('/opt/fixtures') if n != '__pycache__'))\n"
               "for p in ('/opt/fixtures/new.txt', '/opt/fixtures/table.csv'):\n"
               "    try:\n"
               "        open(p, 'a').write('x')\n"
               "        print('WROTE', p)\n"
               "    except OSError as e:\n"
               "        print('no write', p, e.errno)\n"
               "try:\n"
               "    print('read', open('/srv/hidden.txt').read())\n"
               "except OSError as e:\n"
               "    print('no read /srv/hidden.txt', e.errno)\n")


if __name__ == "__main__":
    unittest.main()
