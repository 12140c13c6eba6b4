"""Ownership through the real `llm-sandbox serve` with two tokens (DESIGN §11, docs/security.md
"Ownership"): every object a request creates belongs to its token; the other token gets 404 (or,
in lists and the live event stream, does not see it), never the object. Sessions (get, list,
execute, files, delete), executions (running, recent, by id), GET /v1/events, /mcp sessions and
the sessions its tools make. The audit log names the owner by the token's id, never the token."""
import json
import os
import queue
import socket
import tempfile
import threading
import time
import unittest

from daemon_harness import Daemon, request, skip_unless_daemon_suite

ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210"


class Events:
    """GET /v1/events as one token, read on a thread into (type, data) pairs."""

    def __init__(self, port, token):
        self.q = queue.Queue()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(f"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                          f"Authorization: Bearer {token}\r\n\r\n".encode())
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        if not self.ready.wait(10):
            raise AssertionError("GET /v1/events did not answer")

    def _run(self):
        buf = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return
                buf += chunk
                if not self.ready.is_set():
                    if b"\r\n\r\n" not in buf:
                        continue
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    assert b" 200 " in head.split(b"\r\n")[0], head
                    self.ready.set()
                # Chunk-size lines are hex digits alone on a line; SSE lines never look like that.
                for line in buf.split(b"\n"):
                    line = line.strip(b"\r")
                    if line.startswith(b"data: "):
                        try:
                            self.q.put(json.loads(line[6:]))
                        except ValueError:
                            pass
                buf = buf[buf.rfind(b"\n") + 1:]
        except OSError:
            pass

    def seen(self, wait=1.0):
        """Every event data received until `wait` seconds pass without a new one."""
        out = []
        while True:
            try:
                out.append(self.q.get(timeout=wait))
            except queue.Empty:
                return out

    def close(self):
        self.sock.close()


def _one_file_tar():
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("a.txt")
        info.size = 3
        t.addfile(info, io.BytesIO(b"bob"))
    return buf.getvalue()


class OwnershipTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.tmp = tempfile.mkdtemp(prefix="lsb-owner-")
        cls.audit = os.path.join(cls.tmp, "audit.jsonl")
        cls.d = Daemon("--audit-log", cls.audit, "--max-concurrency", "2",
                       env={"LLM_SANDBOX_TOKENS": f"{ALICE},{BOB}"})
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def call(self, token, method, path, body=None, **kw):
        return request(self.d.base, method, path, body=body, token=token, **kw)

    def assertNotFound(self, r):
        self.assertEqual(r.status, 404, r.body[:1000])
        self.assertEqual(r.json()["error"]["code"], "not_found")

    def test_sessions_belong_to_their_token(self):
        r = self.call(ALICE, "POST", "/v1/sessions", {"language": "python"})
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(self.call, ALICE, "DELETE", f"/v1/sessions/{sid}")
        self.assertEqual(self.call(ALICE, "POST", f"/v1/sessions/{sid}/execute", {"code": "secret = 42"}).status, 200)
        put = self.call(ALICE, "PUT", f"/v1/sessions/{sid}/files?path=/tmp/a.txt", b"alice's file", raw=True)
        self.assertEqual(put.status, 201, put.body)

        # Bob: absent, exactly as a session that never existed.
        self.assertNotFound(self.call(BOB, "GET", f"/v1/sessions/{sid}"))
        self.assertNotIn(sid, [s["session_id"] for s in self.call(BOB, "GET", "/v1/sessions").json()["sessions"]])
        self.assertNotFound(self.call(BOB, "POST", f"/v1/sessions/{sid}/execute", {"code": "print(secret)"}))
        self.assertNotFound(self.call(BOB, "GET", f"/v1/sessions/{sid}/files?path=/tmp/a.txt"))
        self.assertNotFound(self.call(BOB, "PUT", f"/v1/sessions/{sid}/files?path=/tmp/a.txt", b"bob", raw=True))
        # The archive routes too (issue 21): Bob can neither unpack into Alice's box nor read a tree of it.
        self.assertNotFound(self.call(BOB, "GET", f"/v1/sessions/{sid}/archive?path=/tmp"))
        self.assertNotFound(self.call(BOB, "PUT", f"/v1/sessions/{sid}/archive?path=/tmp", _one_file_tar(), raw=True))
        self.assertNotFound(self.call(BOB, "POST", f"/v1/sessions/{sid}/execute",
                                      {"command": ["python3", "-V"], "collect": ["/tmp/a.txt"]}))
        self.assertNotFound(self.call(BOB, "DELETE", f"/v1/sessions/{sid}"))
        never = self.call(BOB, "GET", "/v1/sessions/ses-0000000000000000")
        self.assertEqual(self.call(BOB, "GET", f"/v1/sessions/{sid}").json()["error"]["message"].replace(sid, "ID"),
                         never.json()["error"]["message"].replace("ses-0000000000000000", "ID"))

        # Alice's session is untouched by all of that.
        self.assertIn(sid, [s["session_id"] for s in self.call(ALICE, "GET", "/v1/sessions").json()["sessions"]])
        r = self.call(ALICE, "POST", f"/v1/sessions/{sid}/execute", {"code": "print(secret, open('/tmp/a.txt').read())"})
        self.assertEqual(r.json()["stdout"], "42 alice's file\n", r.body)
        self.assertEqual(self.call(ALICE, "GET", f"/v1/sessions/{sid}/files?path=/tmp/a.txt").body, b"alice's file")
        self.assertEqual(self.call(ALICE, "DELETE", f"/v1/sessions/{sid}").status, 204)

    def test_executions_and_events_belong_to_their_token(self):
        alice_events, bob_events = Events(self.d.port, ALICE), Events(self.d.port, BOB)
        self.addCleanup(alice_events.close)
        self.addCleanup(bob_events.close)
        r = self.call(ALICE, "POST", "/v1/execute", {"code": "print('alice output')"})
        self.assertEqual(r.status, 200, r.body)
        xid = r.json()["execution_id"]
        sid = self.call(ALICE, "POST", "/v1/sessions", {}).json()["session_id"]
        self.call(ALICE, "DELETE", f"/v1/sessions/{sid}")

        self.assertEqual(self.call(ALICE, "GET", f"/v1/executions/{xid}").json()["stdout"], "alice output\n")
        self.assertIn(xid, [e["execution_id"] for e in self.call(ALICE, "GET", "/v1/executions").json()["recent"]])
        self.assertNotFound(self.call(BOB, "GET", f"/v1/executions/{xid}"))
        view = self.call(BOB, "GET", "/v1/executions").json()
        self.assertNotIn(xid, [e["execution_id"] for e in view["recent"] + view["running"]])

        a = alice_events.seen()
        self.assertIn(xid, [e.get("execution_id") for e in a])
        self.assertIn(sid, [e.get("session_id") for e in a])
        b = bob_events.seen(wait=0.5)
        self.assertEqual([e for e in b if e.get("execution_id") == xid or e.get("session_id") == sid], [], b)

        # A running execution is not Bob's to see either.
        done = threading.Event()
        slow = {}

        def run_slow():
            slow["r"] = self.call(ALICE, "POST", "/v1/execute", {"code": "import time\ntime.sleep(3)"})
            done.set()
        threading.Thread(target=run_slow, daemon=True).start()
        deadline, running = time.time() + 10, []
        while time.time() < deadline and not running:
            running = self.call(ALICE, "GET", "/v1/executions").json()["running"]
            time.sleep(0.1)
        self.assertTrue(running, "Alice's running execution never showed")
        self.assertEqual(self.call(BOB, "GET", "/v1/executions").json()["running"], [])
        self.assertNotFound(self.call(BOB, "GET", f"/v1/executions/{running[0]['execution_id']}"))
        done.wait(30)

        # The audit log names the owner by the token's id, never by the token.
        with open(self.audit) as f:
            text = f.read()
        self.assertNotIn(ALICE, text)
        recs = [json.loads(line) for line in text.splitlines()]
        owner = next(r["owner"] for r in recs if r.get("execution_id") == xid)
        self.assertRegex(owner, r"^tok-[0-9a-f]{16}$")

    def mcp(self, token, sid, rid, method, params):
        h = {"Accept": "application/json, text/event-stream"}
        if sid:
            h["Mcp-Session-Id"] = sid
        return self.call(token, "POST", "/mcp", {"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                         headers=h)

    def test_mcp_sessions_and_their_tools_belong_to_their_token(self):
        init = self.mcp(ALICE, None, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                       "clientInfo": {"name": "t", "version": "1"}})
        self.assertEqual(init.status, 200, init.body)
        mcp_sid = init.headers["Mcp-Session-Id"]
        # Bob cannot ride Alice's MCP session, nor end it.
        self.assertEqual(self.mcp(BOB, mcp_sid, 2, "tools/list", {}).status, 404)
        self.assertEqual(self.call(BOB, "DELETE", "/mcp", headers={"Mcp-Session-Id": mcp_sid}).status, 404)

        r = self.mcp(ALICE, mcp_sid, 3, "tools/call", {"name": "session_create", "arguments": {}})
        created = r.json()["result"]
        self.assertFalse(created["isError"], created)
        sid = created["structuredContent"]["session_id"]
        self.addCleanup(self.call, ALICE, "DELETE", f"/v1/sessions/{sid}")
        # The tool made it as Alice: hers over REST, not Bob's.
        self.assertEqual(self.call(ALICE, "GET", f"/v1/sessions/{sid}").status, 200)
        self.assertNotFound(self.call(BOB, "GET", f"/v1/sessions/{sid}"))
        # Bob's own MCP session cannot reach it through the tools either.
        binit = self.mcp(BOB, None, 4, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                      "clientInfo": {"name": "t", "version": "1"}})
        bsid = binit.headers["Mcp-Session-Id"]
        r = self.mcp(BOB, bsid, 5, "tools/call", {"name": "session_execute",
                                                  "arguments": {"session_id": sid, "code": "print('bob was here')"}})
        res = r.json()["result"]
        self.assertTrue(res["isError"], res)
        self.assertIn("404", res["content"][0]["text"])
        r = self.mcp(BOB, bsid, 6, "tools/call", {"name": "session_close", "arguments": {"session_id": sid}})
        self.assertTrue(r.json()["result"]["isError"])
        self.assertEqual(self.call(ALICE, "GET", f"/v1/sessions/{sid}").status, 200)
        self.assertEqual(self.call(ALICE, "DELETE", "/mcp", headers={"Mcp-Session-Id": mcp_sid}).status, 204)


if __name__ == "__main__":
    unittest.main()
