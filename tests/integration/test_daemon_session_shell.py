"""Stateful bash, sh and node sessions (repl_driver.h) through the real `llm-sandbox serve` with
the shipped bash-tools and node policies: a bash session keeps its working directory, exported
variables and functions from one execute to the next (sh too); a node session keeps its globals
and top-level declarations; each execute has its own stdout, stderr and exit code; a per-execute
timeout and the output cap kill the shell, say so ("interpreter_restarted") and leave the session
usable with a fresh one; `exit` ends the shell with its code; a command runs through the shell."""
import shutil
import threading
import time
import unittest

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite


class SessionCalls(unittest.TestCase):
    # A daemon with the shipped policies, and the session calls both test classes make.
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.d = Daemon("--max-concurrency", "4")
        cls.addClassCleanup(cls.d.close)

    def call(self, method, path, template, body=None):
        r = request(self.d.base, method, path, body=body)
        if r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def new_session(self, policy, **body):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", dict(policy=policy, **body))
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(self.call, "DELETE", f"/v1/sessions/{sid}", "/v1/sessions/{id}")
        return sid

    def run_in(self, sid, code=None, **body):
        if code is not None:
            body["code"] = code
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute", body)
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def restarted(self, res):
        return [a for a in res["alerts"] if a["rule"] == "interpreter_restarted"]


class ShellSessionTest(SessionCalls):
    def test_bash_keeps_cwd_exports_functions_and_variables(self):
        sid = self.new_session("bash-tools")
        res = self.run_in(sid, "mkdir -p /tmp/x\ncd /tmp/x; export A=1; f() { echo hi; }; B=2; echo err >&2")
        self.assertEqual((res["status"], res["stdout"], res["stderr"]), ("ok", "", "err\n"), res)
        res = self.run_in(sid, "pwd; echo $A; f; echo $B; bash -c 'echo child $A'")
        self.assertEqual(res["stdout"], "/tmp/x\n1\nhi\n2\nchild 1\n", res)
        self.assertEqual(res["stderr"], "")
        res = self.run_in(sid, "false")
        self.assertEqual((res["status"], res["exit_code"]), ("error", 1), res)
        res = self.run_in(sid, "tr a-z A-Z", stdin="abc\n")
        self.assertEqual(res["stdout"], "ABC\n", res)
        res = self.run_in(sid, "U='h\u00e9llo \\ $x'; echo \"$U\" ${#U}")
        self.assertEqual(res["stdout"], "h\u00e9llo \\ $x 10\n", res)  # 10 characters, 11 bytes
        res = self.run_in(sid, "if")  # a syntax error fails the execute, not the shell
        self.assertEqual(res["exit_code"], 2, res)
        self.assertEqual(self.run_in(sid, "echo $B")["stdout"], "2\n")

    def test_a_command_runs_through_the_shell(self):
        sid = self.new_session("bash-tools")
        self.run_in(sid, "mkdir -p /tmp/c && cd /tmp/c && echo data > f.txt")
        res = self.run_in(sid, command=["cat", "f.txt"])
        self.assertEqual((res["status"], res["stdout"]), ("ok", "data\n"), res)
        self.assertEqual(self.run_in(sid, "pwd")["stdout"], "/tmp/c\n")

    def test_sh_session_keeps_state(self):
        sid = self.new_session("bash-tools", language="sh")
        self.run_in(sid, "cd /tmp; X=5; g() { echo g$X; }")
        res = self.run_in(sid, "pwd; g")
        self.assertEqual(res["stdout"], "/tmp\ng5\n", res)

    def test_timeout_and_output_cap_restart_the_shell_and_the_session_goes_on(self):
        sid = self.new_session("bash-tools")
        self.run_in(sid, "K=kept; cd /tmp")
        res = self.run_in(sid, "echo before; sleep 100", timeout=1)
        self.assertEqual(res["status"], "timeout", res)
        self.assertEqual(res["stdout"], "before\n")
        self.assertTrue(self.restarted(res), res["alerts"])
        res = self.run_in(sid, "echo \"[$K]\"; pwd")
        self.assertEqual((res["status"], res["stdout"]), ("ok", "[]\n/home/sandbox\n"), res)
        res = self.run_in(sid, "yes 0123456789 | head -c 3000000")  # the policy's cap is 1M
        self.assertEqual(res["status"], "output_limit", {k: v for k, v in res.items() if k != "stdout"})
        self.assertTrue(res["truncated"])
        self.assertTrue(self.restarted(res))
        self.assertEqual(self.run_in(sid, "echo ok")["stdout"], "ok\n")

    def test_exit_reports_its_code_and_the_next_execute_has_a_fresh_shell(self):
        sid = self.new_session("bash-tools")
        self.run_in(sid, "V=1")
        res = self.run_in(sid, "echo bye; exit 3")
        self.assertEqual((res["exit_code"], res["stdout"]), (3, "bye\n"), res)
        self.assertTrue(self.restarted(res))
        self.assertEqual(self.run_in(sid, "echo \"[$V]\"")["stdout"], "[]\n")

    def test_env_per_execute_is_refused(self):
        sid = self.new_session("bash-tools")
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute",
                      {"code": "echo $Z", "env": {"Z": "1"}})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("export", r.json()["error"]["message"])

    def test_reset_is_a_new_box_and_says_why(self):
        sid = self.new_session("bash-tools")
        self.run_in(sid, "R=1; echo f > /tmp/r.txt")
        r = self.call("POST", f"/v1/sessions/{sid}/reset", "/v1/sessions/{id}/reset")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["reset"]["mode"], "new_box")
        self.assertIn("shell", r.json()["reset"]["why"])
        res = self.run_in(sid, "echo \"[$R]\"; ls /tmp")
        self.assertEqual(res["stdout"], "[]\n", res)

    def test_a_reset_preempts_a_running_execute(self):
        sid = self.new_session("bash-tools")
        got = {}
        t = threading.Thread(target=lambda: got.update(self.run_in(sid, "echo started; sleep 30")))
        t.start()
        time.sleep(1)
        r = self.call("POST", f"/v1/sessions/{sid}/reset", "/v1/sessions/{id}/reset")
        t.join(20)
        self.assertEqual(r.status, 200, r.body)
        self.assertTrue(r.json()["reset"].get("preempted"), r.json())
        self.assertEqual(got.get("status"), "reset", got)
        self.assertEqual(self.run_in(sid, "echo again")["stdout"], "again\n")


@unittest.skipUnless(shutil.which("node") == "/usr/bin/node", "the node policy needs /usr/bin/node")
class NodeSessionTest(SessionCalls):
    def test_node_keeps_globals_and_declarations(self):
        sid = self.new_session("node")
        res = self.run_in(sid, "globalThis.g = 1; var v = 2; let l = 3; function f() { return 'hi'; }")
        self.assertEqual(res["status"], "ok", res)
        res = self.run_in(sid, "console.log(g, v, l, f()); console.error('to stderr')")
        self.assertEqual((res["stdout"], res["stderr"]), ("1 2 3 hi\n", "to stderr\n"), res)
        res = self.run_in(sid, "await new Promise(r => setTimeout(r, 20)); console.log('awaited', g + 1)")
        self.assertEqual(res["stdout"], "awaited 2\n", res)
        res = self.run_in(sid, "throw new Error('boom')")
        self.assertEqual((res["status"], res["exit_code"]), ("error", 1), res)
        self.assertIn("Error: boom", res["stderr"])
        self.assertEqual(self.run_in(sid, "console.log(g)")["stdout"], "1\n")

    def test_node_timeout_leaves_the_session_usable(self):
        sid = self.new_session("node")
        self.run_in(sid, "globalThis.k = 1")
        res = self.run_in(sid, "while (true) {}", timeout=1)
        self.assertEqual(res["status"], "timeout", res)
        self.assertTrue(self.restarted(res))
        self.assertEqual(self.run_in(sid, "console.log(typeof k)")["stdout"], "undefined\n")


if __name__ == "__main__":
    unittest.main()
