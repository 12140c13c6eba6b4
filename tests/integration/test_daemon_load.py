"""Load: 1000 executions from 32 concurrent clients through the real daemon on the native backend.
Each program prints a unique token; every result must carry its own token, none may be lost
(a 429 is retried after its Retry-After), and no box may be left afterwards.

LSB_LOAD_N / LSB_LOAD_CLIENTS change the size; the figures are printed for the report."""
import os
import statistics
import threading
import time
import unittest

from daemon_harness import Daemon, request, skip_unless_daemon_suite

N = int(os.environ.get("LSB_LOAD_N", "1000"))
CLIENTS = int(os.environ.get("LSB_LOAD_CLIENTS", "32"))


class DaemonLoadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()

    def test_1000_executions_from_32_clients(self):
        d = Daemon("--queue", "64")
        try:
            lock = threading.Lock()
            next_i = [0]
            results = {}
            latencies, retries, failures = [], [0], []

            def client():
                while True:
                    with lock:
                        i = next_i[0]
                        if i >= N:
                            return
                        next_i[0] += 1
                    token = f"tok-{i}-{os.urandom(6).hex()}"
                    body = {"code": f"print({token!r})"}
                    for _attempt in range(200):
                        start = time.time()
                        try:
                            r = request(d.base, "POST", "/v1/execute", body, timeout=120)
                        except OSError as e:  # a lost connection is a failure, not a retry
                            with lock:
                                failures.append((i, repr(e)))
                            break
                        if r.status in (429, 503):
                            with lock:
                                retries[0] += 1
                            time.sleep(float(r.headers.get("Retry-After", "1")) * 0.2)
                            continue
                        with lock:
                            latencies.append(time.time() - start)
                            if r.status != 200:
                                failures.append((i, r.status, r.body[:300]))
                            else:
                                results[i] = (token, r.json())
                        break

            t0 = time.time()
            threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=600)
            wall = time.time() - t0
            self.assertFalse(any(t.is_alive() for t in threads), "clients hung")
            self.assertEqual(failures, [])
            self.assertEqual(len(results), N, f"lost {N - len(results)} executions")
            ids = set()
            for i, (token, res) in results.items():
                self.assertEqual((res["status"], res["stdout"]), ("ok", token + "\n"), f"execution {i}: {res}")
                ids.add(res["execution_id"])
            self.assertEqual(len(ids), N, "execution ids are not unique")

            # Nothing left: the daemon holds no box, and no process hangs below it.
            ready = request(d.base, "GET", "/readyz").json()
            self.assertEqual((ready["boxes"], ready["running"], ready["queued"]), (0, 0, 0), ready)
            # The native pool's warm boxes stay until the daemon stops (init, and the interpreter's
            # copy waiting for its run when a fork server made the box), and so do the fork servers'
            # zygote boxes (init and the interpreter): nothing else.
            def kept(ready):
                return 2 * ready.get("warm_boxes", 0) + 2 * ready.get("fork_servers", 0)
            deadline = time.time() + 20
            while time.time() < deadline:
                ready = request(d.base, "GET", "/readyz").json()
                if ready.get("reaping", 0) == 0 and len(d.descendants()) <= kept(ready):
                    break
                time.sleep(0.2)
            self.assertLessEqual(len(d.descendants()), kept(ready), ready)
            self.assertLessEqual(ready.get("warm_boxes", 0), 2, ready)
            lat = sorted(latencies)
            print(f"\nload: {N} executions, {CLIENTS} clients, {os.cpu_count()} cores: {wall:.1f} s wall, "
                  f"{N / wall:.1f} exec/s, latency p50 {statistics.median(lat) * 1000:.0f} ms, "
                  f"p95 {lat[int(len(lat) * 0.95)] * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms, "
                  f"429 retries {retries[0]}", flush=True)
            self.assertEqual(d.stop(), 0)
            self.assertIn("boxes left: 0", d.log())
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
