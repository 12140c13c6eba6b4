"""Network egress by name on the Docker backend (runc), docs/network.md "Docker": the suites of
tests/integration/test_egress.py and test_egress_secrets.py again, with BACKEND = "docker" (the
same policies with backend: docker, the same assertions), plus what is Docker's own: the box's
namespace holds only loopback and the proxy's socket, and gVisor (runsc) refuses a filtered
network with the reason. The container runs with network mode none; the CLI or daemon, root on
the engine's host, makes 127.0.0.1:3128 in its namespace (runtime/docker/egress_attach.h)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from daemon_util import BINARY, IMAGES, SOURCE_DIR, prepare_engine_or_skip  # noqa: E402
import test_egress as egress  # noqa: E402  (modules, not classes: only the subclasses below run)
import test_egress_secrets as secrets  # noqa: E402
import test_egress_pip as pip  # noqa: E402


def setUpModule():
    prepare_engine_or_skip()


class EgressDocker(egress.EgressNative):
    BACKEND = "docker"

    def test_the_box_namespace_has_only_loopback_and_the_proxy_socket(self):
        r, _ = self.run_box(r'''
ifaces = sorted(os.listdir("/sys/class/net"))
listen = []
for line in open("/proc/net/tcp").read().splitlines()[1:]:
    f = line.split()
    if f[3] == "0A":  # LISTEN
        listen.append(f[1])
routes = open("/proc/net/route").read().splitlines()[1:]
print(json.dumps({"ifaces": ifaces, "listen": listen, "routes": routes,
                  "resolv": open("/etc/resolv.conf").read() if os.path.exists("/etc/resolv.conf") else ""}))
''')
        o = self.out(r)
        self.assertEqual(o["ifaces"], ["lo"], o)
        self.assertEqual(o["listen"], ["0100007F:0C38"], o)  # 127.0.0.1:3128 only
        self.assertEqual(o["routes"], [], o)  # no IPv4 route at all


class EgressDaemonDocker(egress.EgressDaemon):
    BACKEND = "docker"


class EgressSecretsDocker(secrets.EgressSecretsNative):
    BACKEND = "docker"


class EgressSecretsHttpsDocker(secrets.EgressSecretsHttps):
    BACKEND = "docker"


class EgressSecretsDaemonDocker(secrets.EgressSecretsDaemon):
    BACKEND = "docker"


class EgressPipDocker(pip.EgressPip):
    """`pip install` at run time in a Docker box, through the proxy only: the test image has no pip,
    so the box's image is test_docker_build's base (the test image plus Debian's pip, committed here
    and removed after), mapped to python:3.12-slim by an images file of this class's own."""
    BACKEND = "docker"

    @classmethod
    def setUpClass(cls):
        import test_docker_build as build  # the base image with pip
        if not os.path.isdir(build.HOST_PIP):
            raise unittest.SkipTest(f"{build.HOST_PIP} is missing (Debian's python3-pip makes the image's pip)")
        build.make_base()
        cls.base = build.BASE
        cls.images_dir = tempfile.mkdtemp(prefix="lsb-egress-pip-images-")
        cls.IMAGES = os.path.join(cls.images_dir, "images.yaml")
        with open(cls.IMAGES, "w") as f:
            f.write(f'images: {{}}\ndocker:\n  "python:3.12-slim": {cls.base}\n')
        try:
            super().setUpClass()
        except BaseException:
            cls.remove_base()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.remove_base()

    @classmethod
    def remove_base(cls):
        subprocess.run(["docker", "rmi", "-f", cls.base], capture_output=True, timeout=120)
        shutil.rmtree(cls.images_dir, ignore_errors=True)


class EgressGvisor(unittest.TestCase):
    def test_a_filtered_network_under_runsc_is_refused_naming_why_and_what_to_use(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="lsb-egress-runsc-", delete=False) as f:
            f.write("""version: "1.0"
name: egress-runsc
backend: docker
container:
  image: python:3.12-slim
  runtime: runsc
  gvisor_accept_weaker: true
network:
  enabled: true
  allow: ["pypi.org"]
commands:
  allow: ["/usr/bin/python3"]
""")
        try:
            p = subprocess.run([BINARY, "run", "--backend", "docker", "--json", "--policy", f.name, "--images", IMAGES,
                                "-"], input="print('ran')", capture_output=True, text=True, timeout=120, cwd=SOURCE_DIR)
        finally:
            os.unlink(f.name)
        text = p.stdout + p.stderr
        self.assertNotEqual(p.returncode, 0, text)
        self.assertNotIn("ran\n", text)
        self.assertIn("gVisor's own network stack", text)
        self.assertIn("runtime: runc", text)


if __name__ == "__main__":
    unittest.main()
