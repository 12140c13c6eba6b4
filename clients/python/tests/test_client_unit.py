"""Protocol-level unit tests of the llm_sandbox client (sync and asyncio).

The daemon is replaced by a small fake HTTP server built here with http.server. That checks what
the client itself is responsible for: the request bodies, paths and headers it sends, how every
error status maps to its exception, Retry-After handling, SSE parsing (pieces split anywhere,
CRLF, comments), chunked and Content-Length framing in the asyncio transport, and what the
LangChain and LlamaIndex adapters hand their frameworks (stand-ins of the tool classes). It is NOT a
substitute for tests/integration/test_python_client.py, which runs the client against the real
`llm-sandbox serve`.

Run: python3 -m unittest discover -s clients/python/tests -v
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib.util
import json
import os
import socket
import sys
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import llm_sandbox  # noqa: E402
from llm_sandbox import (AsyncSandboxClient, BadRequest, Conflict, ConnectionFailed,  # noqa: E402
                         Forbidden, MethodNotAllowed, NotFound, PayloadTooLarge, PolicyViolation,
                         ProtocolError, RateLimited, RequestTimedOut, SandboxClient, SandboxError,
                         SandboxFailure, ServerError, Unauthorized, Unavailable,
                         UnsupportedMediaType)
from llm_sandbox.sse import SSEParser  # noqa: E402

RESULT = {"stdout": "42\n", "stderr": "", "exit_code": 0, "status": "ok", "duration_ms": 12,
          "cpu_ms": 9, "memory_peak_bytes": 1 << 20, "alerts": [], "truncated": False,
          "execution_id": "ex-1", "backend": "native", "policy": "code-sandbox"}
SESSION = {"session_id": "s-1", "policy": "code-sandbox", "language": "python",
           "created_at": "2026-01-01T00:00:00Z", "last_used_at": "2026-01-01T00:00:00Z",
           "expires_at": "2026-01-01T01:00:00Z", "executions": 0, "state": "ready"}


class Request:
    def __init__(self, method: str, target: str, headers: Dict[str, str], body: bytes) -> None:
        self.method = method
        self.target = target
        parts = urlsplit(target)
        self.path = parts.path
        self.query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


# A reply: (status, headers, body). body bytes -> Content-Length; a list of bytes -> chunked,
# one chunk per item with a short pause, to exercise incremental parsing; "eof:" prefix of a
# str -> no length at all, the body ends when the connection closes.
Reply = Tuple[int, Dict[str, str], Union[bytes, List[bytes]]]
Script = Callable[[Request], Reply]


def json_reply(status: int, obj: Any, headers: Optional[Dict[str, str]] = None) -> Reply:
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return status, h, json.dumps(obj).encode()


def error_reply(status: int, code: str, message: str, **headers: str) -> Reply:
    return json_reply(status, {"error": {"code": code, "message": message}},
                      {k.replace("_", "-"): v for k, v in headers.items()})


class FakeDaemon:
    """An http.server on 127.0.0.1:<free port>; each test sets .script and reads .requests."""

    def __init__(self) -> None:
        self.requests: List[Request] = []
        self.script: Script = lambda req: json_reply(200, RESULT)
        # The clients look a policy's timeout up (GET /v1/policies[/<name>]) before a call that
        # names none; the fake answers those itself, logged apart, unless a test turns it off.
        self.answer_policy_lookups = True
        self.policy_timeout_ms: Optional[int] = 30000
        self.lookups: List[Request] = []
        # execute() is submit() + result(): the fake plays the daemon's asynchronous form, keeping
        # the script's 200 answer under an id (202) and answering it from GET /v1/executions/{id}
        # (logged apart in .polls), so scripts keep answering as the synchronous form did.
        self.kept: Dict[str, Reply] = {}
        self.polls: List[Request] = []
        self.poll_delay = 0.0  # seconds a long-poll takes (the program "runs" that long)
        self.drop_polls = 0    # how many long-polls get their connection closed unanswered
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(self.command, self.path,
                              {k.lower(): v for k, v in self.headers.items()}, body)
                if fake.answer_policy_lookups and req.method == "GET" and \
                        req.path.startswith("/v1/policies"):
                    fake.lookups.append(req)
                    status, headers, payload = fake.policy_answer(req)
                elif req.method == "GET" and req.path.startswith("/v1/executions/") and \
                        req.path.rsplit("/", 1)[1] in fake.kept:
                    fake.polls.append(req)
                    time.sleep(fake.poll_delay)
                    if fake.drop_polls > 0:
                        fake.drop_polls -= 1
                        self.close_connection = True
                        return
                    status, headers, payload = fake.finished_view(req.path.rsplit("/", 1)[1])
                else:
                    fake.requests.append(req)
                    status, headers, payload = fake.script(req)
                    if req.method == "POST" and req.path == "/v1/execute" and \
                            req.query.get("async") == "true" and status == 200:
                        status, headers, payload = fake.keep(status, headers, payload)
                try:
                    self._reply(status, headers, payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout tests)
                self.close_connection = True

            def _reply(self, status: int, headers: Dict[str, str],
                       payload: Union[bytes, List[bytes]]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Connection", "close")
                if isinstance(payload, list):
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in payload:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.flush()
                        time.sleep(0.005)
                    self.wfile.write(b"0\r\n\r\n")
                elif headers.get("X-No-Length"):
                    self.end_headers()
                    self.wfile.write(payload)
                else:
                    if status != 204:
                        self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def policy_answer(self, req: Request) -> Reply:
        if req.path == "/v1/policies":
            return json_reply(200, {"policies": [{"name": "code-sandbox", "default": True},
                                                 {"name": "python-strict", "default": False}]})
        name = req.path.rsplit("/", 1)[1]
        resources = {} if self.policy_timeout_ms is None else {"timeout_ms": self.policy_timeout_ms}
        return json_reply(200, {"name": name, "policy": {"resources": resources}, "explain": []})

    def keep(self, status: int, headers: Dict[str, str], payload: Union[bytes, List[bytes]]) -> Reply:
        kept_id = f"ex-kept-{len(self.kept)}"
        self.kept[kept_id] = (status, headers, payload)
        return json_reply(202, {"execution_id": kept_id, "state": "queued"})

    def finished_view(self, kept_id: str) -> Reply:
        _, headers, payload = self.kept[kept_id]
        if isinstance(payload, list):
            payload = b"".join(payload)
        try:
            result = json.loads(payload)
        except ValueError:  # a garbled answer stays garbled
            return 200, headers, payload
        return json_reply(200, {"execution_id": kept_id, "state": "finished", "result": result})

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def sse(*events: Tuple[str, Any]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def split_every(data: bytes, n: int) -> List[bytes]:
    return [data[i:i + n] for i in range(0, len(data), n)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ERROR_CASES = [
    (400, "bad_request", BadRequest), (401, "unauthorized", Unauthorized),
    (403, "forbidden", Forbidden), (404, "not_found", NotFound),
    (405, "method_not_allowed", MethodNotAllowed), (409, "conflict", Conflict),
    (413, "payload_too_large", PayloadTooLarge), (415, "unsupported_media_type", UnsupportedMediaType),
    (429, "too_many_requests", RateLimited), (500, "internal", ServerError),
    (502, "sandbox_error", SandboxFailure), (503, "unavailable", Unavailable),
]


class FakeServerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = FakeDaemon()
        self.addCleanup(self.fake.stop)
        os.environ.pop("LLM_SANDBOX_TOKEN", None)

    def client(self, **kw: Any) -> SandboxClient:
        kw.setdefault("policy", "code-sandbox")
        return SandboxClient(base_url=self.fake.url, **kw)


class SyncClientTest(FakeServerTest):
    def test_requirements_example_verbatim(self) -> None:
        code = "print(6 * 7)"
        client = SandboxClient(base_url=self.fake.url, policy="code-sandbox")
        response = client.execute(code)
        self.assertEqual(response["stdout"], "42\n")
        self.assertEqual(response["exit_code"], 0)
        req = self.fake.requests[0]
        self.assertEqual((req.method, req.path), ("POST", "/v1/execute"))
        self.assertEqual(req.headers["content-type"], "application/json")
        self.assertEqual(req.json(), {"code": code, "policy": "code-sandbox"})
        self.assertNotIn("authorization", req.headers)

    def test_execute_options_and_files(self) -> None:
        self.client(token="t0k").execute(
            "x", language="python", stdin="in", timeout=5, env={"A": 1}, memory="64M", cpu=0.25,
            policy="python-strict", files={"/tmp/a.txt": "héllo", "/tmp/b.bin": b"\x00\xff"})
        req = self.fake.requests[0]
        self.assertEqual(req.headers["authorization"], "Bearer t0k")
        body = req.json()
        self.assertEqual(body["policy"], "python-strict")
        self.assertEqual(body["language"], "python")
        self.assertEqual(body["stdin"], "in")
        self.assertEqual(body["timeout"], 5)
        self.assertEqual(body["env"], {"A": "1"})
        self.assertEqual(body["memory"], "64M")
        self.assertEqual(body["cpu"], 0.25)
        self.assertEqual(body["files"][0], {"path": "/tmp/a.txt", "content": "héllo"})
        self.assertEqual(base64.b64decode(body["files"][1]["content_base64"]), b"\x00\xff")

    def test_files_list_form_passes_through(self) -> None:
        self.client().execute("x", files=[{"path": "/tmp/c", "content_base64": "AAE="}])
        self.assertEqual(self.fake.requests[0].json()["files"],
                         [{"path": "/tmp/c", "content_base64": "AAE="}])

    def test_token_from_environment(self) -> None:
        os.environ["LLM_SANDBOX_TOKEN"] = "envtok"
        self.addCleanup(os.environ.pop, "LLM_SANDBOX_TOKEN", None)
        self.client().health()
        self.assertEqual(self.fake.requests[0].headers["authorization"], "Bearer envtok")

    def test_no_policy_means_server_default(self) -> None:
        SandboxClient(base_url=self.fake.url, policy=None).execute("x")
        self.assertNotIn("policy", self.fake.requests[0].json())

    def test_every_error_status_maps_to_its_class(self) -> None:
        for status, code, cls in ERROR_CASES:
            with self.subTest(status=status):
                extra = {"Retry_After": "7"} if status in (429, 503) else {}
                self.fake.script = lambda req, s=status, c=code, e=extra: error_reply(
                    s, c, f"{c} happened; fix it", **e)
                with self.assertRaises(cls) as cm:
                    self.client(retries=0).execute("x")
                err = cm.exception
                self.assertIsInstance(err, SandboxError)
                self.assertEqual(err.status, status)
                self.assertEqual(err.code, code)
                self.assertEqual(err.message, f"{code} happened; fix it")
                if status in (429, 503):
                    self.assertEqual(err.retry_after, 7.0)

    def test_policy_violation_is_forbidden(self) -> None:
        self.assertIs(PolicyViolation, Forbidden)
        self.fake.script = lambda req: error_reply(
            403, "forbidden", "timeout 60s exceeds the policy's 30s; a request may only lower it")
        with self.assertRaises(PolicyViolation) as cm:
            self.client().execute("x", timeout=60)
        self.assertIn("timeout", str(cm.exception))

    def test_non_json_error_body_still_typed(self) -> None:
        self.fake.script = lambda req: (502, {"Content-Type": "text/html"}, b"<h1>Bad gateway</h1>")
        with self.assertRaises(SandboxFailure) as cm:
            self.client().execute("x")
        self.assertIn("Bad gateway", cm.exception.message)
        self.fake.script = lambda req: (418, {}, b"")
        with self.assertRaises(BadRequest):
            self.client().execute("x")
        self.fake.script = lambda req: (599, {}, b"")
        with self.assertRaises(ServerError):
            self.client().execute("x")

    def test_success_with_bad_json_is_protocol_error(self) -> None:
        self.fake.script = lambda req: (200, {}, b"not json")
        with self.assertRaises(ProtocolError):
            self.client().execute("x")

    def test_connection_failed_names_url_and_serve(self) -> None:
        url = f"http://127.0.0.1:{free_port()}"
        with self.assertRaises(ConnectionFailed) as cm:
            SandboxClient(base_url=url).execute("x")
        self.assertIn(url, str(cm.exception))
        self.assertIn("llm-sandbox serve", str(cm.exception))
        self.assertIsNone(cm.exception.status)

    def test_http_timeout(self) -> None:
        def slow(req: Request) -> Reply:
            time.sleep(1.0)
            return json_reply(200, RESULT)
        self.fake.script = slow
        with self.assertRaises(RequestTimedOut):
            self.client(timeout=0.2).health()

    def test_long_poll_outlasts_the_client_timeout(self) -> None:
        # execute() is submit() + result(): the 202 comes at once, then the long-poll's HTTP wait
        # is the client's timeout plus the wait it asked for, so a program running longer than the
        # client's 0.2 s is waited for, with no policy lookup needed.
        self.fake.poll_delay = 0.6
        self.assertEqual(self.client(timeout=0.2).execute("x", timeout=1)["exit_code"], 0)
        self.assertEqual(self.client(timeout=0.2).execute("x")["exit_code"], 0)
        self.assertEqual(self.fake.lookups, [])
        self.assertEqual(len(self.fake.polls), 2)
        self.assertTrue(all(float(p.query["wait"]) > 0 for p in self.fake.polls), self.fake.polls)

    def test_a_broken_long_poll_is_asked_again_by_id(self) -> None:
        self.fake.drop_polls = 2  # the first two long-polls' connections close without an answer
        self.assertEqual(self.client().execute("x")["stdout"], "42\n")
        self.assertEqual(len(self.fake.polls), 3)
        self.assertEqual(len({p.path for p in self.fake.polls}), 1)
        self.assertEqual([r.path for r in self.fake.requests], ["/v1/execute"], "no code ran twice")

    def test_busy_policy_lookup_is_neither_retried_nor_remembered(self) -> None:
        self.fake.answer_policy_lookups = False
        self.fake.script = lambda req: (error_reply(503, "unavailable", "draining", Retry_After="0")
                                        if req.method == "GET" else json_reply(200, {"results": [RESULT]}))
        c = self.client()
        self.assertEqual(c.batch(["x"])[0]["stdout"], "42\n")
        self.assertEqual(c.batch(["x"])[0]["stdout"], "42\n")
        self.assertEqual([(r.method, r.path) for r in self.fake.requests],
                         [("GET", "/v1/policies/code-sandbox"), ("POST", "/v1/batch")] * 2)

    def test_default_policy_timeout_and_batch_and_session(self) -> None:
        def slow(req: Request) -> Reply:
            if req.path == "/v1/sessions":
                return json_reply(201, SESSION)
            time.sleep(0.6)
            if req.path == "/v1/batch":
                return json_reply(200, {"results": [RESULT]})
            return json_reply(200, RESULT)
        self.fake.script = slow
        self.fake.policy_timeout_ms = 1000
        c = SandboxClient(base_url=self.fake.url, policy=None, timeout=0.2)
        self.assertEqual(c.batch(["x"])[0]["exit_code"], 0)
        self.assertEqual([r.path for r in self.fake.lookups],
                         ["/v1/policies", "/v1/policies/code-sandbox"])
        self.assertEqual(self.client(timeout=0.2).session().execute("x")["exit_code"], 0)

    def test_retries_honor_retry_after(self) -> None:
        answers = [error_reply(429, "too_many_requests", "queue full", Retry_After="0"),
                   error_reply(503, "unavailable", "starting", Retry_After="0.1"),
                   json_reply(200, RESULT)]
        self.fake.script = lambda req: answers.pop(0)
        t0 = time.monotonic()
        self.assertEqual(self.client(retries=2).execute("x")["stdout"], "42\n")
        self.assertGreaterEqual(time.monotonic() - t0, 0.1)
        self.assertEqual(len(self.fake.requests), 3)
        self.assertEqual(self.fake.requests[2].json(), self.fake.requests[0].json())

    def test_retries_on_by_default_and_off_with_zero(self) -> None:
        answers = [error_reply(429, "too_many_requests", "full", Retry_After="0")] * 3 + [
            json_reply(200, RESULT)]
        self.fake.script = lambda req: answers.pop(0)
        self.assertEqual(self.client().execute("x")["stdout"], "42\n")
        self.assertEqual(len(self.fake.requests), 4)
        self.fake.requests.clear()
        self.fake.script = lambda req: error_reply(429, "too_many_requests", "full", Retry_After="0")
        with self.assertRaises(RateLimited):
            self.client(retries=0).execute("x")
        self.assertEqual(len(self.fake.requests), 1)

    def test_retries_bounded_by_count_and_budget(self) -> None:
        self.fake.script = lambda req: error_reply(429, "too_many_requests", "full", Retry_After="0")
        with self.assertRaises(RateLimited):
            self.client(retries=2).execute("x")
        self.assertEqual(len(self.fake.requests), 3)
        # A Retry-After longer than the whole budget is not waited for at all.
        self.fake.requests.clear()
        self.fake.script = lambda req: error_reply(429, "too_many_requests", "full", Retry_After="60")
        t0 = time.monotonic()
        with self.assertRaises(RateLimited) as cm:
            self.client().execute("x")
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(cm.exception.retry_after, 60.0)
        self.assertEqual(len(self.fake.requests), 1)
        # Waits of 0.3 s (plus up to 20%) in a budget of 1 s: two or three retries, never a
        # fourth.
        self.fake.requests.clear()
        self.fake.script = lambda req: error_reply(503, "unavailable", "busy", Retry_After="0.3")
        t0 = time.monotonic()
        with self.assertRaises(Unavailable):
            self.client(retry_budget=1.0).execute("x")
        self.assertIn(len(self.fake.requests), (3, 4))
        self.assertGreaterEqual(time.monotonic() - t0, 0.6)
        # max_retry_wait bounds one wait: a Retry-After above it is raised at once, never
        # retried sooner than asked.
        self.fake.requests.clear()
        self.fake.script = lambda req: error_reply(429, "too_many_requests", "full", Retry_After="1")
        with self.assertRaises(RateLimited):
            self.client(max_retry_wait=0.5).execute("x")
        self.assertEqual(len(self.fake.requests), 1)

    def test_retry_after_http_date(self) -> None:
        import email.utils
        when = email.utils.formatdate(time.time() + 2, usegmt=True)
        answers = [error_reply(429, "too_many_requests", "full", Retry_After=when),
                   json_reply(200, RESULT)]
        self.fake.script = lambda req: answers.pop(0)
        t0 = time.monotonic()
        self.assertEqual(self.client().execute("x")["stdout"], "42\n")
        # The date has a 1 s resolution: at least ~1 s of the 2 s remain.
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        from llm_sandbox.errors import parse_retry_after
        self.assertEqual(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0)  # past
        self.assertAlmostEqual(parse_retry_after(email.utils.formatdate(1000.0 + 30, usegmt=True),
                                                 now=1000.0), 30.0)
        self.assertIsNone(parse_retry_after("soon"))
        self.assertEqual(parse_retry_after(" 5 "), 5.0)

    def test_post_not_retried_on_a_proxy_503(self) -> None:
        # A bare 503 (no API error body) does not prove the daemon never ran the request: an
        # execute is not sent again; an idempotent GET is.
        self.fake.script = lambda req: (503, {"Retry-After": "0"}, b"<h1>upstream down</h1>")
        with self.assertRaises(Unavailable):
            self.client().execute("x")
        self.assertEqual(len(self.fake.requests), 1)
        answers = [(503, {"Retry-After": "0"}, b"<h1>upstream down</h1>"),
                   json_reply(200, {"status": "ok"})]
        self.fake.requests.clear()
        self.fake.script = lambda req: answers.pop(0)
        self.assertEqual(self.client().health(), {"status": "ok"})
        self.assertEqual(len(self.fake.requests), 2)

    def test_other_errors_not_retried(self) -> None:
        self.fake.script = lambda req: error_reply(502, "sandbox_error", "init died")
        with self.assertRaises(SandboxFailure):
            self.client(retries=3).execute("x")
        self.assertEqual(len(self.fake.requests), 1)

    def test_json_bodies_say_so(self) -> None:
        # The daemon refuses a JSON route's body without Content-Type: application/json.
        def script(req: Request) -> Reply:
            if req.path == "/v1/sessions":
                return json_reply(201, SESSION)
            if req.path == "/v1/batch":
                return json_reply(200, {"results": []})
            return json_reply(200, RESULT)
        self.fake.script = script
        c = self.client()
        c.execute("x")
        c.batch([])
        s = c.session()
        s.execute("x")
        for req in self.fake.requests:
            self.assertEqual(req.headers.get("content-type"), "application/json", req.target)
        s.upload("/tmp/f", b"x")
        self.assertEqual(self.fake.requests[-1].headers["content-type"], "application/octet-stream")

    def test_stream_events_in_order(self) -> None:
        alert = {"kind": "network", "severity": "critical", "rule": "network_attempt",
                 "message": "connect 127.0.0.1:6379", "address": "127.0.0.1:6379"}
        payload = (b": keep-alive\n\n" + sse(("stdout", {"data": "a\n"}), ("stderr", {"data": "e"}),
                                               ("alert", alert), ("stdout", {"data": "ü\n"}),
                                               ("result", RESULT)))
        self.fake.script = lambda req: (200, {"Content-Type": "text/event-stream"},
                                        split_every(payload, 7))
        events = list(self.client().stream("print('a')", timeout=3))
        self.assertEqual(events, [("stdout", "a\n"), ("stderr", "e"), ("alert", alert),
                                  ("stdout", "ü\n"), ("result", RESULT)])
        self.assertEqual(events[-1].kind, "result")
        req = self.fake.requests[0]
        self.assertEqual(req.target, "/v1/execute?stream=true")
        self.assertEqual(req.headers["accept"], "text/event-stream")
        self.assertEqual(req.json()["timeout"], 3)

    def test_stream_error_event_raises_typed(self) -> None:
        payload = sse(("stdout", {"data": "x"}),
                      ("error", {"error": {"code": "sandbox_error", "message": "init died"}}))
        self.fake.script = lambda req: (200, {"Content-Type": "text/event-stream"}, [payload])
        it = self.client().stream("x")
        self.assertEqual(next(it), ("stdout", "x"))
        with self.assertRaises(SandboxFailure) as cm:
            next(it)
        self.assertEqual(cm.exception.message, "init died")

    def test_stream_http_error_and_missing_result(self) -> None:
        self.fake.script = lambda req: error_reply(404, "not_found", "no policy 'nope'")
        with self.assertRaises(NotFound):
            list(self.client().stream("x", policy="nope"))
        self.fake.script = lambda req: (200, {"Content-Type": "text/event-stream"},
                                        [sse(("stdout", {"data": "x"}))])
        with self.assertRaises(ProtocolError):
            list(self.client().stream("x"))

    def test_stream_retry_before_events(self) -> None:
        answers = [error_reply(503, "unavailable", "busy", Retry_After="0"),
                   (200, {"Content-Type": "text/event-stream"}, [sse(("result", RESULT))])]
        self.fake.script = lambda req: answers.pop(0)
        self.assertEqual(list(self.client(retries=1).stream("x")), [("result", RESULT)])

    def test_batch(self) -> None:
        results = [dict(RESULT, stdout="1\n"),
                   {"error": {"code": "forbidden", "message": "memory 1G exceeds 256M"}},
                   dict(RESULT, stdout="3\n")]
        self.fake.script = lambda req: json_reply(200, {"results": results})
        tasks = ["print(1)", {"code": "print(2)", "memory": "1G"},
                 {"code": "print(3)", "policy": "python-strict", "files": {"/tmp/x": b"\x01"}}]
        got = self.client().batch(tasks, concurrency=2)
        self.assertEqual(got, results)
        body = self.fake.requests[0].json()
        self.assertEqual(self.fake.requests[0].path, "/v1/batch")
        self.assertEqual(body["concurrency"], 2)
        self.assertEqual(body["tasks"][0], {"code": "print(1)", "policy": "code-sandbox"})
        self.assertEqual(body["tasks"][1], {"code": "print(2)", "memory": "1G",
                                            "policy": "code-sandbox"})
        self.assertEqual(body["tasks"][2]["policy"], "python-strict")
        self.assertEqual(body["tasks"][2]["files"], [{"path": "/tmp/x", "content_base64": "AQ=="}])
        with self.assertRaises(Forbidden):
            self.client().batch(tasks, raise_on_error=True)
        with self.assertRaises(TypeError):
            self.client().batch([{"language": "python"}])

    def test_session_lifecycle(self) -> None:
        files: Dict[str, bytes] = {}

        def script(req: Request) -> Reply:
            if req.method == "POST" and req.path == "/v1/sessions":
                return json_reply(201, SESSION)
            if req.path == "/v1/sessions/s-1/execute":
                return json_reply(200, RESULT)
            if req.path == "/v1/sessions/s-1/files":
                if req.method == "PUT":
                    files[req.query["path"]] = req.body
                    return json_reply(201, {"path": req.query["path"], "size": len(req.body)})
                if req.query["path"] in files:
                    return 200, {"Content-Type": "application/octet-stream"}, files[req.query["path"]]
                return error_reply(404, "not_found", "no such file")
            if req.method == "GET" and req.path == "/v1/sessions/s-1":
                return json_reply(200, dict(SESSION, executions=1))
            if req.method == "GET" and req.path == "/v1/sessions":
                return json_reply(200, {"sessions": [SESSION]})
            if req.method == "DELETE" and req.path == "/v1/sessions/s-1":
                return 204, {}, b""
            return error_reply(404, "not_found", req.path)

        self.fake.script = script
        client = self.client()
        with client.session(language="python", idle_timeout=30, max_lifetime=120) as s:
            self.assertEqual(s.id, "s-1")
            self.assertEqual(self.fake.requests[0].json(), {
                "policy": "code-sandbox", "language": "python", "idle_timeout": 30,
                "max_lifetime": 120})
            self.assertEqual(s.execute("x = 1", stdin="i", timeout=2)["stdout"], "42\n")
            self.assertEqual(self.fake.requests[-1].json(), {"code": "x = 1", "stdin": "i",
                                                             "timeout": 2})
            self.assertEqual(s.upload("/tmp/my file.bin", b"\x00\x01\xff"),
                             {"path": "/tmp/my file.bin", "size": 3})
            up = self.fake.requests[-1]
            self.assertEqual(up.method, "PUT")
            self.assertEqual(up.headers["content-type"], "application/octet-stream")
            self.assertIn("path=/tmp/my%20file.bin", up.target)
            s.upload("/tmp/t.txt", "héllo")
            self.assertEqual(s.download("/tmp/t.txt"), "héllo".encode())
            self.assertEqual(s.download("/tmp/my file.bin"), b"\x00\x01\xff")
            with self.assertRaises(NotFound):
                s.download("/tmp/absent")
            self.assertEqual(s.info()["executions"], 1)
            self.assertEqual(client.list_sessions(), [SESSION])
        self.assertTrue(s.closed)
        self.assertEqual(self.fake.requests[-1].method, "DELETE")
        n = len(self.fake.requests)
        s.close()  # idempotent
        self.assertEqual(len(self.fake.requests), n)

    def test_session_busy_is_conflict_and_close_tolerates_expiry(self) -> None:
        def script(req: Request) -> Reply:
            if req.path == "/v1/sessions":
                return json_reply(201, SESSION)
            if req.path.endswith("/execute"):
                return error_reply(409, "conflict", "session s-1 is busy")
            return error_reply(404, "not_found", "session s-1 expired")
        self.fake.script = script
        s = self.client().session()
        with self.assertRaises(Conflict):
            s.execute("x")
        s.close()
        self.assertTrue(s.closed)

    def test_policies_policy_health_ready(self) -> None:
        def script(req: Request) -> Reply:
            return {
                "/v1/policies": json_reply(200, {"policies": [{"name": "code-sandbox"}]}),
                "/v1/policies/code-sandbox": json_reply(200, {"name": "code-sandbox",
                                                              "policy": {}, "explain": []}),
                "/healthz": json_reply(200, {"status": "ok"}),
                "/readyz": error_reply(503, "unavailable", "no backend", Retry_After="1"),
            }[req.path]
        self.fake.script = script
        self.fake.answer_policy_lookups = False
        c = self.client()
        self.assertEqual(c.policies(), [{"name": "code-sandbox"}])
        self.assertEqual(c.get_policy()["name"], "code-sandbox")
        self.assertEqual(c.get_policy("code-sandbox")["explain"], [])
        self.assertEqual(c.health(), {"status": "ok"})
        with self.assertRaises(Unavailable):
            c.ready()

    def test_base_url_path_prefix(self) -> None:
        SandboxClient(base_url=self.fake.url + "/sandbox/").health()
        self.assertEqual(self.fake.requests[0].path, "/sandbox/healthz")

    def test_policy_needs_a_name_and_a_session_an_id(self) -> None:
        c = self.client(policy=None)
        with self.assertRaisesRegex(ValueError, "no policy name given and the client has no "
                                                "default policy"):
            c.get_policy()
        self.assertEqual(self.fake.requests, [])
        self.fake.script = lambda req: json_reply(201, {"state": "ready"})
        with self.assertRaisesRegex(ProtocolError, r"^\[protocol_error\] session created without "
                                                   r"a session_id: \{'state': 'ready'\}$"):
            c.session()


class SSEParserTest(unittest.TestCase):
    def feed_all(self, data: bytes, step: int) -> List[Tuple[str, str]]:
        p = SSEParser()
        out = []
        for piece in split_every(data, step):
            out += [(e.event, e.data) for e in p.feed(piece)]
        out += [(e.event, e.data) for e in p.close()]
        return out

    def test_split_anywhere_and_line_endings(self) -> None:
        data = (b"event: stdout\r\ndata: {\"data\": \"a\"}\r\n\r\n"
                b": comment\n"
                b"event:stderr\rdata:x\r\rdata: line1\ndata: line2\n\n"
                b"id: 7\nretry: 100\nunknown: field\ndata\n\n")
        expected = [("stdout", '{"data": "a"}'), ("stderr", "x"), ("message", "line1\nline2"),
                    ("message", "")]
        for step in (1, 2, 3, 5, 64, len(data)):
            with self.subTest(step=step):
                self.assertEqual(self.feed_all(data, step), expected)

    def test_event_without_data_not_dispatched_and_name_reset(self) -> None:
        self.assertEqual(self.feed_all(b"event: x\n\ndata: d\n\n", 4), [("message", "d")])

    def test_unterminated_last_event_is_kept(self) -> None:
        self.assertEqual(self.feed_all(b"event: result\ndata: {}", 3), [("result", "{}")])

    def test_utf8_split_inside_a_character(self) -> None:
        self.assertEqual(self.feed_all("data: žluť\n\n".encode(), 1), [("message", "žluť")])


class AsyncClientTest(FakeServerTest):
    def aclient(self, **kw: Any) -> AsyncSandboxClient:
        kw.setdefault("policy", "code-sandbox")
        return AsyncSandboxClient(base_url=self.fake.url, **kw)

    def test_execute_and_framings(self) -> None:
        for name, reply in [
                ("content-length", json_reply(200, RESULT)),
                ("chunked", (200, {}, split_every(json.dumps(RESULT).encode(), 5))),
                ("until-eof", (200, {"X-No-Length": "1"}, json.dumps(RESULT).encode()))]:
            with self.subTest(framing=name):
                self.fake.script = lambda req, r=reply: r
                got = asyncio.run(self.aclient(token="tk").execute("print(42)", timeout=4,
                                                                   files={"/tmp/a": b"\x00"}))
                self.assertEqual(got, RESULT)
                req = self.fake.requests[-1]
                self.assertEqual(req.headers["authorization"], "Bearer tk")
                self.assertEqual(req.json()["files"], [{"path": "/tmp/a", "content_base64": "AA=="}])

    def test_errors_map_like_sync(self) -> None:
        for status, code, cls in ERROR_CASES:
            with self.subTest(status=status):
                self.fake.script = lambda req, s=status, c=code: error_reply(s, c, "m", Retry_After="3")
                with self.assertRaises(cls) as cm:
                    asyncio.run(self.aclient(retries=0).execute("x"))
                self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.message),
                                 (status, code, "m"))

    def test_connection_failed(self) -> None:
        url = f"http://127.0.0.1:{free_port()}"
        with self.assertRaises(ConnectionFailed) as cm:
            asyncio.run(AsyncSandboxClient(base_url=url).health())
        self.assertIn(url, str(cm.exception))
        self.assertIn("llm-sandbox serve", str(cm.exception))

    def test_timeout(self) -> None:
        def slow(req: Request) -> Reply:
            time.sleep(1.0)
            return json_reply(200, {})
        self.fake.script = slow
        with self.assertRaises(RequestTimedOut):
            asyncio.run(self.aclient(timeout=0.2).health())

    def test_retry(self) -> None:
        answers = [error_reply(429, "too_many_requests", "full", Retry_After="0"),
                   json_reply(200, RESULT)]
        self.fake.script = lambda req: answers.pop(0)
        self.assertEqual(asyncio.run(self.aclient(retries=1).execute("x")), RESULT)

    def test_stream(self) -> None:
        payload = sse(("stdout", {"data": "a"}), ("alert", {"rule": "r"}), ("result", RESULT))
        self.fake.script = lambda req: (200, {"Content-Type": "text/event-stream"},
                                        split_every(payload, 3))

        async def go() -> List[Any]:
            return [ev async for ev in self.aclient().stream("x")]
        self.assertEqual(asyncio.run(go()), [("stdout", "a"), ("alert", {"rule": "r"}),
                                             ("result", RESULT)])
        self.assertEqual(self.fake.requests[0].target, "/v1/execute?stream=true")
        self.fake.script = lambda req: (200, {}, [sse(("error", {"error": {
            "code": "too_many_requests", "message": "later"}}))])
        with self.assertRaises(RateLimited):
            asyncio.run(go())
        self.fake.script = lambda req: (200, {}, [sse(("stdout", {"data": "x"}))])
        with self.assertRaisesRegex(ProtocolError, "the event stream ended without a result event"):
            asyncio.run(go())

    def test_refusals_like_sync(self) -> None:
        c = self.aclient(policy=None)
        with self.assertRaisesRegex(ValueError, "no policy name given and the client has no "
                                                "default policy"):
            asyncio.run(c.get_policy())
        self.assertEqual(self.fake.requests, [])

        async def start() -> Any:
            return await c.session()
        self.fake.script = lambda req: json_reply(201, {"state": "ready"})
        with self.assertRaisesRegex(ProtocolError, r"^\[protocol_error\] session created without "
                                                   r"a session_id: \{'state': 'ready'\}$"):
            asyncio.run(start())
        failed = {"error": {"code": "forbidden", "message": "memory 1G exceeds 256M"}}
        self.fake.script = lambda req: json_reply(200, {"results": [RESULT, failed]})
        self.assertEqual(asyncio.run(c.batch(["a", "b"])), [RESULT, failed])
        with self.assertRaises(Forbidden) as cm:
            asyncio.run(c.batch(["a", "b"], raise_on_error=True))
        self.assertEqual(cm.exception.message, "memory 1G exceeds 256M")

    def test_session_batch_policies(self) -> None:
        def script(req: Request) -> Reply:
            if req.method == "POST" and req.path == "/v1/sessions":
                return json_reply(201, SESSION)
            if req.path.endswith("/execute"):
                return json_reply(200, RESULT)
            if req.path.endswith("/files"):
                if req.method == "PUT":
                    return json_reply(201, {"path": req.query["path"], "size": len(req.body)})
                return 200, {}, b"\x00data"
            if req.method == "DELETE":
                return 204, {}, b""
            if req.path == "/v1/batch":
                return json_reply(200, {"results": [RESULT] * len(req.json()["tasks"])})
            if req.path == "/v1/policies":
                return json_reply(200, {"policies": []})
            if req.path == "/v1/sessions":
                return json_reply(200, {"sessions": []})
            return json_reply(200, SESSION)

        self.fake.script = script
        self.fake.answer_policy_lookups = False

        async def go() -> None:
            c = self.aclient()
            async with c.session(language="python") as s:
                self.assertEqual((await s.execute("x = 1"))["stdout"], "42\n")
                self.assertEqual(await s.upload("/tmp/f", b"ab"), {"path": "/tmp/f", "size": 2})
                self.assertEqual(await s.download("/tmp/f"), b"\x00data")
                self.assertEqual((await s.info())["session_id"], "s-1")
            self.assertTrue(s.closed)
            s2 = await c.session()
            await s2.close()
            self.assertEqual(await c.batch(["a", {"code": "b"}], concurrency=2), [RESULT, RESULT])
            self.assertEqual(await c.policies(), [])
            self.assertEqual(await c.list_sessions(), [])
            results = await asyncio.gather(*(c.execute(f"print({i})") for i in range(8)))
            self.assertEqual(len(results), 8)

        asyncio.run(go())
        methods = [(r.method, r.path) for r in self.fake.requests]
        self.assertIn(("DELETE", "/v1/sessions/s-1"), methods)
        self.assertEqual(methods.count(("DELETE", "/v1/sessions/s-1")), 2)


def fake_framework(module: str, class_name: str, factory: str) -> Dict[str, Any]:
    """sys.modules entries for a framework's tool class whose ``factory`` classmethod returns the
    keyword arguments it was given (LangChain and LlamaIndex are not installed here)."""
    cls = type(class_name, (), {factory: classmethod(lambda cls, **kw: kw)})
    parts = module.split(".")
    mods = {".".join(parts[:i]): ModuleType(".".join(parts[:i])) for i in range(1, len(parts) + 1)}
    setattr(mods[module], class_name, cls)
    return mods


@contextlib.contextmanager
def modules_set(entries: Dict[str, Any]) -> Iterator[None]:
    """These sys.modules entries for a while (None: "not installed"). Unlike mock.patch.dict it
    restores only them, so what gets imported meanwhile (pydantic's lazy parts) stays."""
    saved = {name: sys.modules.get(name) for name in entries}
    sys.modules.update(entries)
    try:
        yield
    finally:
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod


@unittest.skipUnless(importlib.util.find_spec("pydantic"),
                     "pydantic is not installed (the tools' argument model needs it)")
class IntegrationAdapterTest(FakeServerTest):
    """The LangChain and LlamaIndex adapters against stand-ins of the frameworks' tool classes:
    what they hand the framework, and the install hint when it is missing. The real frameworks
    are tested in tests/integration/test_integrations.py where they are installed."""

    # adapter module, its create function, the framework's module, class and factory, the
    # factory's keywords for the sync function, the async one and the input schema, install hint
    ADAPTERS = [
        ("langchain", "create_run_python_code_tool", "langchain_core.tools", "StructuredTool",
         "from_function", ("func", "coroutine", "args_schema"),
         "the LangChain tool needs langchain-core: pip install langchain-core (llm_sandbox"),
        ("llamaindex", "create_function_tool", "llama_index.core.tools", "FunctionTool",
         "from_defaults", ("fn", "async_fn", "fn_schema"),
         "the LlamaIndex tool needs llama-index-core: pip install llama-index-core (llm_sandbox"),
    ]

    def setUp(self) -> None:
        super().setUp()
        policies = [{"name": "code-sandbox", "description": "general", "languages": ["python"]},
                    {"name": "python-strict", "description": "", "network": True}]

        def script(req: Request) -> Reply:
            if req.path == "/v1/policies":
                return json_reply(200, {"policies": policies})
            return json_reply(200, RESULT)
        self.fake.script = script

    def test_adapters(self) -> None:
        for adapter, create, module, cls, factory, (fn, async_fn, schema), hint in self.ADAPTERS:
            with self.subTest(adapter=adapter):
                create_tool = getattr(importlib.import_module(
                    f"llm_sandbox.integrations.{adapter}"), create)
                framework = fake_framework(module, cls, factory)
                with modules_set(framework):
                    kw = create_tool(self.client(), policies=["python-strict", "code-sandbox"])
                self.assertEqual(sorted(kw), sorted([fn, async_fn, schema, "name", "description"]))
                self.assertEqual(kw["name"], "run_python_code")
                self.assertIn("- python-strict (default): general-purpose sandbox",
                              kw["description"])
                self.assertEqual(kw[schema].model_json_schema()["required"], ["code"])
                self.assertIn("stdout:\n42\n", kw[fn]("print(42)"))
                self.assertIn("policy code-sandbox)",
                              asyncio.run(kw[async_fn]("print(42)", "code-sandbox")))
                self.assertEqual(self.fake.requests[-1].json()["policy"], "code-sandbox")
                self.assertIn("is not available to you", kw[fn]("x", "bash-tools"))
                with modules_set(dict.fromkeys(framework)):  # not installed
                    with self.assertRaises(ImportError) as cm:
                        create_tool(self.client())
                self.assertTrue(str(cm.exception).startswith(hint), str(cm.exception))


class PackageTest(unittest.TestCase):
    def test_public_names(self) -> None:
        for name in llm_sandbox.__all__:
            self.assertTrue(hasattr(llm_sandbox, name), name)
        self.assertTrue(issubclass(RateLimited, SandboxError))
        self.assertTrue(issubclass(ConnectionFailed, SandboxError))

    def test_policy_is_the_default_policys_name(self) -> None:
        import warnings
        c = SandboxClient(base_url="http://127.0.0.1:9", policy="python-strict")
        self.assertEqual(c.policy, "python-strict")
        self.assertIsInstance(c.policy, str)
        self.assertEqual(c.policy_name, "python-strict")  # the old attribute, kept
        self.assertEqual(repr(c), "SandboxClient(base_url='http://127.0.0.1:9', policy='python-strict')")
        c.policy = "code-sandbox"
        self.assertEqual((c.policy, c.policy_name), ("code-sandbox", "code-sandbox"))
        self.assertIsNone(SandboxClient(policy=None).policy)
        self.assertIsNone(AsyncSandboxClient(policy=None).policy)
        self.assertTrue(callable(getattr(c, "get_policy")))
        self.assertEqual(AsyncSandboxClient(policy="node").policy, "node")

    def test_calling_policy_still_works_but_warns(self) -> None:
        fake = FakeDaemon()
        self.addCleanup(fake.stop)
        fake.answer_policy_lookups = False
        fake.script = lambda req: json_reply(200, {"name": req.path.rsplit("/", 1)[1]})
        c = SandboxClient(base_url=fake.url, policy="code-sandbox")
        with self.assertWarns(DeprecationWarning):
            self.assertEqual(c.policy()["name"], "code-sandbox")
        with self.assertWarns(DeprecationWarning):
            self.assertEqual(c.policy("node")["name"], "node")

    def test_bad_base_url(self) -> None:
        with self.assertRaises(ValueError):
            SandboxClient(base_url="ftp://x")


if __name__ == "__main__":
    unittest.main()


class BinaryOutputTest(unittest.TestCase):
    """Output that is not UTF-8 arrives as base64 next to the text (docs/api.md "Binary output")."""

    def test_output_bytes_prefers_the_base64_field(self):
        raw = bytes(range(256))
        r = {"stdout": raw.decode("utf-8", "replace"), "stdout_base64": base64.b64encode(raw).decode(),
             "stderr": "caf\u00e9"}
        self.assertEqual(llm_sandbox.output_bytes(r), raw)
        self.assertEqual(llm_sandbox.output_bytes(r, "stderr"), "caf\u00e9".encode())
        with self.assertRaises(ValueError):
            llm_sandbox.output_bytes(r, "stdin")
        with self.assertRaises(llm_sandbox.ProtocolError):
            llm_sandbox.output_bytes({"stdout": "", "stdout_base64": "not base64!"})

    def test_stream_events_carry_their_exact_bytes_and_still_unpack(self):
        from llm_sandbox._calls import stream_event
        from llm_sandbox.sse import SSEEvent
        ev = stream_event(SSEEvent(event="stdout", data=json.dumps({"data": "\ufffd", "data_base64": "/w=="})))
        kind, data = ev
        self.assertEqual((kind, data, ev.data_bytes), ("stdout", "\ufffd", b"\xff"))
        plain = stream_event(SSEEvent(event="stderr", data=json.dumps({"data": "ok\n"})))
        self.assertEqual(plain.data_bytes, b"ok\n")
        self.assertIsNone(stream_event(SSEEvent(event="alert", data="{}")).data_bytes)
