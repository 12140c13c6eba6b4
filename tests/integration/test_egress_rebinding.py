"""DNS rebinding against the egress proxy (issue 19, DESIGN §11 "Egress names and addresses").

The attack: a name the policy allows answers its first lookup with a public address (the check
passes) and every later lookup with 127.0.0.1, where a host service listens. A proxy that checks
one answer and connects by name again would reach the service. Ours resolves once, checks every
address it got and connects to the address it checked.

The test needs a DNS server the proxy's resolver asks, and no way out to the public address: the
CLI (which runs the proxy) starts in a network and mount namespace of its own (`unshare -m -n`)
whose /etc/resolv.conf names a DNS server on that namespace's loopback; the HTTP service listens
there too. The public address is unreachable (no route), so the connection to it fails; what
matters is that nothing reaches the loopback service and that the proxy asked DNS only once.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import BINARY, IMAGES, SOURCE_DIR  # noqa: E402

PUBLIC = "93.184.216.34"  # a public address: the policy's name check passes, the address check too

# Runs inside `unshare -m -n`, as root: loopback up, resolv.conf bound over, a DNS server and an
# HTTP service on loopback, then the box. Prints one JSON line: the CLI's result and what the two
# servers saw.
DRIVER = r'''
import http.server, json, os, socket, struct, subprocess, sys, threading
work, binary, images, policy, public = sys.argv[1:6]
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
conf = os.path.join(work, "resolv.conf")
with open(conf, "w") as f:
    f.write("nameserver 127.0.0.1\noptions timeout:2 attempts:1\n")
subprocess.run(["mount", "--bind", conf, "/etc/resolv.conf"], check=True)

queries = []  # (name, qtype) in the order asked

def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 53))
    while True:
        data, peer = s.recvfrom(512)
        qid = data[:2]
        i, labels = 12, []
        while data[i]:
            labels.append(data[i + 1:i + 1 + data[i]].decode())
            i += 1 + data[i]
        qtype = struct.unpack(">H", data[i + 1:i + 3])[0]
        question = data[12:i + 5]
        name = ".".join(labels).lower()
        queries.append((name, qtype))
        answers = b""
        if name == "rebind.test" and qtype == 1:
            # The first A answer is public; every later one is the host's loopback.
            first = sum(1 for q in queries if q == ("rebind.test", 1)) == 1
            addr = public if first else "127.0.0.1"
            answers = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 0, 4) + socket.inet_aton(addr)
        header = qid + struct.pack(">HHHHH", 0x8180, 1, 1 if answers else 0, 0, 0)
        s.sendto(header + question + answers, peer)

hits = []

class Service(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        hits.append(self.path)
        body = b"the host's loopback service\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Service)
port = srv.server_address[1]
threading.Thread(target=dns, daemon=True).start()
threading.Thread(target=srv.serve_forever, daemon=True).start()
program = """
import json, urllib.request, urllib.error
out = []
for attempt in range(3):
    try:
        with urllib.request.urlopen("http://rebind.test:%d/secret", timeout=20) as r:
            out.append([r.status, r.read().decode()])
    except urllib.error.HTTPError as e:
        out.append([e.code, e.read().decode(errors="replace")[:200]])
    except Exception as e:
        out.append(["error", repr(e)[:200]])
print(json.dumps(out))
""" % port
proc = subprocess.run([binary, "run", "--backend", "native", "--json", "--policy", policy, "--images", images, "-"],
                      input=program, capture_output=True, text=True, timeout=120)
print(json.dumps({"cli_exit": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr[-2000:],
                  "queries": queries, "hits": hits}))
'''

POLICY = """version: "1.0"
name: egress-rebinding
backend: native
container:
  image: python:3.12-slim
  tmpfs:
    /tmp: "size=16M"
network:
  enabled: true
  allow: ["rebind.test"]
commands:
  allow: ["/usr/bin/python3"]
resources:
  memory: "256M"
  timeout: 90
"""


@unittest.skipUnless(os.geteuid() == 0, "namespaces and the native backend's full confinement need root")
@unittest.skipUnless(shutil.which("unshare") and shutil.which("ip"), "needs util-linux unshare and iproute2 ip")
class EgressRebinding(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="lsb-rebind-")
        self.policy = os.path.join(self.work, "policy.yaml")
        with open(self.policy, "w") as f:
            f.write(POLICY)

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def test_a_name_that_rebinds_to_loopback_after_the_check_never_reaches_it(self):
        proc = subprocess.run(["unshare", "-m", "-n", sys.executable, "-c", DRIVER, self.work, BINARY, IMAGES,
                               self.policy, PUBLIC], capture_output=True, text=True, timeout=300, cwd=SOURCE_DIR)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        result = json.loads(seen["stdout"]) if seen["stdout"].strip() else self.fail(seen)
        self.assertEqual(result["status"], "ok", result)
        attempts = json.loads(result["stdout"].strip().splitlines()[-1])
        # Nothing reached the loopback service, whatever DNS answered later.
        self.assertEqual(seen["hits"], [], seen)
        for status, body in attempts:
            self.assertNotEqual(status, 200, attempts)
            self.assertNotIn("loopback service", body, attempts)
        # The first connection went to the address its check passed (unreachable here: 502).
        self.assertEqual(attempts[0][0], 502, attempts)
        self.assertIn(f"connect to {PUBLIC}:", attempts[0][1], attempts)
        # The proxy did ask DNS (the name was resolved by it, not pinned), and a second A answer,
        # when it asked again for a later connection, was loopback: refused, not connected to.
        a_queries = [q for q in seen["queries"] if q == ["rebind.test", 1]]
        self.assertGreaterEqual(len(a_queries), 2, seen["queries"])
        refused = [a for a in result.get("alerts", []) if a.get("rule") == "network_denied"]
        self.assertTrue(any("127.0.0.1" in json.dumps(a) for a in refused), result.get("alerts"))


if __name__ == "__main__":
    unittest.main()
