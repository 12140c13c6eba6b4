"""docs/api.md "Adding or changing a policy on a running daemon", claim by claim, against the real
`llm-sandbox serve` (issue 37): a SIGHUP reloads the policy directory; a file with a mistake, or two
files with one name, fail the whole reload and the previous set stays; a changed policy applies to
requests from then on; a session keeps the policy it was created with, even once that policy is
removed; a removed policy is an unknown policy (400). Each step runs in one bash in a network
namespace of its own (tests/docs/test_quickstart.py's walk). Needs root and a build: exit 77 without."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_quickstart import BUILD, ROOT, prerequisites, walk  # noqa: E402

SETUP = """B=build/llm-sandbox J='Content-Type: application/json' U=http://127.0.0.1:8080
status() { python3 -c 'import json, sys; d = json.load(sys.stdin); print("status=" + str(d.get("status")))'; }
$B serve --policies policies --images config/images.yaml 2> serve.log & P=$!
curl -s --retry 30 --retry-connrefused --retry-delay 1 $U/readyz > /dev/null
sed -e 's/^name: code-sandbox/name: quick/' -e 's/timeout: 30/timeout: 2/' policies/code-sandbox.yaml \\
    > policies/quick.yaml
kill -HUP $P; sleep 1; grep SIGHUP serve.log
SID=$(curl -s $U/v1/sessions -H "$J" -d '{"policy": "quick", "language": "python"}' \\
      | python3 -c 'import json, sys; print(json.load(sys.stdin)["session_id"])')"""
SLEEP3 = """'{"code": "import time; time.sleep(3); print(1)", "policy": "quick"}'"""
STEPS = [
    ("setup", SETUP),
    ("broken", """sed -i 's/timeout: 2/timeout: 5/' policies/quick.yaml
printf 'version: "1.0"\\nname: broken\\nresources: {memroy: 1}\\n' > policies/broken.yaml
kill -HUP $P; sleep 1; grep -A2 'reload failed' serve.log
curl -s $U/v1/execute -H "$J" -d """ + SLEEP3 + " | status"),
    ("duplicate", """rm policies/broken.yaml; cp policies/quick.yaml policies/dup.yml
kill -HUP $P; sleep 1; grep 'already used' serve.log"""),
    ("changed", """rm policies/dup.yml; kill -HUP $P; sleep 1; tail -1 serve.log
curl -s $U/v1/execute -H "$J" -d """ + SLEEP3 + """ | status
curl -s $U/v1/sessions/$SID/execute -H "$J" -d '{"code": "import time; time.sleep(3)"}' | status"""),
    ("removed", """rm policies/quick.yaml; kill -HUP $P; sleep 1
curl -s $U/v1/execute -H "$J" -d '{"code": "print(1)", "policy": "quick"}' -w ' http=%{http_code}\\n'
curl -s $U/v1/sessions/$SID/execute -H "$J" -d '{"code": "print(2)"}' | status
kill $P; wait $P"""),
]


class PolicyReloadAsDocumented(unittest.TestCase):
    def test_sighup_as_documented(self):
        why = prerequisites()
        if why:
            self.skipTest(why)
        with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
            doc = f.read()
        with tempfile.TemporaryDirectory(prefix="lsb-reload-") as tmp:
            for d in ("policies", "config"):
                shutil.copytree(os.path.join(ROOT, d), os.path.join(tmp, d))
            os.symlink(os.path.abspath(BUILD), os.path.join(tmp, "build"))
            results, out = walk(tmp, STEPS)
        for name, _ in STEPS:
            self.assertTrue(results[name][1], f"step {name} did not finish:\n{out[-4000:]}")
        r = {name: text for name, (text, _) in results.items()}
        # The log lines the doc quotes, word for word.
        n = len([f for f in os.listdir(os.path.join(ROOT, "policies")) if f.endswith((".yaml", ".yml"))]) + 1
        self.assertIn(f"SIGHUP: reloaded {n} policies from policies", r["setup"])
        self.assertIn("`SIGHUP: reloaded N policies from DIR`", doc)
        self.assertIn("SIGHUP: policy reload failed; keeping the previous policies:", r["broken"])
        self.assertIn("`SIGHUP: policy reload failed; keeping the previous policies:`", doc)
        self.assertIn("did you mean 'memory'", r["broken"])
        # The failed reload kept quick at 2 s: a 3 s program times out.
        self.assertIn("status=timeout", r["broken"])
        self.assertIn("policy name 'quick' is already used by", r["duplicate"])
        # Reloaded: new requests get 5 s; the session made under the 2 s quick keeps it.
        self.assertIn(f"SIGHUP: reloaded {n} policies", r["changed"])
        self.assertEqual(r["changed"].count("status="), 2, r["changed"])
        self.assertLess(r["changed"].index("status=ok"), r["changed"].index("status=timeout"), r["changed"])
        # Removed: an unknown policy (400) for new requests; the session goes on.
        self.assertIn("no policy named 'quick'", r["removed"])
        self.assertIn("http=400", r["removed"])
        self.assertIn("status=ok", r["removed"])


if __name__ == "__main__":
    if prerequisites():
        print("skipped:", prerequisites())
        sys.exit(77)
    unittest.main()
