"""The JSON routes the dashboard reads (docs/monitoring.md "The dashboard"), through the real
`llm-sandbox serve` with an audit log, every answer checked against docs/openapi.yaml:
GET /v1/overview (daemon and host totals), GET /v1/history (the audit log, paged newest first),
the policy/status/rule filters on it and on GET /v1/executions (unknown values are 400s that list
the valid ones), CPU relative to the policy's CPU limit, and ownership with two tokens: each sees
only its own history, sessions and running executions."""
import json
import os
import re
import shutil
import tempfile
import unittest

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite

ALICE, BOB = "alice-dashboard-token-01", "bob-dashboard-token-02"


class DashboardApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.tmp = tempfile.mkdtemp(prefix="lsb-dash-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.d = Daemon("--audit-log", os.path.join(cls.tmp, "audit.log"))
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def get(self, path, template, status=200):
        r = request(self.d.base, "GET", path)
        self.assertEqual(r.status, status, r.body[:2000])
        self.api.check("GET", template, r.status, r.json())
        return r.json()

    def execute(self, body):
        r = request(self.d.base, "POST", "/v1/execute", body)
        self.assertEqual(r.status, 200, r.body[:2000])
        return r.json()

    def test_overview_reports_daemon_host_executor_pool_and_sessions(self):
        self.execute({"code": "print(1)"})
        o = self.get("/v1/overview", "/v1/overview")
        self.assertEqual(o["owner"], "")
        self.assertGreater(o["daemon"]["rss_bytes"], 1 << 20)
        self.assertEqual(o["daemon"]["pid"], self.d.proc.pid)
        self.assertIsNotNone(o["host"]["cpu_percent"])  # sampled at start, so the first answer has one
        self.assertGreaterEqual(o["host"]["cpus"], 1)
        self.assertGreater(o["host"]["memory_total_bytes"], o["host"]["memory_available_bytes"])
        self.assertGreaterEqual(o["executor"]["workers"], 1)
        self.assertEqual(o["executor"]["queued"], 0)
        self.assertIn("code-sandbox", o["pool"]["by_policy"])  # the native pool, per policy
        self.assertTrue(o["audit_log"])
        self.assertIn("timeout", o["filters"]["statuses"])
        self.assertIn("network_attempt", o["filters"]["rules"])
        self.assertIn("bash-tools", o["filters"]["policies"])
        before = o["sessions"]["active"]
        sid = request(self.d.base, "POST", "/v1/sessions", {}).json()["session_id"]
        self.addCleanup(request, self.d.base, "DELETE", f"/v1/sessions/{sid}")
        o = self.get("/v1/overview", "/v1/overview")
        self.assertEqual(o["sessions"]["active"], before + 1)
        self.assertEqual(o["sessions"]["mine"], before + 1)

    def test_history_pages_newest_first_with_nothing_repeated_or_lost(self):
        ids = [self.execute({"code": f"print({i})"})["execution_id"] for i in range(7)]
        seen, cursor, pages = [], None, 0
        while True:
            q = "/v1/history?limit=3" + (f"&cursor={cursor}" if cursor else "")
            page = self.get(q, "/v1/history")
            self.assertLessEqual(len(page["executions"]), 3)
            seen += [e["execution_id"] for e in page["executions"]]
            pages += 1
            cursor = page["next_cursor"]
            if not cursor or pages > 100:
                break
        self.assertEqual(len(seen), len(set(seen)), "a record came twice")
        self.assertEqual([x for x in seen if x in ids], list(reversed(ids)))
        self.assertGreaterEqual(pages, 3)
        e = self.get("/v1/history?limit=1", "/v1/history")["executions"][0]
        self.assertEqual(e["state"], "finished")
        self.assertNotIn("stdout", e)  # the audit log keeps sizes and hashes, not output
        self.assertNotIn("trace", e)

    def test_unknown_filter_values_and_bad_paging_are_400s_that_say_what_is_valid(self):
        for route in ("/v1/executions", "/v1/history"):
            for q, mentions in (("status=bogus", "ok, error, timeout"), ("rule=netwrk_attempt", "network_attempt"),
                                ("policy=no-such", "code-sandbox")):
                r = request(self.d.base, "GET", f"{route}?{q}")
                self.assertEqual(r.status, 400, (route, q, r.body))
                self.api.check("GET", route, 400, r.json())
                self.assertIn(mentions, r.json()["error"]["message"])
                self.assertIn(q.split("=")[0] + ":", r.json()["error"]["message"])
        for q, mentions in (("limit=201", "1 to 200"), ("limit=0", "1 to 200"), ("cursor=../etc", "next_cursor")):
            r = request(self.d.base, "GET", f"/v1/history?{q}")
            self.assertEqual(r.status, 400, (q, r.body))
            self.assertIn(mentions, r.json()["error"]["message"])

    def test_filters_select_by_policy_status_and_rule(self):
        bash = self.execute({"code": "echo hi", "policy": "bash-tools", "language": "bash"})["execution_id"]
        err = self.execute({"code": "raise SystemExit(3)"})["execution_id"]
        net = self.execute({"code": "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), 1)\n"
                                    "except OSError:\n    pass\n"})["execution_id"]
        for route, key in (("/v1/executions", "recent"), ("/v1/history", "executions")):
            got = self.get(f"{route}?policy=bash-tools", route)[key]
            self.assertIn(bash, [e["execution_id"] for e in got])
            self.assertEqual({e["policy"] for e in got}, {"bash-tools"})
            got = self.get(f"{route}?status=error", route)[key]
            self.assertIn(err, [e["execution_id"] for e in got])
            self.assertEqual({e["status"] for e in got}, {"error"})
            got = self.get(f"{route}?rule=network_attempt", route)[key]
            self.assertEqual([e["execution_id"] for e in got][:1], [net])
            self.assertTrue(all(any(a["rule"] == "network_attempt" for a in e["alerts"]) for e in got))

    def test_cpu_percent_is_relative_to_the_policys_cpu_limit(self):
        res = self.execute({"code": "import time\nend = time.time() + 1\nwhile time.time() < end: pass\n"})
        xid = res["execution_id"]
        view = self.get(f"/v1/executions/{xid}", "/v1/executions/{id}")
        hist = next(e for e in self.get("/v1/history?limit=20", "/v1/history")["executions"] if e["execution_id"] == xid)
        for e in (view, hist):
            self.assertEqual(e["cpu_limit"], 0.5)  # policies/code-sandbox.yaml: resources.cpu
            want = 100.0 * e["cpu_ms"] / (e["duration_ms"] * 0.5)
            self.assertAlmostEqual(e["cpu_percent_of_limit"], want, places=6)
            self.assertGreater(e["cpu_percent_of_limit"], 50)  # a busy loop uses most of its half core


class DashboardFirstPaint(unittest.TestCase):
    """GET / is served to anyone, with the state drawn before the first poll (issue 37) only when
    the daemon has no tokens: a daemon with tokens must put none of its data in the page."""

    def page(self, d, token=None):
        r = request(d.base, "GET", "/", token=token)
        self.assertEqual(r.status, 200)
        text = r.body.decode() if isinstance(r.body, bytes) else r.body
        first = re.search(r"const FIRST = (.*);\n", text)
        self.assertIsNotNone(first, "the page has no FIRST snapshot line")
        return text, first.group(1)

    def test_without_tokens_the_page_carries_the_state_escaped(self):
        skip_unless_daemon_suite()
        d = Daemon()
        self.addCleanup(d.close)
        xid = request(d.base, "POST", "/v1/execute", {"code": "print('</script><b>x</b>')"}).json()["execution_id"]
        text, first = self.page(d)
        snapshot = json.loads(first)
        self.assertIn(xid, [e["execution_id"] for e in snapshot["executions"]["recent"]])
        self.assertIn("executor", snapshot["overview"])
        self.assertEqual(snapshot["sessions"], {"sessions": []})
        self.assertNotIn("</script><b>", first)  # a value cannot end the page's script
        self.assertIn('<span id="conn" class="up">up</span>', text)
        self.assertNotIn("connecting", text.split("<script>")[0])

    def test_with_tokens_the_page_carries_nothing(self):
        skip_unless_daemon_suite()
        d = Daemon(env={"LLM_SANDBOX_TOKENS": ALICE})
        self.addCleanup(d.close)
        request(d.base, "POST", "/v1/execute", {"code": "print('secret-output')"}, token=ALICE)
        text, first = self.page(d)
        self.assertEqual(first, "null")
        self.assertNotIn("secret-output", text)
        self.assertIn('<span id="conn" class="down">loading</span>', text)


class DashboardApiOwnership(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.tmp = tempfile.mkdtemp(prefix="lsb-dash-own-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.d = Daemon("--audit-log", os.path.join(cls.tmp, "audit.log"), env={"LLM_SANDBOX_TOKENS": f"{ALICE},{BOB}"})
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def call(self, token, method, path, body=None):
        r = request(self.d.base, method, path, body=body, token=token)
        if r.headers.get("Content-Type", "").startswith("application/json") and r.body and path.startswith("/v1/"):
            template = path.split("?")[0]
            if template in ("/v1/history", "/v1/overview") and r.status == 200:
                self.api.check(method, template, r.status, r.json())
        return r

    def test_history_sessions_and_totals_show_each_token_only_its_own(self):
        self.assertEqual(self.call(None, "GET", "/v1/history").status, 401)
        self.assertEqual(self.call(None, "GET", "/v1/overview").status, 401)
        xid = self.call(ALICE, "POST", "/v1/execute", {"code": "print('alice')"}).json()["execution_id"]
        sid = self.call(ALICE, "POST", "/v1/sessions", {}).json()["session_id"]
        self.addCleanup(self.call, ALICE, "DELETE", f"/v1/sessions/{sid}")

        alice = [e["execution_id"] for e in self.call(ALICE, "GET", "/v1/history").json()["executions"]]
        bob = [e["execution_id"] for e in self.call(BOB, "GET", "/v1/history").json()["executions"]]
        self.assertIn(xid, alice)
        self.assertNotIn(xid, bob)
        self.assertNotIn(xid, [e["execution_id"] for e in
                               self.call(BOB, "GET", "/v1/history?policy=code-sandbox").json()["executions"]])
        # Bob's cursor into the same file still yields none of Alice's records.
        page = self.call(BOB, "GET", "/v1/history?limit=1").json()
        if page["next_cursor"]:
            more = self.call(BOB, "GET", f"/v1/history?cursor={page['next_cursor']}").json()["executions"]
            self.assertNotIn(xid, [e["execution_id"] for e in more])

        oa, ob = self.call(ALICE, "GET", "/v1/overview").json(), self.call(BOB, "GET", "/v1/overview").json()
        self.assertRegex(oa["owner"], r"^tok-[0-9a-f]{16}$")
        self.assertNotEqual(oa["owner"], ob["owner"])
        self.assertNotIn(ALICE, str(oa))
        self.assertEqual(oa["sessions"]["mine"], 1)
        self.assertEqual(ob["sessions"]["mine"], 0)
        self.assertEqual(ob["sessions"]["active"], 1)  # the daemon-wide count, as /metrics gives it
        self.assertNotIn(sid, [s["session_id"] for s in self.call(BOB, "GET", "/v1/sessions").json()["sessions"]])


if __name__ == "__main__":
    unittest.main()
