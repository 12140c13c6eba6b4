"""A web page cannot drive or read the local daemon (issue 15, class 7; docs/security.md): the real
`llm-sandbox serve` on the native backend, sent what a browser sends for a cross-site page (simple
requests: text/plain and form posts, a body with no type; a foreign Origin) and for a DNS-rebinding
page (a foreign Host). Each is refused before anything runs; loopback origins, allowed origins and,
with tokens, any Host with a valid bearer still work."""
import http.client
import json
import time
import unittest

from daemon_harness import Daemon, request, skip_unless_daemon_suite

TOKEN = "web-origin-test-token"


def send(port, method, path, body=None, headers=None, host=None):
    """One request with exactly the given headers (Host included); (status, headers, parsed JSON)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Host": host or f"127.0.0.1:{port}"}
    h.update(headers or {})
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read(65536) if not r.getheader("Content-Type", "").startswith("text/event-stream") else b""
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        return r.status, dict(r.getheaders()), parsed
    finally:
        conn.close()


class WebOriginTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--allow-origin", "https://app.example.com")
        cls.addClassCleanup(cls.d.close)

    def executions(self):
        return request(self.d.base, "GET", "/v1/executions?limit=100").json()["recent"]

    def assert_refused(self, status, body, code, header):
        self.assertEqual(status, {"unsupported_media_type": 415, "forbidden": 403}[code], body)
        self.assertEqual(body["error"]["code"], code, body)
        self.assertIn(header, body["error"]["message"])

    def test_simple_cross_site_posts_run_nothing(self):
        before = len(self.executions())
        code = json.dumps({"code": "print('csrf')"})
        for ct in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                   "multipart/form-data; boundary=x"):
            status, _, body = send(self.d.port, "POST", "/v1/execute", code, {"Content-Type": ct})
            self.assert_refused(status, body, "unsupported_media_type", "Content-Type")
        # fetch(url, {method: "POST", mode: "no-cors", body: new Blob([...])}) sends no Content-Type.
        status, _, body = send(self.d.port, "POST", "/v1/execute", code)
        self.assert_refused(status, body, "unsupported_media_type", "Content-Type")
        # An empty form post still acts on bodyless routes: refused by its declared type.
        status, _, body = send(self.d.port, "POST", "/v1/sessions", "", {"Content-Type": "text/plain"})
        self.assert_refused(status, body, "unsupported_media_type", "Content-Type")
        for path in ("/v1/batch", "/mcp"):
            status, _, body = send(self.d.port, "POST", path, "{}", {"Content-Type": "text/plain"})
            self.assertEqual(status, 415, (path, body))
        self.assertEqual(len(self.executions()), before)
        self.assertEqual(request(self.d.base, "GET", "/v1/sessions").json()["sessions"], [])

    def test_foreign_origin_is_refused_on_every_route(self):
        before = len(self.executions())
        json_ct = {"Content-Type": "application/json"}
        for origin in ("http://evil.com", "https://attacker.example:8443", "null", "http://127.0.0.1.evil.com"):
            cases = [("POST", "/v1/execute", json.dumps({"code": "print(1)"}), json_ct),
                     ("POST", "/v1/sessions", "{}", json_ct), ("GET", "/v1/sessions", None, {}),
                     ("GET", "/v1/events", None, {}), ("GET", "/v1/executions", None, {}),
                     ("GET", "/", None, {}), ("GET", "/healthz", None, {}), ("GET", "/metrics", None, {}),
                     ("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}), json_ct),
                     ("OPTIONS", "/v1/execute", None, {"Access-Control-Request-Method": "POST"})]
            for method, path, body, headers in cases:
                status, h, parsed = send(self.d.port, method, path, body, dict(headers, Origin=origin))
                self.assert_refused(status, parsed, "forbidden", "Origin")
                self.assertNotIn("Access-Control-Allow-Origin", h)
        self.assertEqual(len(self.executions()), before)

    def test_foreign_host_is_refused_without_tokens(self):
        # What a DNS-rebinding page's requests carry: its own name, now resolving to 127.0.0.1.
        for host in (f"evil.com:{self.d.port}", "evil.com", f"127.0.0.1.nip.io:{self.d.port}",
                     f"localhost.evil.com:{self.d.port}", f"10.0.0.1:{self.d.port}"):
            for method, path in (("GET", "/v1/sessions"), ("GET", "/v1/events"), ("GET", "/v1/executions"),
                                 ("GET", "/"), ("GET", "/readyz")):
                status, _, body = send(self.d.port, method, path, host=host)
                self.assert_refused(status, body, "forbidden", "Host")
            status, _, body = send(self.d.port, "POST", "/v1/execute", json.dumps({"code": "print(1)"}),
                                   {"Content-Type": "application/json"}, host=host)
            self.assert_refused(status, body, "forbidden", "Host")

    def test_loopback_hosts_and_origins_are_served(self):
        for host in (f"127.0.0.1:{self.d.port}", f"localhost:{self.d.port}", "127.0.0.1", "LOCALHOST",
                     f"127.1.2.3:{self.d.port}", f"[::1]:{self.d.port}"):
            status, _, body = send(self.d.port, "GET", "/healthz", host=host)
            self.assertEqual(status, 200, (host, body))
        for origin in (f"http://127.0.0.1:{self.d.port}", "http://localhost:3000", "http://[::1]:1"):
            status, h, body = send(self.d.port, "POST", "/v1/execute", json.dumps({"code": "print(2)"}),
                                   {"Content-Type": "application/json", "Origin": origin})
            self.assertEqual((status, body["stdout"]), (200, "2\n"), origin)
            self.assertNotIn("Access-Control-Allow-Origin", h)  # served, but no other page may read it

    def test_allowed_origin_gets_cors(self):
        origin = "https://app.example.com"
        status, h, _ = send(self.d.port, "OPTIONS", "/v1/execute",
                            headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                     "Access-Control-Request-Headers": "content-type"})
        self.assertEqual(status, 204)
        self.assertEqual(h.get("Access-Control-Allow-Origin"), origin)
        self.assertIn("Content-Type", h.get("Access-Control-Allow-Headers", ""))
        status, h, body = send(self.d.port, "POST", "/v1/execute", json.dumps({"code": "print(3)"}),
                               {"Content-Type": "application/json", "Origin": origin})
        self.assertEqual((status, body["stdout"]), (200, "3\n"))
        self.assertEqual(h.get("Access-Control-Allow-Origin"), origin)
        self.assertEqual(h.get("Vary"), "Origin")
        # The allowance is for a JSON request still: a simple text/plain post is refused all the same.
        status, h, body = send(self.d.port, "POST", "/v1/execute", json.dumps({"code": "print(3)"}),
                               {"Content-Type": "text/plain", "Origin": origin})
        self.assertEqual(status, 415)

    def test_uploads_still_take_raw_bytes(self):
        r = request(self.d.base, "POST", "/v1/sessions", {})
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        try:
            for ct in ("application/octet-stream", "text/csv"):
                status, _, body = send(self.d.port, "PUT", f"/v1/sessions/{sid}/files?path=/tmp/a.csv", b"a,b\n1,2\n",
                                       {"Content-Type": ct})
                self.assertEqual(status, 201, body)
            status, _, body = send(self.d.port, "PUT", f"/v1/sessions/{sid}/files?path=/tmp/a.csv", b"x",
                                   {"Content-Type": "application/octet-stream", "Origin": "http://evil.com"})
            self.assertEqual(status, 403, body)
        finally:
            request(self.d.base, "DELETE", f"/v1/sessions/{sid}")


class WebOriginWithTokensTest(unittest.TestCase):
    """With tokens the daemon may be reached by any name (it may listen beyond loopback), so Host is
    not checked: a rebinding page has no token. The Origin and Content-Type rules still hold."""

    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon(env={"LLM_SANDBOX_TOKENS": TOKEN})
        cls.addClassCleanup(cls.d.close)

    def test_any_host_with_a_valid_bearer(self):
        auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        status, _, body = send(self.d.port, "POST", "/v1/execute", json.dumps({"code": "print(4)"}), auth,
                               host=f"sandbox.internal:{self.d.port}")
        self.assertEqual((status, body["stdout"]), (200, "4\n"))
        status, _, body = send(self.d.port, "GET", "/v1/sessions", host=f"evil.com:{self.d.port}")
        self.assertEqual(status, 401, body)
        status, _, body = send(self.d.port, "POST", "/v1/execute", json.dumps({"code": "print(4)"}),
                               dict(auth, Origin="http://evil.com"), host=f"evil.com:{self.d.port}")
        self.assertEqual(status, 403, body)
        self.assertIn("Origin", body["error"]["message"])
        status, _, body = send(self.d.port, "POST", "/v1/execute", json.dumps({"code": "print(4)"}),
                               dict(auth, **{"Content-Type": "text/plain"}))
        self.assertEqual(status, 415, body)


if __name__ == "__main__":
    unittest.main()
