"""The daemon-wide fan-out budget (docs/api.md "Memory budget"; issue 32, class 8) through the real
`llm-sandbox serve` on the native backend: 4 concurrent `fork count=8` of sessions holding 60 MiB
each and 4 concurrent batches whose answers are at their 16 MiB cap, all at once, grow the
daemon's peak RSS (VmHWM) by less than the documented bound: the budget (256 MiB) plus 64 MiB for
what is not buffered answers (threads, boxes' bookkeeping, allocator slack). Before the budget,
two such forks alone grew it by 764 MiB. Every request either succeeds or is refused with 429,
Retry-After and a message naming the budget; here the wait is long enough that all succeed.
Numbers are printed to stderr."""
import os
import sys
import threading
import time
import unittest

from daemon_harness import Daemon, request, sanitized_build, skip_unless_daemon_suite

MIB = 1 << 20
BUDGET = 256 * MIB
SLACK = 64 * MIB
STATE = "import os\nopen('/tmp/blob', 'wb').write(os.urandom(60 << 20))\nx = 1\nprint('ready')\n"
NULS = 'import sys; sys.stdout.write("\\0" * 1000000)'


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class FanoutBudgetTest(unittest.TestCase):
    def setUp(self):
        skip_unless_daemon_suite()
        # The default budget; a wait long enough for the four forks to take their turns.
        self.d = Daemon("--fanout-wait", "600", "--max-sessions", "64")
        self.addCleanup(self.d.close)

    def call(self, method, path, body=None, timeout=900):
        return request(self.d.base, method, path, body, timeout=timeout)

    def parent(self):
        sid = self.call("POST", "/v1/sessions", {"language": "python"}).json()["session_id"]
        r = self.call("POST", f"/v1/sessions/{sid}/execute", {"code": STATE})
        self.assertEqual(r.json().get("stdout"), "ready\n", r.body[:500])
        return sid

    def test_concurrent_forks_and_batches_stay_under_the_budget(self):
        parents = [self.parent() for _ in range(4)]
        # Warm up the paths once (a small batch), so the baseline includes the code's own pages.
        self.assertEqual(self.call("POST", "/v1/batch", {"tasks": [{"code": "print(1)"}]}).status, 200)
        pid = self.d.proc.pid
        before_hwm, before_rss = status_kb(pid, "VmHWM"), status_kb(pid, "VmRSS")
        answers, lock = [], threading.Lock()

        def run(kind, method, path, body):
            t0 = time.time()
            r = self.call(method, path, body)
            with lock:
                answers.append((kind, r, time.time() - t0))

        jobs = [threading.Thread(target=run, args=("fork", "POST", f"/v1/sessions/{p}/fork", {"count": 8}))
                for p in parents]
        jobs += [threading.Thread(target=run, args=("batch", "POST", "/v1/batch",
                                                    {"tasks": [{"code": NULS} for _ in range(16)]}))
                 for _ in range(4)]
        t0 = time.time()
        for j in jobs:
            j.start()
        for j in jobs:
            j.join()
        took = time.time() - t0
        after_hwm, after_rss = status_kb(pid, "VmHWM"), status_kb(pid, "VmRSS")
        growth = (after_hwm - before_hwm) * 1024
        print(f"\nfan-out: VmHWM {before_hwm // 1024} -> {after_hwm // 1024} MiB (+{growth // MIB} MiB), "
              f"VmRSS {before_rss // 1024} -> {after_rss // 1024} MiB, {took:.1f} s; " +
              ", ".join(f"{k} {r.status} {s:.1f}s ({len(r.body)} B)" for k, r, s in answers), file=sys.stderr)
        for kind, r, _ in answers:
            if r.status == 429:
                self.assertIn("--fanout-budget", r.json()["error"]["message"])
                self.assertIn("Retry-After", r.headers)
                continue
            self.assertEqual(r.status, 201 if kind == "fork" else 200, (kind, r.body[:500]))
            if kind == "fork":
                self.assertEqual(len(r.json()["sessions"]), 8)
                self.assertEqual(r.json()["fork"]["carried"]["file_bytes"] >= 60 * MIB, True)
            else:
                self.assertGreater(len(r.body), 15 * MIB, "the answer is at its cap")
                self.assertLessEqual(len(r.body), 16 * MIB)
        self.assertTrue(all(r.status != 429 for _, r, _ in answers), "the wait was long enough for all")
        if sanitized_build():  # ASan's shadow memory and quarantine are not the daemon's buffers
            print(f"[fan-out] sanitizer build: the peak grew by {growth // MIB} MiB, not held to the bound")
        else:
            self.assertLess(growth, BUDGET + SLACK, f"the daemon's peak grew by {growth // MIB} MiB")


class FanoutBudgetSpentTest(unittest.TestCase):
    def test_a_spent_budget_answers_429_naming_it_after_the_wait(self):
        skip_unless_daemon_suite()
        d = Daemon("--fanout-budget", "1M", "--fanout-wait", "1")
        self.addCleanup(d.close)
        first = []
        t = threading.Thread(target=lambda: first.append(request(
            d.base, "POST", "/v1/batch", {"tasks": [{"code": "import time; time.sleep(4)"}]})))
        t.start()
        time.sleep(1.5)  # the first batch holds the whole (clamped) budget while it runs
        t0 = time.time()
        r = request(d.base, "POST", "/v1/batch", {"tasks": [{"code": "print(1)"}]})
        waited = time.time() - t0
        t.join()
        self.assertEqual(r.status, 429, r.body[:300])
        self.assertIn("--fanout-budget", r.json()["error"]["message"])
        self.assertIn("fan-out memory budget", r.json()["error"]["message"])
        self.assertGreater(int(r.headers["Retry-After"]), 0)
        self.assertGreaterEqual(waited, 0.9, "it waited for the budget first")
        self.assertEqual(first[0].status, 200, first[0].body[:300])
        again = request(d.base, "POST", "/v1/batch", {"tasks": [{"code": "print(1)"}]})
        self.assertEqual(again.status, 200, "the budget is whole again once the answer was sent")


if __name__ == "__main__":
    unittest.main()
