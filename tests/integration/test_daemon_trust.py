"""Request validation and trust through the real `llm-sandbox serve` (docs/security.md, issue 15):

  Class 8  environment a policy refuses, a request may not set either: every route that carries
           an environment (execute, its stream, batch, session execute, the MCP tools) answers 400
           naming the variable, and nothing runs;
  Class 9  sessions trust what ran before: an execution that rewrites the session's interpreter
           forges what later executions report; every session result says so ("trust": "session"),
           in the answer and the audit log, and what comes from outside the box still holds
           (alerts, the host's timeout);
  limits   a request's limits that no box can run with ("memory": "1", cpu 0.001, ...) are 400
           naming the field, never a 502 from a box that could not start.
"""
import json
import os
import tempfile
import unittest

from daemon_harness import Daemon, request, skip_unless_daemon_suite

# Variables refused from a request, each with words its message must carry.
REFUSED = [
    ("LD_PRELOAD", "/lib/x86_64-linux-gnu/libc.so.6", "dynamic loader"),
    ("LD_LIBRARY_PATH", "/tmp", "dynamic loader"),
    ("LD_AUDIT", "/tmp/a.so", "dynamic loader"),
    ("GLIBC_TUNABLES", "glibc.malloc.check=3", "glibc"),
    ("GCONV_PATH", "/tmp", "glibc"),
    ("PYTHONPATH", "/tmp", "start-up hook"),
    ("PYTHONSTARTUP", "/tmp/s.py", "start-up hook"),
    ("PYTHONHOME", "/tmp", "start-up hook"),
    ("BASH_ENV", "/tmp/x.sh", "start-up hook"),
    ("ENV", "/tmp/x.sh", "start-up hook"),
    ("NODE_OPTIONS", "--require /tmp/x.js", "start-up hook"),
    ("PATH", "/tmp", "init sets it"),
    ("HOME", "/tmp", "init sets it"),
]
BAD_NAMES = [("A=B", "not a valid variable name"), ("A\u0000B", "not a valid variable name"),
             ("", "not a valid variable name"), ("1X", "not a valid variable name"), ("A B", "not a valid variable name")]

SHOW_ENV = "import os\nprint(sorted(k for k in os.environ if k.startswith(('LD_', 'GLIBC', 'GCONV', 'PYTHON', 'X_'))))"


class EnvAndLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon("--max-concurrency", "2")
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def post(self, path, body, **kw):
        return request(self.d.base, "POST", path, body=body, **kw)

    def assertBad(self, r, *words):
        self.assertEqual(r.status, 400, r.body[:2000])
        err = r.json()["error"]
        self.assertEqual(err["code"], "bad_request")
        for w in words:
            self.assertIn(w, err["message"])
        return err["message"]

    def session(self, language="python"):
        r = self.post("/v1/sessions", {"language": language})
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(request, self.d.base, "DELETE", f"/v1/sessions/{sid}")
        return sid

    # ---- Class 8

    def test_refused_env_on_execute_stream_and_batch(self):
        for name, value, words in REFUSED:
            body = {"code": "print('ran')", "env": {name: value}}
            self.assertBad(self.post("/v1/execute", body), f"env.{name}", words)
            self.assertBad(self.post("/v1/execute?stream=true", body), f"env.{name}", words)
            r = self.post("/v1/batch", {"tasks": [{"code": "print('ok')"}, body]})
            self.assertEqual(r.status, 200, r.body)
            ok, bad = r.json()["results"]
            self.assertEqual(ok["stdout"], "ok\n", ok)
            self.assertEqual(bad["error"]["code"], "bad_request", bad)
            self.assertIn(f"tasks[1].env.{name}", bad["error"]["message"])
        for name, words in BAD_NAMES:
            self.assertBad(self.post("/v1/execute", {"code": "1", "env": {name: "x"}}), words)
        self.assertBad(self.post("/v1/execute", {"code": "1", "env": {"V": "a\u0000b"}}), "env.V", "NUL")

    def test_refused_env_on_session_execute(self):
        sid = self.session("python")
        for name, value, words in REFUSED:
            r = self.post(f"/v1/sessions/{sid}/execute", {"code": "print(1)", "env": {name: value}})
            self.assertBad(r, f"env.{name}", words)
        for name, words in BAD_NAMES:
            self.assertBad(self.post(f"/v1/sessions/{sid}/execute", {"code": "1", "env": {name: "x"}}), words)
        # Allowed names are refused too where the interpreter cannot apply them: never dropped.
        self.assertBad(self.post(f"/v1/sessions/{sid}/execute", {"code": "1", "env": {"X_MODE": "t"}}),
                       "env", "keeps the environment it started with")
        # A session is created without an environment of its own: env there is an unknown field.
        self.assertBad(self.post("/v1/sessions", {"env": {"LD_PRELOAD": "/x.so"}}), "env", "unknown field")
        # The session is unharmed: nothing ran, the next execution works.
        r = self.post(f"/v1/sessions/{sid}/execute", {"code": "print('fine')"})
        self.assertEqual(r.json()["stdout"], "fine\n", r.body)

    def test_env_bounds(self):
        too_many = {f"X_{i}": "1" for i in range(129)}
        self.assertBad(self.post("/v1/execute", {"code": "1", "env": too_many}), "env", "limit is 128")
        self.assertBad(self.post("/v1/execute", {"code": "1", "env": {"X_BIG": "v" * (32 * 1024 + 1)}}),
                       "env.X_BIG", "limit is 32768")
        self.assertBad(self.post("/v1/execute", {"code": "1", "env": {"X" * 129: "1"}}), "limit is 128")
        # At the bounds it runs, and the program sees exactly what was given.
        at_bound = {f"X_{i}": "1" for i in range(128)}
        r = self.post("/v1/execute", {"code": "import os\nprint(sum(k.startswith('X_') for k in os.environ))",
                                      "env": at_bound})
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.json()["stdout"], "128\n")

    def test_allowed_env_reaches_the_program_and_nothing_else(self):
        r = self.post("/v1/execute", {"code": SHOW_ENV, "env": {"X_MODE": "t", "PYTHONUNBUFFERED": "1",
                                                               "ld_preload": "lower-case is not the loader's"}})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["stdout"], "['PYTHONUNBUFFERED', 'X_MODE']\n", r.body)

    def test_mcp_tools_refuse_env(self):
        h = {"Accept": "application/json, text/event-stream"}
        init = self.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "1"}}}, headers=h)
        self.assertEqual(init.status, 200, init.body)
        h["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
        r = self.post("/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "execute_code",
                                          "arguments": {"code": SHOW_ENV, "env": {"LD_PRELOAD": "/x.so"}}}},
                      headers=h)
        self.assertEqual(r.status, 200, r.body)
        res = r.json()["result"]
        self.assertTrue(res["isError"], res)
        self.assertIn("env: not an argument of execute_code", res["content"][0]["text"])

    # ---- request limits: 400 naming the field, never 502

    def test_limits_no_box_can_run_with_are_400(self):
        for field, value in (("memory", "1"), ("memory", 1), ("memory", "1K"), ("memory", "15M"),
                             ("memory", "-5"), ("memory", -5), ("memory", 1.5), ("memory", "lots"),
                             ("memory", "1E"), ("memory", "99999999999999999999T"), ("memory", 2 ** 64 + 1),
                             ("cpu", "0"), ("cpu", 0), ("cpu", 0.001), ("cpu", "1m"), ("cpu", -1),
                             ("timeout", 0), ("timeout", "0s"), ("timeout", -1), ("timeout", 1e12)):
            msg = self.assertBad(self.post("/v1/execute", {"code": "print(1)", field: value}), field)
            self.assertTrue(msg.startswith(field + ":"), msg)
            r = self.post("/v1/batch", {"tasks": [{"code": "print(1)", field: value}]})
            err = r.json()["results"][0]["error"]
            self.assertEqual(err["code"], "bad_request", err)
            self.assertTrue(err["message"].startswith(f"tasks[0].{field}:"), err)
        # Above the policy: 403 as before; at the floor: it runs (the program may well be OOM-killed,
        # which is then its own, reported outcome: never a sandbox error).
        self.assertEqual(self.post("/v1/execute", {"code": "1", "memory": "1T"}).status, 403)
        self.assertEqual(self.post("/v1/execute", {"code": "1", "memory": 2 ** 63}).status, 403)
        self.assertEqual(self.post("/v1/execute", {"code": "1", "cpu": 1e300}).status, 403)
        r = self.post("/v1/execute", {"code": "print(1)", "memory": "16M", "cpu": 0.01})
        self.assertEqual(r.status, 200, r.body)
        self.assertIn(r.json()["status"], ("ok", "oom"), r.body)


class SessionTrustTest(unittest.TestCase):
    """Class 9: the attack first, then what the record says and what still holds."""

    FORGE = r'''
import builtins, io, contextlib
_real_exec = builtins.exec
def _forged(code, g, *rest):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            _real_exec(code, g, *rest)
        except BaseException:
            pass
    print("all 112 tests passed")
builtins.exec = _forged
print("installed")
'''

    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.tmp = tempfile.mkdtemp(prefix="lsb-trust-")
        cls.audit = os.path.join(cls.tmp, "audit.jsonl")
        cls.d = Daemon("--audit-log", cls.audit, "--max-concurrency", "2")
        cls.addClassCleanup(cls.d.close)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def post(self, path, body):
        r = request(self.d.base, "POST", path, body=body)
        return r

    def audit_record(self, xid):
        with open(self.audit) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("type") == "execution" and rec.get("execution_id") == xid:
                    return rec
        self.fail(f"no audit record for {xid}")

    def test_forged_interpreter_is_reported_as_session_trust(self):
        one = self.post("/v1/execute", {"code": "import sys\nprint('real')\nsys.exit(3)"}).json()
        self.assertEqual((one["stdout"], one["exit_code"], one["trust"]), ("real\n", 3, "execution"), one)
        self.assertEqual(one["backend"], os.environ.get("LLM_SANDBOX_BACKEND", "native"))  # the suite's backend

        sid = self.post("/v1/sessions", {"language": "python"}).json()["session_id"]
        self.addCleanup(request, self.d.base, "DELETE", f"/v1/sessions/{sid}")
        first = self.post(f"/v1/sessions/{sid}/execute", {"code": self.FORGE}).json()
        self.assertEqual(first["stdout"], "installed\n", first)
        self.assertEqual(first["trust"], "session")

        # The attack: a later execution's own output and exit code are replaced by the earlier one's
        # code, in the answer and in the audit log. A session is one trust domain; the record says so.
        later = self.post(f"/v1/sessions/{sid}/execute",
                          {"code": "import sys\nprint('3 tests FAILED')\nsys.exit(3)"}).json()
        self.assertEqual((later["stdout"], later["exit_code"], later["status"]), ("all 112 tests passed\n", 0, "ok"),
                         later)
        self.assertEqual(later["trust"], "session")
        rec = self.audit_record(later["execution_id"])
        self.assertEqual((rec["exit_code"], rec["trust"], rec["session_id"]), (0, "session", sid), rec)

        # What holds: alerts come from init's watch, not from the interpreter's report...
        denied = self.post(f"/v1/sessions/{sid}/execute",
                           {"code": "import os\nos.system('/bin/sh -c true')"}).json()
        self.assertEqual(denied["stdout"], "all 112 tests passed\n", denied)
        self.assertIn("denied_exec", [a["rule"] for a in denied["alerts"]], denied)
        # ... and the timeout is the host's clock, whatever the interpreter would say.
        slow = self.post(f"/v1/sessions/{sid}/execute", {"code": "while True: pass", "timeout": 1}).json()
        self.assertEqual(slow["status"], "timeout", slow)
        self.assertEqual(slow["trust"], "session")
        self.assertIn("timeout", [a["rule"] for a in slow["alerts"]], slow)
        # The interpreter was killed at the timeout: the next execution gets a fresh one, but the box's
        # files are still the session's, so the record stays "session".
        fresh = self.post(f"/v1/sessions/{sid}/execute", {"code": "import sys\nprint('x')\nsys.exit(3)"}).json()
        self.assertEqual((fresh["stdout"], fresh["exit_code"], fresh["trust"]), ("x\n", 3, "session"), fresh)


if __name__ == "__main__":
    unittest.main()
