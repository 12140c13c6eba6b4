"""The daemon's defaults a new user meets (issue 16), over raw HTTP against the real daemon:
concurrency sized by box cost (ten sleeping sub-agents in one batch finish in under 2 s on two
cores), a capped batch concurrency said in the answer, the execution id before the result (the
asynchronous form, GET /v1/executions/{id}, X-Execution-Id), the kept results' bounds and owners,
the default audit log (and `--audit-log none`), `llm-sandbox logs` reading the default and
refusing unknown filter values, and --max-body derived from --max-file."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from daemon_harness import BINARY, Daemon, OpenApi, request, skip_unless_daemon_suite
from harness import SOURCE_DIR

ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210"


def state_dir(test):
    d = tempfile.mkdtemp(prefix="lsb-state-")
    test.addCleanup(shutil.rmtree, d, True)
    return d


def wait_finished(base, xid, token=None, timeout=60):
    deadline = time.time() + timeout
    while True:
        r = request(base, "GET", f"/v1/executions/{xid}", token=token)
        if r.status != 200 or r.json().get("state") == "finished" or time.time() > deadline:
            return r
        time.sleep(0.05)


class DaemonDefaultsTest(unittest.TestCase):
    """One daemon with default serve settings (only the harness's --policies/--images)."""

    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.d = Daemon()
        cls.addClassCleanup(cls.d.close)

    def call(self, method, path, template=None, body=None, **kw):
        r = request(self.d.base, method, path, body=body, **kw)
        if template and r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def test_default_workers_are_sized_by_box_cost_not_cores(self):
        self.assertIn("workers by box cost", self.d.log())
        metrics = self.call("GET", "/metrics").body.decode()
        workers = [float(line.split()[1]) for line in metrics.splitlines()
                   if line.startswith("lsb_executor_workers ")]
        self.assertTrue(workers, metrics[:500])
        self.assertGreaterEqual(workers[0], 10, f"{os.cpu_count()} cores; the log:\n{self.d.log()[-2000:]}")

    def test_ten_sleeping_subagents_in_one_batch_finish_under_2s(self):
        # Each prints when its sleep began and ended (the box's clock is the host's).
        code = "import time\nstart = time.time()\ntime.sleep(1)\nprint(start, time.time())"
        load_before = os.getloadavg()[0]
        start = time.monotonic()
        r = self.call("POST", "/v1/batch", "/v1/batch", {"tasks": [{"code": code}] * 10, "concurrency": 10})
        elapsed = time.monotonic() - start
        self.assertEqual(r.status, 200, r.body[:2000])
        results = r.json()["results"]
        self.assertEqual([x.get("exit_code") for x in results], [0] * 10, results)
        self.assertEqual(r.json()["concurrency"], {"requested": 10, "granted": 10})
        spans = [tuple(map(float, x["stdout"].split())) for x in results]
        print(f"\n[defaults] ten time.sleep(1) sub-agents in one batch: {elapsed:.2f} s on {os.cpu_count()} cores "
              f"(load average {load_before:.1f} before)")
        # All ten slept at once: the last to start began before the first to finish ended.
        self.assertLess(max(s for s, _ in spans), min(e for _, e in spans), spans)
        # The wall-clock promise holds on this 2-core machine when its cores are ours (a box
        # costs ~50 ms of CPU to start; other builds on the host can take most of the cores).
        if load_before > 2 * (os.cpu_count() or 1):
            print(f"[defaults] host overloaded by others (load {load_before:.1f}): the 2 s bound is not asserted")
            return
        self.assertLess(elapsed, 2.0, "ten 1 s sleeps in parallel took too long")

    def test_sync_execute_names_its_id_in_a_header(self):
        r = self.call("POST", "/v1/execute", "/v1/execute", {"code": "print(1)"})
        self.assertEqual(r.status, 200, r.body[:1000])
        self.assertEqual(r.headers.get("X-Execution-Id"), r.json()["execution_id"])
        self.assertTrue(r.headers["X-Execution-Id"].startswith("ex-"))
        # The streaming form sends it with its headers, before any output.
        s = self.call("POST", "/v1/execute?stream=true", None, {"code": "print(1)"})
        self.assertEqual(s.status, 200, s.body[:1000])
        xid = s.headers.get("X-Execution-Id")
        self.assertTrue(xid and xid.startswith("ex-"), dict(s.headers))
        self.assertIn(f'"execution_id":"{xid}"', s.body.decode())

    def test_async_execute_answers_202_with_the_id_then_the_result(self):
        r = self.call("POST", "/v1/execute", "/v1/execute",
                      {"code": "import time\ntime.sleep(0.5)\nprint('later')"},
                      headers={"Prefer": "respond-async"})
        self.assertEqual(r.status, 202, r.body[:1000])
        xid = r.json()["execution_id"]
        self.assertEqual(r.headers.get("Location"), f"/v1/executions/{xid}")
        self.assertEqual(r.headers.get("X-Execution-Id"), xid)
        self.assertEqual(r.json()["state"], "queued")
        first = self.call("GET", f"/v1/executions/{xid}", "/v1/executions/{id}")
        self.assertEqual(first.status, 200, first.body[:1000])
        self.assertIn(first.json()["state"], ("queued", "running", "finished"))
        done = wait_finished(self.d.base, xid)
        self.api.check("GET", "/v1/executions/{id}", 200, done.json())
        body = done.json()
        self.assertEqual(body["state"], "finished", body)
        self.assertTrue(body["async"])
        self.assertEqual(body["result"]["stdout"], "later\n")
        self.assertEqual(body["result"]["execution_id"], xid)
        # Kept: a second fetch answers the same result.
        again = self.call("GET", f"/v1/executions/{xid}", "/v1/executions/{id}").json()
        self.assertEqual(again["result"]["stdout"], "later\n")

    def test_async_query_form_and_refusals(self):
        r = self.call("POST", "/v1/execute?async=true", "/v1/execute", {"code": "print(2)"})
        self.assertEqual(r.status, 202, r.body[:1000])
        self.assertEqual(wait_finished(self.d.base, r.json()["execution_id"]).json()["result"]["stdout"], "2\n")
        both = self.call("POST", "/v1/execute?async=true&stream=true", "/v1/execute", {"code": "print(2)"})
        self.assertEqual(both.status, 400, both.body[:1000])
        self.assertIn("async", both.json()["error"]["message"])
        # A plan the daemon refuses is refused before anything is queued, as in the synchronous form.
        bad = self.call("POST", "/v1/execute?async=true", "/v1/execute", {"code": "1", "policy": "nope"})
        self.assertEqual(bad.status, 400, bad.body[:1000])


class BatchConcurrencyCapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--max-concurrency", "2")
        cls.addClassCleanup(cls.d.close)

    def test_a_capped_batch_concurrency_is_said_in_the_answer(self):
        r = request(self.d.base, "POST", "/v1/batch", {"tasks": ["print(1)"] * 3, "concurrency": 10})
        self.assertEqual(r.status, 200, r.body[:1000])
        OpenApi().check("POST", "/v1/batch", 200, r.json())
        c = r.json()["concurrency"]
        self.assertEqual((c["requested"], c["granted"]), (10, 2), c)
        self.assertIn("at most 2", c["reason"])
        r = request(self.d.base, "POST", "/v1/batch", {"tasks": ["print(1)"]})
        self.assertEqual(r.json()["concurrency"], {"requested": None, "granted": 2})


class AsyncResultsBoundsAndOwnersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--async-keep", "2", "--max-concurrency", "4",
                       env={"LLM_SANDBOX_TOKENS": f"{ALICE},{BOB}"})
        cls.addClassCleanup(cls.d.close)

    def submit(self, code, token=ALICE):
        return request(self.d.base, "POST", "/v1/execute", {"code": code}, token=token,
                       headers={"Prefer": "respond-async"})

    def test_another_owner_gets_404_and_the_oldest_result_goes_first(self):
        first = self.submit("print('a')").json()["execution_id"]
        self.assertEqual(wait_finished(self.d.base, first, ALICE).json()["result"]["stdout"], "a\n")
        self.assertEqual(request(self.d.base, "GET", f"/v1/executions/{first}", token=BOB).status, 404)
        second = self.submit("print('b')").json()["execution_id"]
        wait_finished(self.d.base, second, ALICE)
        third = self.submit("print('c')").json()["execution_id"]
        wait_finished(self.d.base, third, ALICE)
        # Two kept: the first went (and with monitoring on, the recent view still has it).
        got = request(self.d.base, "GET", f"/v1/executions/{first}", token=ALICE).json()
        self.assertNotIn("async", got)
        self.assertEqual(request(self.d.base, "GET", f"/v1/executions/{third}", token=ALICE).json()["result"]["stdout"],
                         "c\n")

    def test_a_store_full_of_pending_executions_refuses_with_429(self):
        ids = [self.submit("import time\ntime.sleep(2)") for _ in range(2)]
        self.assertEqual([r.status for r in ids], [202, 202])
        refused = self.submit("print(1)")
        self.assertEqual(refused.status, 429, refused.body[:500])
        self.assertIn("--async-keep", refused.json()["error"]["message"])
        self.assertTrue(refused.headers.get("Retry-After"))
        for r in ids:
            wait_finished(self.d.base, r.json()["execution_id"], ALICE)


class DefaultAuditLogTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()

    def logs(self, *args, env=None):
        return subprocess.run([BINARY, "logs", *args], capture_output=True, text=True, timeout=30,
                              env=env, cwd=SOURCE_DIR)

    def test_written_by_default_in_the_state_dir_and_read_by_logs(self):
        state = state_dir(self)
        env = dict(os.environ, LLM_SANDBOX_STATE_DIR=state)
        d = Daemon(env=env)
        self.addCleanup(d.close)
        r = request(d.base, "POST", "/v1/execute", {"code": "print(1)"})
        xid = r.json()["execution_id"]
        path = os.path.join(state, "daemons", f"127.0.0.1_{d.port}", "audit.jsonl")  # this daemon's own
        self.assertIn("audit log " + path, d.log())
        with open(path, encoding="utf-8") as f:
            self.assertIn(xid, [json.loads(line).get("execution_id") for line in f])
        out = self.logs("--execution", xid, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(xid, out.stdout)

    def test_each_daemon_has_its_own_and_logs_picks_one(self):
        """Issue 37: two daemons of one state dir no longer write, and `logs` no longer reads, one file."""
        state = state_dir(self)
        env = dict(os.environ, LLM_SANDBOX_STATE_DIR=state)
        env.pop("LLM_SANDBOX_AUDIT_LOG", None)
        a, b = Daemon(env=env), Daemon(env=env)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        xa = request(a.base, "POST", "/v1/execute", {"code": "print(1)"}).json()["execution_id"]
        xb = request(b.base, "POST", "/v1/execute", {"code": "print(2)"}).json()["execution_id"]
        mine = self.logs("--daemon", f"127.0.0.1:{a.port}", "--json", env=env)
        self.assertEqual(mine.returncode, 0, mine.stderr)
        self.assertIn(xa, mine.stdout)
        self.assertNotIn(xb, mine.stdout)
        # Without --daemon: the one written last, said so on stderr with how to choose.
        last = self.logs("--json", env=env)
        self.assertEqual(last.returncode, 0, last.stderr)
        self.assertIn(xb, last.stdout)
        self.assertIn(f"reading the log of daemon 127.0.0.1_{b.port}", last.stderr)
        self.assertIn("--daemon HOST:PORT", last.stderr)
        # An explicit place is kept as it was.
        explicit = os.path.join(state, "mine.jsonl")
        c = Daemon(env=dict(env, LLM_SANDBOX_AUDIT_LOG=explicit))
        self.addCleanup(c.close)
        self.assertIn("audit log " + explicit, c.log())

    def test_none_turns_it_off(self):
        state = state_dir(self)
        d = Daemon("--audit-log", "none", env=dict(os.environ, LLM_SANDBOX_STATE_DIR=state))
        self.addCleanup(d.close)
        request(d.base, "POST", "/v1/execute", {"code": "print(1)"})
        self.assertIn("no audit log", d.log())
        self.assertEqual(os.listdir(state), [])

    def test_unknown_filter_values_are_errors_listing_the_valid_ones(self):
        state = state_dir(self)
        with open(os.path.join(state, "audit.jsonl"), "w") as f:
            f.write('{"type": "execution", "status": "ok", "execution_id": "ex-1"}\n')
        env = dict(os.environ, LLM_SANDBOX_STATE_DIR=state)
        for args, valid in ((["--status", "bogus"], "output_limit"), (["--rule", "netwrk_attempt"], "network_attempt"),
                            (["--type", "alerts"], "execution")):
            out = self.logs(*args, env=env)
            self.assertEqual(out.returncode, 2, (args, out.stdout, out.stderr))
            self.assertIn(args[1], out.stderr)
            self.assertIn(valid, out.stderr)
            self.assertEqual(out.stdout, "")
        ok = self.logs("--status", "ok", env=env)
        self.assertEqual((ok.returncode, ok.stdout.count("ex-1")), (0, 1), ok.stderr)
        self.assertEqual(self.logs("--rule", "network_attempt", env=env).returncode, 0)


class MissingWorkdirTest(unittest.TestCase):
    """Issue 37 item 3: a policy whose workdir the box will not have is not runnable (400 naming the path and the
    fix), where every session of it used to fail with 502 "chdir to the workdir: No such file or directory"."""

    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()

    def test_refused_with_400_naming_the_path_and_the_fix(self):
        pdir = state_dir(self)
        shutil.copy(os.path.join(SOURCE_DIR, "policies", "code-sandbox.yaml"), pdir)
        with open(os.path.join(pdir, "nowhere.yaml"), "w") as f:
            f.write('version: "1.0"\nname: nowhere\ncontainer:\n  image: host\n  workdir: /lsb-nowhere\n')
        d = Daemon("--backend", "native", policies=pdir)
        self.addCleanup(d.close)
        got = request(d.base, "GET", "/v1/policies/nowhere").json()
        self.assertFalse(got["runnable"])
        self.assertIn("/lsb-nowhere does not exist in the box", got["reason"])
        for path, body in (("/v1/execute", {"code": "print(1)", "policy": "nowhere"}),
                           ("/v1/sessions", {"policy": "nowhere"})):
            r = request(d.base, "POST", path, body)
            self.assertEqual(r.status, 400, r.body)
            self.assertIn("/lsb-nowhere does not exist in the box", r.json()["error"]["message"])
            self.assertIn("mkdir -p /lsb-nowhere", r.json()["error"]["message"])
        self.assertEqual(request(d.base, "POST", "/v1/execute", {"code": "print(1)"}).json()["stdout"], "1\n")


class BodyLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()

    def test_the_default_body_carries_a_file_of_max_file_bytes(self):
        d = Daemon()
        self.addCleanup(d.close)
        data = os.urandom(12 << 20)  # under --max-file (16 MiB), over the old 10 MiB body as base64
        body = {"code": "import os\nprint(os.path.getsize('/tmp/big.bin'))",
                "files": [{"path": "/tmp/big.bin", "content_base64": base64.b64encode(data).decode()}]}
        r = request(d.base, "POST", "/v1/execute", body, timeout=120)
        self.assertEqual(r.status, 200, r.body[:1000])
        self.assertEqual(r.json()["stdout"], f"{12 << 20}\n", r.json())

    def test_an_inconsistent_pair_is_refused_at_startup(self):
        p = subprocess.run([BINARY, "serve", "--listen", "127.0.0.1:0", "--max-body", "1M", "--max-file", "16M"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--max-body", p.stderr)
        self.assertIn("--max-file", p.stderr)


if __name__ == "__main__":
    unittest.main()
