"""The reference agent (examples/agent) against the REAL daemon: the requirements' scenario of
10 sub-agents, each in its own sandbox session, over parts of a data set.

The LLM is a local SCRIPTED ENDPOINT (http.server in this file, OpenAI chat-completions format)
STANDING IN FOR A PAID LLM API: it plays the main agent's and the sub-agents' turns from a
script, so the run is deterministic; everything else is real (the agent's HTTP client and tool
loop, the llm_sandbox client, `llm-sandbox serve` on $LSB_TEST_BACKEND (native by default, or
docker: tests/integration/harness.py), the sessions and boxes).

Checked: 10 sessions were open at once and the sub-agents' executions overlapped in time; the
partial results gathered by the main agent (in the sandbox too) give the true total; and no
sub-agent could see another's data: each one tries to open every other part's path and to find
any foreign file in its box, and must fail.
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import BINARY, SOURCE_DIR, boxes_left_by, prepare_test_backend, serve_backend_args

sys.path.insert(0, os.path.join(SOURCE_DIR, "clients", "python"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "agent"))

from daemon_harness import Daemon  # noqa: E402

N = 10
API_KEY = "test-key-not-a-real-one"

# The code the scripted LLM "writes" for sub-agent k: partial stats of its part, plus the
# isolation probe (every other part's path, and any CSV anywhere under /tmp).
SUB_CODE = """\
import csv, glob, json, os
rows = list(csv.DictReader(open({own!r})))
seen = []
for j in range({n}):
    p = "/tmp/part-%d.csv" % j
    if p == {own!r}:
        continue
    try:
        open(p).read()
        seen.append(p)
    except OSError:
        pass
foreign = [f for f in glob.glob("/tmp/**/*.csv", recursive=True) if f != {own!r}]
print(json.dumps({{"part": {k}, "count": len(rows), "sum": sum(int(r["amount"]) for r in rows),
                  "others_readable": seen, "foreign_files": foreign,
                  "pids": len([d for d in os.listdir("/proc") if d.isdigit()])}}))
"""


def last_tool_content(messages):
    tools = [m for m in messages if m.get("role") == "tool"]
    return tools[-1]["content"] if tools else None


def stdout_of(tool_text):
    """The stdout section of a run_code result as the agent formats it."""
    m = re.search(r"stdout:\n(.*?)(?:\nstderr:|\nalerts:|$)", tool_text, re.S)
    return m.group(1).strip() if m else ""


class ScriptedLLM(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: the scripted stand-in for a paid LLM API."""
    requests_seen = []
    lock = threading.Lock()

    def log_message(self, *a):
        pass

    def do_POST(self):
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": {"message": "not found"}})
        if self.headers.get("Authorization") != f"Bearer {API_KEY}":
            return self._send(401, {"error": {"message": "bad key"}})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            ScriptedLLM.requests_seen.append(body)
        self._send(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": self.turn(body["messages"], body.get("tools", []))}]})

    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def call(name, args, cid):
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}

    def turn(self, messages, tools):
        user = messages[1]["content"]
        last = last_tool_content(messages)
        sub = re.match(r"You are sub-agent (\d+) of (\d+)", user)
        if sub:  # a sub-agent's conversation
            k, n = int(sub.group(1)), int(sub.group(2))
            if last is None:
                own = re.search(r"CSV file (\S+)", user).group(1)
                return self.call("run_code", {"code": SUB_CODE.format(own=own, n=n, k=k)}, f"sub{k}")
            return {"role": "assistant", "content": stdout_of(last)}
        # the main agent's conversation
        names = [t["function"]["name"] for t in tools]
        assert names == ["run_code", "spawn_subagents"], names
        if last is None:
            return self.call("spawn_subagents", {"dataset": "sales", "parts": N, "policy": "python-strict",
                                                 "instructions": "Compute count and sum of the amount column."},
                             "spawn")
        if messages[-2].get("tool_calls", [{}])[0].get("id") == "spawn":
            try:
                answers = [json.loads(a["answer"]) for a in json.loads(last)]
            except (TypeError, ValueError):  # a sub-agent failed: end with what it said, for the test's message
                return {"role": "assistant", "content": f"sub-agents failed: {last}"}
            code = ("import json\nparts = json.loads(%r)\nprint(sum(p['sum'] for p in parts), "
                    "sum(p['count'] for p in parts))" % json.dumps(answers))
            return self.call("run_code", {"code": code, "policy": "python-strict"}, "gather")
        total, count = stdout_of(last).split()
        return {"role": "assistant", "content": f"total={total} rows={count}"}


class TestReferenceAgent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BINARY, os.X_OK):
            raise unittest.SkipTest(f"{BINARY} not built")
        prepare_test_backend()
        cls.daemon = Daemon(*serve_backend_args())
        cls.addClassCleanup(cls.daemon.close)
        cls.llm = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedLLM)
        threading.Thread(target=cls.llm.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.llm.shutdown()
        cls.llm.server_close()
        cls.daemon.stop()
        left = boxes_left_by(cls.daemon.proc.pid)
        assert not left, f"boxes left after SIGTERM: {left}"

    def test_ten_subagents_in_isolated_parallel_sessions(self):
        from agent import Agent
        from llm import ChatClient
        from llm_sandbox import SandboxClient
        from llm_sandbox.integrations.common import resolve_tool_config

        rng = random.Random(7)
        rows = [(i, rng.choice(["north", "south", "east"]), rng.randint(1, 1000)) for i in range(1003)]
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("id,region,amount\n" + "".join(f"{i},{r},{a}\n" for i, r, a in rows))
            data = f.name
        self.addCleanup(os.unlink, data)

        sandbox = SandboxClient(base_url=self.daemon.base, policy=None)
        tools = resolve_tool_config(sandbox, name="run_code", policies=["python-strict", "code-sandbox"])
        llm = ChatClient(f"http://127.0.0.1:{self.llm.server_address[1]}/v1", "scripted-test-double", API_KEY)
        agent = Agent(llm, sandbox, tools, datasets={"sales": data})
        answer = agent.run("What is the total of the amount column? Use 10 sub-agents.")

        if os.environ.get("LSB_VERBOSE"):
            print(json.dumps([r.as_dict() for r in agent.subagents], indent=1), file=sys.stderr)
        # Gathered correctly.
        self.assertEqual(answer, f"total={sum(a for _, _, a in rows)} rows={len(rows)}")
        recs = agent.subagents
        self.assertEqual(len(recs), N)
        self.assertEqual(sum(r.rows for r in recs), len(rows))
        for r in recs:
            self.assertIsNone(r.error, r.error)
        # N sessions, distinct, all open at the same time, executions overlapping.
        self.assertEqual(len({r.session_id for r in recs}), N)
        self.assertLess(max(r.created_at for r in recs), min(r.closed_at for r in recs))
        spans = [(r.exec_intervals[0][0], r.exec_intervals[-1][1]) for r in recs]
        overlapping = sum(1 for i in range(N) for j in range(i + 1, N)
                          if spans[i][0] < spans[j][1] and spans[j][0] < spans[i][1])
        self.assertGreater(overlapping, 0, f"no two sub-agents ran at the same time: {spans}")
        # No sub-agent could see another's data or processes.
        for r in recs:
            report = json.loads(r.answer)
            self.assertEqual(report["part"], r.index)
            self.assertEqual(report["count"], r.rows)
            self.assertEqual(report["others_readable"], [], f"sub-agent {r.index} read another part")
            self.assertEqual(report["foreign_files"], [], f"sub-agent {r.index} saw another's file")
            self.assertLess(report["pids"], 10, f"sub-agent {r.index} sees other boxes' processes")
        # Every session is gone afterwards.
        live = {s["session_id"] for s in sandbox.list_sessions()}
        self.assertFalse(live & {r.session_id for r in recs})
        # The scripted endpoint saw the main agent (3 turns) and 10 sub-agents (2 turns each).
        self.assertEqual(len(ScriptedLLM.requests_seen), 3 + 2 * N)


class TestScriptedModel(unittest.TestCase):
    """`agent.py --model scripted` (examples/agent/scripted.py, a scripted stand-in for a paid
    LLM API): a first try with no endpoint and no key, run as a user would, against the real
    daemon."""

    @classmethod
    def setUpClass(cls):
        if not os.access(BINARY, os.X_OK):
            raise unittest.SkipTest(f"{BINARY} not built")
        prepare_test_backend()
        cls.daemon = Daemon(*serve_backend_args())
        cls.addClassCleanup(cls.daemon.close)

    def agent(self, *args):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}  # no endpoint, no key
        proc = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "examples", "agent", "agent.py"),
                               "--model", "scripted", "--sandbox-url", self.daemon.base, *args],
                              env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout.strip(), proc.stderr

    def test_a_snippet_answered_from_the_sandbox(self):
        out, err = self.agent("-v", "What is 2**100 + 7?")
        self.assertEqual(out, f"The sandbox ran it and printed: {2**100 + 7}", err)
        self.assertIn("tool run_code", err)  # the verbose log shows the tool call went to the daemon

    def test_sub_agents_over_a_data_set(self):
        rows = [(i, 3 * i + 1) for i in range(101)]
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("id,amount,region\n" + "".join(f"{i},{a},north\n" for i, a in rows))
        self.addCleanup(os.unlink, f.name)
        out, err = self.agent("--data", f"sales={f.name}", "--trace",
                              "What is the total of the amount column? Use 3 sub-agents.")
        answer, _, trace = out.partition("\n")
        self.assertEqual(answer, f"3 sub-agents read 101 rows; totals: id = {sum(i for i, _ in rows)}, "
                                 f"amount = {sum(a for _, a in rows)}.", err)
        records = json.loads(trace)
        self.assertEqual(len({r["session_id"] for r in records}), 3, records)
        self.assertEqual(sum(r["rows"] for r in records), 101)

    def test_without_a_model_the_error_points_to_scripted(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
        proc = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "examples", "agent", "agent.py"),
                               "--sandbox-url", self.daemon.base, "hello"],
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("--model scripted", proc.stderr)


if __name__ == "__main__":
    unittest.main()
