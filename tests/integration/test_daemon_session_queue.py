"""The session create queue (issue 35, docs/api.md "Session queue") through the real `llm-sandbox
serve`: at --max-sessions a create waits in line (FIFO, bounded by --session-queue-wait and
--session-queue) and is served when a session goes away, its answer saying where it waited; a wait
that ends without a slot, and a full queue, are 429 with Retry-After and the place in the line."""
import threading
import time
import unittest

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite


class SessionQueueTest(unittest.TestCase):
    def start(self, *flags):
        skip_unless_daemon_suite()
        self.d = Daemon("--max-sessions", "2", *flags)
        self.addCleanup(self.d.close)

    def call(self, method, path, body=None, timeout=120):
        return request(self.d.base, method, path, body, timeout=timeout)

    def create(self):
        return self.call("POST", "/v1/sessions", {"language": "python"})

    def fill(self):
        ids = []
        for _ in range(2):
            r = self.create()
            self.assertEqual(r.status, 201, r.body[:500])
            self.assertNotIn("queued", r.json())  # there was room: no wait, no field
            ids.append(r.json()["session_id"])
        return ids

    def in_thread(self, fn):
        out = {}

        def run():
            t0 = time.time()
            out["r"] = fn()
            out["s"] = time.time() - t0

        t = threading.Thread(target=run)
        t.start()
        return t, out

    def await_waiting(self, n, timeout=10):
        """Until the daemon's create queue holds n (lsb_sessions_queued on /metrics)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.call("GET", "/metrics").body.decode()
            for line in m.splitlines():
                if line.startswith("lsb_sessions_queued") and float(line.split()[-1]) == n:
                    return
            time.sleep(0.05)
        self.fail(f"the create queue never held {n}")

    def test_a_waiting_create_is_served_when_a_session_goes(self):
        self.start("--session-queue-wait", "20000")
        ids = self.fill()
        t, out = self.in_thread(self.create)
        self.await_waiting(1)
        time.sleep(0.3)
        self.assertEqual(self.call("DELETE", f"/v1/sessions/{ids[0]}").status, 204)
        t.join(60)
        r = out["r"]
        self.assertEqual(r.status, 201, r.body[:500])
        q = r.json()["queued"]
        self.assertEqual(q["reason"], "max_sessions")
        self.assertEqual(q["position"], 1)
        self.assertGreaterEqual(q["waited_ms"], 300)
        self.assertLess(q["waited_ms"], 20000)
        self.assertIn("reason=max_sessions", r.headers.get("X-Session-Queued", ""))
        OpenApi().check("POST", "/v1/sessions", 201, r.json())

    def test_a_wait_that_ends_without_a_slot_is_429_with_its_place(self):
        self.start("--session-queue-wait", "1000")
        self.fill()
        t0 = time.time()
        r = self.create()
        took = time.time() - t0
        self.assertEqual(r.status, 429, r.body[:500])
        self.assertGreaterEqual(took, 0.9)
        self.assertLess(took, 10)
        self.assertGreaterEqual(int(r.headers["Retry-After"]), 1)
        err = r.json()["error"]
        self.assertEqual(err["code"], "too_many_requests")
        self.assertIn("--max-sessions", err["message"])
        self.assertEqual(err["queue"]["position"], 1)
        self.assertEqual(err["queue"]["max_wait_ms"], 1000)
        self.assertGreaterEqual(err["queue"]["waited_ms"], 1000)
        OpenApi().check("POST", "/v1/sessions", 429, r.json())

    def test_a_full_queue_is_429_at_once(self):
        self.start("--session-queue", "1", "--session-queue-wait", "20000")
        ids = self.fill()
        t, out = self.in_thread(self.create)  # takes the one place in line
        self.await_waiting(1)
        t0 = time.time()
        r = self.create()
        self.assertLess(time.time() - t0, 3)
        self.assertEqual(r.status, 429, r.body[:500])
        self.assertIn("Retry-After", r.headers)
        err = r.json()["error"]
        self.assertIsNone(err["queue"]["position"])
        self.assertEqual(err["queue"]["length"], 1)
        self.assertEqual(err["queue"]["max_length"], 1)
        self.assertIn("--session-queue", err["message"])
        self.call("DELETE", f"/v1/sessions/{ids[0]}")
        t.join(60)
        self.assertEqual(out["r"].status, 201, out["r"].body[:500])

    def test_no_wait_refuses_at_once_as_before(self):
        self.start("--session-queue-wait", "0")
        self.fill()
        t0 = time.time()
        r = self.create()
        self.assertLess(time.time() - t0, 3)
        self.assertEqual(r.status, 429, r.body[:500])
        self.assertIn("Retry-After", r.headers)

    def test_the_e2b_door_waits_in_the_same_line(self):
        self.start("--session-queue-wait", "20000")
        ids = self.fill()
        t, out = self.in_thread(lambda: self.call("POST", "/v2/sandboxes", {"templateID": "base"}))
        self.await_waiting(1)
        self.assertEqual(self.call("DELETE", f"/v1/sessions/{ids[1]}").status, 204)
        t.join(60)
        r = out["r"]
        self.assertEqual(r.status, 201, r.body[:500])
        self.assertEqual(r.json()["queued"]["reason"], "max_sessions")
        self.assertEqual(r.json()["queued"]["position"], 1)

    def test_the_e2b_door_refusal_carries_retry_after_and_its_place(self):
        self.start("--session-queue-wait", "500")
        self.fill()
        r = self.call("POST", "/v2/sandboxes", {"templateID": "base"})
        self.assertEqual(r.status, 429, r.body[:500])
        self.assertIn("Retry-After", r.headers)
        self.assertEqual(r.json()["code"], 429)
        self.assertEqual(r.json()["queue"]["position"], 1)

    def test_a_shutdown_answers_a_waiting_create_at_once(self):
        self.start("--session-queue-wait", "60000")
        self.fill()
        t, out = self.in_thread(self.create)
        self.await_waiting(1)
        self.d.stop()
        t.join(60)
        self.assertEqual(out["r"].status, 503, out["r"].body[:500])
        self.assertLess(out["s"], 30)
        self.assertIn("Retry-After", out["r"].headers)

    def test_a_burst_beyond_the_cap_is_served_in_turn(self):
        # 8 creates at once against 2 slots; each session is deleted as soon as it is made, so all
        # are served (the benchmark's burst, scaled to a small cap).
        self.start("--session-queue-wait", "60000")
        answers, lock = [], threading.Lock()

        def one():
            r = self.create()
            if r.status == 201:
                self.call("DELETE", f"/v1/sessions/{r.json()['session_id']}")
            with lock:
                answers.append(r)

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        self.assertEqual([r.status for r in answers], [201] * 8, [r.body[:300] for r in answers if r.status != 201])
        self.assertTrue(any("queued" in r.json() for r in answers))


class BurstTest(unittest.TestCase):
    """The public burst benchmark's shape: creates at once, beyond what the executor admits."""

    def burst(self, n, *flags, busy=0):
        skip_unless_daemon_suite()
        d = Daemon(*flags)
        self.addCleanup(d.close)
        # `busy` one-shots that sleep, started first: they hold the executor's room during the burst.
        sleepers = [threading.Thread(target=request, args=(d.base, "POST", "/v1/execute",
                                                           {"code": "import time\ntime.sleep(2)"}),
                                     kwargs={"timeout": 60}) for _ in range(busy)]
        for t in sleepers:
            t.start()
            time.sleep(0.3)
        limit = [ln for ln in request(d.base, "GET", "/metrics").body.decode().splitlines()
                 if ln.startswith("lsb_sessions_limit")]
        if limit and float(limit[0].split()[-1]) < n:
            self.skipTest(f"this host's memory sizes --max-sessions below {n}")
        answers, lock = [], threading.Lock()

        def one():
            r = request(d.base, "POST", "/v1/sessions", {"language": "python"}, timeout=300)
            with lock:
                answers.append(r)

        threads = [threading.Thread(target=one) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads + sleepers:
            t.join(300)
        self.assertEqual([r.status for r in answers], [201] * n, [r.body[:300] for r in answers if r.status != 201])
        for r in answers:
            request(d.base, "DELETE", f"/v1/sessions/{r.json()['session_id']}")
        return [r.json().get("queued") for r in answers], d

    def test_creates_wait_for_executor_room_instead_of_429(self):
        # 1 worker and 1 queued, both taken by sleeping one-shots: the creates wait for room (the
        # first of them to open; the others wait their turn to open before that, open_turns.h).
        queued, _ = self.burst(6, "--max-concurrency", "1", "--queue", "1", busy=2)
        reasons = [q["reason"] for q in queued if q]
        self.assertIn("executor", reasons)
        self.assertTrue(all(q["position"] is None for q in queued if q and q["reason"] == "executor"))

    def test_a_hundred_at_once_with_the_defaults(self):
        queued, d = self.burst(100)
        self.assertRegex(d.log(), r"\d+ sessions at most by memory")
        # The opens took turns (open_turns.h): those that waited say so, with their place in line.
        opening = [q for q in queued if q and q["reason"] == "opening"]
        self.assertTrue(opening, queued)
        self.assertTrue(all(q["position"] >= 1 for q in opening), opening)


if __name__ == "__main__":
    unittest.main()
