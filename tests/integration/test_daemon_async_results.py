"""Asynchronous executions and batches (docs/api.md "Asynchronous executions") through the real
`llm-sandbox serve`: "async": true in the body answers 202 with an id, GET /v1/executions/{id}
?wait= long-polls for the result, a connection that drops mid-execution loses nothing (raw
socket, and the Python client through a loopback proxy that cuts its long-poll), batches run
asynchronously, results go after --async-keep-for, and another token gets 404 without waiting.
Runs on whichever backend LLM_SANDBOX_BACKEND names (native by default)."""
import json
import os
import socket
import sys
import threading
import time
import unittest

from daemon_harness import SOURCE_DIR, Daemon, OpenApi, request, skip_unless_daemon_suite

sys.path.insert(0, os.path.join(SOURCE_DIR, "clients", "python"))
from llm_sandbox import SandboxClient  # noqa: E402

ALICE, BOB = "alice-async-token-0123456789", "bob-async-token-9876543210"
SLEEPER = "import time\ntime.sleep(1.5)\nprint('slept')"


class CuttingProxy:
    """A loopback TCP proxy to the daemon that closes the first `cuts` connections whose request
    is a long-poll (GET /v1/executions/...) after `after` seconds, before any answer came."""

    def __init__(self, port, cuts=1, after=0.4):
        self.target = ("127.0.0.1", port)
        self.cuts, self.after, self.cut = cuts, after, 0
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client):
        upstream = socket.create_connection(self.target)
        head = client.recv(65536)
        upstream.sendall(head)
        with self.lock:
            cut = head.startswith(b"GET /v1/executions/") and self.cut < self.cuts
            self.cut += cut
        if cut:
            time.sleep(self.after)
            client.close()
            upstream.close()
            return
        threading.Thread(target=self.pipe, args=(client, upstream), daemon=True).start()
        self.pipe(upstream, client)

    @staticmethod
    def pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.listener.close()


class AsyncResultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--async-keep-for", "3", env={"LLM_SANDBOX_TOKENS": f"{ALICE},{BOB}"})
        cls.addClassCleanup(cls.d.close)

    def post(self, path, body, token=ALICE):
        return request(self.d.base, "POST", path, body, token=token)

    def get(self, xid, wait=None, token=ALICE, timeout=120):
        q = "" if wait is None else f"?wait={wait}"
        return request(self.d.base, "GET", f"/v1/executions/{xid}{q}", token=token, timeout=timeout)

    def test_async_in_the_body_then_one_long_poll_has_the_result(self):
        r = self.post("/v1/execute", {"code": SLEEPER, "async": True})
        self.assertEqual(r.status, 202, r.body[:500])
        OpenApi().check("POST", "/v1/execute", 202, r.json())
        xid = r.json()["execution_id"]
        self.assertEqual(self.get(xid).json()["state"] in ("queued", "running"), True)
        t0 = time.monotonic()
        got = self.get(xid, wait=50)
        self.assertEqual(got.status, 200, got.body[:500])
        OpenApi().check("GET", "/v1/executions/{id}", 200, got.json())
        self.assertEqual(got.json()["state"], "finished", got.json())
        self.assertEqual(got.json()["result"]["stdout"], "slept\n")
        self.assertLess(time.monotonic() - t0, 45, "the long-poll answered when it finished, not at its end")
        # Fetched as often as asked.
        self.assertEqual(self.get(xid, wait=1).json()["result"]["stdout"], "slept\n")

    def test_a_long_poll_that_ends_unfinished_says_so(self):
        xid = self.post("/v1/execute", {"code": "import time\ntime.sleep(3)", "async": True}).json()["execution_id"]
        t0 = time.monotonic()
        got = self.get(xid, wait=0.3)
        self.assertEqual(got.status, 200)
        self.assertIn(got.json()["state"], ("queued", "running"))
        self.assertGreaterEqual(time.monotonic() - t0, 0.25)
        self.assertEqual(self.get(xid, wait=50).json()["state"], "finished")

    def test_hostile_waits_and_flags_are_refused(self):
        xid = self.post("/v1/execute", {"code": "print(1)", "async": True}).json()["execution_id"]
        for bad in ("61", "-1", "abc", "1e400", "nan", "5s"):
            r = self.get(xid, wait=bad)
            self.assertEqual(r.status, 400, (bad, r.body[:300]))
            self.assertIn("wait", r.json()["error"]["message"])
        for bad in ("yes", 1, None, [True]):
            r = self.post("/v1/execute", {"code": "print(1)", "async": bad})
            self.assertEqual(r.status, 400, (bad, r.body[:300]))
            self.assertIn("async", r.json()["error"]["message"])
        r = self.post("/v1/batch", {"tasks": [{"code": "print(1)", "async": True}]})
        self.assertEqual(r.status, 200)
        self.assertIn("unknown field", r.json()["results"][0]["error"]["message"])

    def test_another_token_gets_404_at_once_even_when_it_waits(self):
        xid = self.post("/v1/execute", {"code": SLEEPER, "async": True}).json()["execution_id"]
        t0 = time.monotonic()
        r = self.get(xid, wait=30, token=BOB)
        self.assertEqual(r.status, 404, r.body[:300])
        self.assertLess(time.monotonic() - t0, 10, "a stranger's long-poll must not wait on the owner's execution")
        bid = self.post("/v1/batch", {"tasks": [{"code": "print(1)"}], "async": True}).json()["execution_id"]
        self.assertEqual(self.get(bid, wait=5, token=BOB).status, 404)
        self.assertEqual(self.get(xid, wait=50).json()["result"]["stdout"], "slept\n")

    def test_a_dropped_connection_mid_execution_loses_nothing(self):
        xid = self.post("/v1/execute", {"code": SLEEPER, "async": True}).json()["execution_id"]
        s = socket.create_connection(("127.0.0.1", self.d.port))
        s.sendall((f"GET /v1/executions/{xid}?wait=30 HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: Bearer {ALICE}\r\n\r\n").encode())
        time.sleep(0.3)
        s.close()  # gone mid-execution, before any answer
        got = self.get(xid, wait=50).json()
        self.assertEqual((got["state"], got["result"]["stdout"]), ("finished", "slept\n"))

    def test_the_python_client_execute_survives_a_cut_long_poll(self):
        proxy = CuttingProxy(self.d.port, cuts=2, after=0.4)
        self.addCleanup(proxy.close)
        client = SandboxClient(base_url=proxy.url, token=ALICE)
        result = client.execute(SLEEPER)
        self.assertEqual(result["stdout"], "slept\n")
        self.assertEqual(proxy.cut, 2, "both cut long-polls were asked again")
        handle = client.submit("print(6 * 7)")
        self.assertEqual(client.execution(handle.id).result(timeout=60)["stdout"], "42\n")

    def test_async_batch_keeps_its_whole_answer(self):
        r = self.post("/v1/batch", {"tasks": [{"code": "print(1)"}, {"code": "import sys; sys.exit(3)"}, {"code": "1", "policy": "nope"}],
                                    "concurrency": 2, "async": True})
        self.assertEqual(r.status, 202, r.body[:500])
        OpenApi().check("POST", "/v1/batch", 202, r.json())
        got = self.get(r.json()["execution_id"], wait=50).json()
        OpenApi().check("GET", "/v1/executions/{id}", 200, got)
        self.assertEqual((got["kind"], got["state"]), ("batch", "finished"), got)
        results = got["result"]["results"]
        self.assertEqual(results[0]["stdout"], "1\n")
        self.assertEqual(results[1]["exit_code"], 3)
        self.assertIn("error", results[2])
        self.assertEqual(got["result"]["concurrency"]["granted"] <= 2, True)
        client = SandboxClient(base_url=self.d.base, token=ALICE)
        answer = client.submit_batch(["print(2)", "print(3)"]).result(timeout=60)
        self.assertEqual([x["stdout"] for x in answer["results"]], ["2\n", "3\n"])

    def test_a_finished_result_goes_after_async_keep_for(self):
        xid = self.post("/v1/execute", {"code": "print('kept')", "async": True}).json()["execution_id"]
        self.assertEqual(self.get(xid, wait=50).json()["result"]["stdout"], "kept\n")
        time.sleep(3.5)
        later = self.get(xid)
        # Past its retention the async result is gone: 404, or (monitoring on) the recent view
        # of the execution without its kept result.
        self.assertTrue(later.status == 404 or "async" not in later.json(), later.body[:300])


class ShutdownWakesLongPollsTest(unittest.TestCase):
    def test_a_long_poll_answers_when_the_daemon_stops(self):
        skip_unless_daemon_suite()
        d = Daemon("--shutdown-grace", "1")
        self.addCleanup(d.close)
        xid = request(d.base, "POST", "/v1/execute", {"code": "import time\ntime.sleep(60)", "async": True}).json()["execution_id"]
        answer = {}

        def poll():
            answer["r"] = request(d.base, "GET", f"/v1/executions/{xid}?wait=60", timeout=90)

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        self.assertEqual(d.stop(timeout=40), 0, d.log())
        t.join(30)
        self.assertFalse(t.is_alive(), "the long-poll still waits after the daemon stopped")
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(answer["r"].status, 200)
        self.assertEqual(answer["r"].json()["state"], "finished", answer["r"].json())


if __name__ == "__main__":
    unittest.main()
