"""Network egress by name on the Docker backend (runc), docs/network.md "Docker": the suites of
tests/integration/test_egress.py and test_egress_secrets.py again, with BACKEND = "docker" (the
same policies with backend: docker, the same assertions), plus what is Docker's own: the box's
namespace holds only loopback and the proxy's socket, and gVisor (runsc) refuses a filtered
network with the reason. The container runs with network mode none; the CLI or daemon, root on
the engine's host, makes 127.0.0.1:3128 in its namespace (runtime/docker/egress_attach.h)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from daemon_util import BINARY, IMAGES, SOURCE_DIR, prepare_engine_or_skip  # noqa: E402
import test_egress as egress  # noqa: E402  (modules, not classes: only the subclasses below run)
import test_egress_secrets as secrets  # noqa: E402


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
