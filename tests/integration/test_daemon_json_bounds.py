"""Issue 15, class 1 — one request crashes the daemon: the real `llm-sandbox serve` (native backend)
and `llm-sandbox mcp` on stdio get JSON nested 10^5 and 10^6 levels deep in every place a request
carries JSON (JSON API bodies, /mcp messages: params, id, jsonrpc, method, arguments, batches),
huge-but-flat values, and policies nested deeper than the YAML limit. Each is refused with an
answer that names the limit (HTTP 400/413, JSON-RPC -32600/-32700), and afterwards the process is
still the same process, /healthz answers and a real execution runs.

Before the fix, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[[[...100000...]]]}` on
/mcp ended the daemon with SIGSEGV: McpServer::HandleOne copied "params", and nlohmann's copy
constructor recurses once per level (src/server/mcp_protocol.cc:185 at 6e0e956).
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from daemon_harness import POLICY_DIR, Daemon, request, skip_unless_daemon_suite
from harness import BINARY, IMAGES, SOURCE_DIR

DEPTHS = (100_000, 1_000_000)
JSON = {"Content-Type": "application/json"}


def nested(n, open_="[", close="]"):
    return open_ * n + close * n


def nested_objects(n):
    return '{"a":' * n + "1" + "}" * n


def wide(n):
    return "[" + ",".join(["0"] * n) + "]"


class DaemonJsonBoundsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        # Bodies up to 16 MiB reach the JSON parser, so its own limits are what answers.
        cls.d = Daemon("--max-body", "16M")
        cls.addClassCleanup(cls.d.close)
        cls.pid = cls.d.proc.pid
        r = cls.post_raw("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                             "params": {"protocolVersion": "2025-06-18"}}))
        assert r.status == 200, r.body
        cls.mcp_session = r.headers["Mcp-Session-Id"]

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    @classmethod
    def post_raw(cls, path, text, headers=None):
        body = text.encode() if isinstance(text, str) else text
        return request(cls.d.base, "POST", path, body=body, raw=True, headers={**JSON, **(headers or {})})

    def mcp(self, text):
        return self.post_raw("/mcp", text, {"Mcp-Session-Id": self.mcp_session, "MCP-Protocol-Version": "2025-06-18"})

    def assertAlive(self):
        self.assertIsNone(self.d.proc.poll(), f"the daemon died ({self.d.proc.returncode}):\n{self.d.log()[-3000:]}")
        self.assertEqual(self.d.proc.pid, self.pid)
        r = request(self.d.base, "GET", "/healthz", timeout=10)
        self.assertEqual(r.status, 200)

    def assertApiRefusal(self, r, status, limit_words):
        self.assertEqual(r.status, status, r.body[:500])
        self.assertIn(limit_words, r.json()["error"]["message"])

    def assertRpcRefusal(self, r, status, code, limit_words):
        self.assertEqual(r.status, status, r.body[:500])
        err = r.json()["error"]
        self.assertEqual(err["code"], code)
        self.assertIn(limit_words, err["message"])

    def test_deep_json_api_bodies_are_400_naming_the_limit(self):
        for n in DEPTHS:
            for path, text in [
                ("/v1/execute", '{"code":"print(1)","env":' + nested(n) + "}"),
                ("/v1/execute", '{"code":' + nested(n, "{", "}") + "}"),
                ("/v1/execute", nested(n)),
                ("/v1/execute", "[" * n),  # never closed
                ("/v1/batch", '{"tasks":[' + nested(n) + "]}"),
                ("/v1/sessions", '{"policy":' + nested(n) + "}"),
            ]:
                with self.subTest(path=path, depth=n, start=text[:30]):
                    self.assertApiRefusal(self.post_raw(path, text), 400, "limit of 64 levels")
                    self.assertAlive()
        r = self.post_raw("/v1/execute", '{"code":"1","zz":' + nested_objects(100_000) + "}")
        self.assertApiRefusal(r, 400, "limit of 64 levels")
        self.assertAlive()

    def test_deep_mcp_messages_are_invalid_requests_naming_the_limit(self):
        for n in DEPTHS:
            deep = nested(n)
            for text in [
                '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":' + deep + "}",  # the reported crash
                '{"jsonrpc":"2.0","method":"initialize","id":' + deep + "}",
                '{"jsonrpc":"2.0","id":1,"method":' + deep + "}",
                '{"jsonrpc":' + deep + ',"id":1,"method":"ping"}',
                '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":'
                '{"code":"print(1)","x":' + deep + "}}}",
                "[" + deep + "]",
                '{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":' + nested_objects(n // 10) + "}}",
            ]:
                with self.subTest(depth=n, start=text[:60]):
                    self.assertRpcRefusal(self.mcp(text), 400, -32600, "limit of 64 levels")
                    self.assertAlive()
        # Before any session too (an initialize is looked for in the message first).
        r = self.post_raw("/mcp", '{"jsonrpc":"2.0","method":"initialize","id":' + nested(100_000) + "}")
        self.assertRpcRefusal(r, 400, -32600, "limit of 64 levels")
        self.assertAlive()

    def test_huge_but_flat_values_are_413_naming_the_limit(self):
        flat = wide((1 << 20) + 1)  # one element past the limit, 2 MiB of text
        self.assertApiRefusal(self.post_raw("/v1/execute", '{"code":"1","env":' + flat + "}"), 413,
                              "limit of 1048576 array elements")
        self.assertAlive()
        members = "{" + ",".join(f'"k{i}":0' for i in range((1 << 20) + 1)) + "}"
        self.assertApiRefusal(self.post_raw("/v1/execute", '{"code":"1","env":' + members + "}"), 413,
                              "limit of 1048576")
        self.assertAlive()
        self.assertRpcRefusal(self.mcp('{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":' + flat + "}}"),
                              413, -32600, "limit of 1048576")
        self.assertAlive()
        # Over --max-body: refused by the HTTP server before it is read.
        r = self.post_raw("/v1/execute", '{"code":"' + "x" * (17 << 20) + '"}')
        self.assertEqual(r.status, 413, r.body[:300])
        self.assertAlive()

    def test_deep_looking_strings_are_data_and_still_run(self):
        code = "s = " + json.dumps("[" * 50_000 + "{" * 50_000) + "\nprint(len(s))"
        r = self.post_raw("/v1/execute", json.dumps({"code": code}))
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.json()["stdout"], "100000\n")
        r = self.mcp(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                 "params": {"name": "execute_code", "arguments": {"code": "print(6*7)"}}}))
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertIn("42", r.json()["result"]["content"][0]["text"])
        self.assertAlive()

    def test_deep_yaml_policy_is_refused_on_reload_and_the_old_set_kept(self):
        pdir = tempfile.mkdtemp(prefix="lsb-policies-")
        self.addCleanup(shutil.rmtree, pdir)
        shutil.copy(os.path.join(POLICY_DIR, "code-sandbox.yaml"), pdir)
        d = Daemon(policies=pdir)
        self.addCleanup(d.close)
        for i, body in enumerate([
            "commands:\n  allow: " + nested(100_000) + "\n",
            "env:\n" + "".join("  " * (k + 1) + f"k{k}:\n" for k in range(200)),
            "x:\n" + "- " * 300_000 + "a\n",  # compact nested sequences: one level per 2 bytes
        ]):
            with open(os.path.join(pdir, "deep.yaml"), "w") as f:
                f.write("version: 1\nname: deep\n" + body)
            seen = len(d.log())
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 15
            while "reload failed" not in d.log()[seen:] and time.time() < deadline:
                time.sleep(0.1)
            with self.subTest(case=i):
                self.assertIsNone(d.proc.poll(), d.log()[-2000:])
                self.assertRegex(d.log()[seen:], r"deep\.yaml:\d+:\d+: the policy is refused: nested deeper than "
                                                 r"the limit of 64 levels")
                self.assertEqual(request(d.base, "GET", "/healthz").status, 200)
                self.assertEqual(request(d.base, "GET", "/v1/policies/code-sandbox").status, 200)
                self.assertEqual(request(d.base, "GET", "/v1/policies/deep").status, 404)
        # A deep policy given at start is a clear error and exit 2, not a crash.
        p = subprocess.run([BINARY, "policy", "check", os.path.join(pdir, "deep.yaml")], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("limit of 64 levels", p.stdout + p.stderr)
        d.stop()
        start = Daemon(policies=pdir, wait=False)
        self.addCleanup(start.close)
        self.assertEqual(start.proc.wait(timeout=60), 2, start.log())
        self.assertIn("limit of 64 levels", start.log())


class McpStdioJsonBoundsTest(unittest.TestCase):
    """`llm-sandbox mcp` reads one message per line: deep lines, a line over the 10 MiB cap, and
    then ordinary requests on the same process."""

    def setUp(self):
        skip_unless_daemon_suite()
        self.proc = subprocess.Popen([BINARY, "mcp", "--policies", POLICY_DIR, "--images", IMAGES],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=SOURCE_DIR)
        self.addCleanup(self.stop)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()

    def call(self, line):
        data = line.encode() if isinstance(line, str) else line
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        self.assertTrue(out, f"llm-sandbox mcp gave no answer (exit {self.proc.poll()})")
        return json.loads(out)

    def test_deep_and_huge_lines_are_answered_and_the_server_goes_on(self):
        ok = self.call(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"protocolVersion": "2025-06-18"}}))
        self.assertIn("result", ok)
        for n in DEPTHS:
            for text in ['{"jsonrpc":"2.0","id":2,"method":"tools/call","params":' + nested(n) + "}",
                         '{"jsonrpc":"2.0","id":' + nested(n) + ',"method":"ping"}',
                         "[" * n]:
                r = self.call(text)
                self.assertEqual(r["error"]["code"], -32600, r)
                self.assertIn("limit of 64 levels", r["error"]["message"])
                self.assertIsNone(self.proc.poll())
        r = self.call('{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":' + wide((1 << 20) + 1) + "}}")
        self.assertIn("limit of 1048576", r["error"]["message"])
        r = self.call('{"jsonrpc":"2.0","id":4,"method":"ping","params":{"s":"' + "x" * (11 << 20) + '"}}')
        self.assertEqual(r["error"]["code"], -32600, r)
        self.assertIn("limit of 10485760 bytes", r["error"]["message"])
        self.assertEqual(self.call('{"jsonrpc":"2.0","id":5,"method":"ping"}'), {"jsonrpc": "2.0", "id": 5, "result": {}})
        r = self.call(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                                  "params": {"name": "execute_code", "arguments": {"code": "print(6*7)"}}}))
        self.assertIn("42", r["result"]["content"][0]["text"])
        self.assertIsNone(self.proc.poll())


if __name__ == "__main__":
    unittest.main()
