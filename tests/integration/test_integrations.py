"""The Python agent integrations (llm_sandbox.integrations) against the REAL daemon.

Starts `$LSB_BUILD_DIR/llm-sandbox serve --listen 127.0.0.1:<free port> --policies <repo>/policies
--images <repo>/config/images.yaml --backend $LSB_TEST_BACKEND` (daemon_harness.Daemon; native by
default, or docker: tests/integration/harness.py), then checks, with the standard library
only, the adapter logic every framework tool shares: the policy enum and the description the
model sees, the policy choice, output formatting, and which errors become text for the model and
which are raised for the operator. The LangChain and LlamaIndex tool objects themselves are
tested when langchain-core / llama-index-core are importable, and skipped with that reason
otherwise (PyPI is not reachable on the project's machines).
"""
import importlib.util
import os
import subprocess
import sys
import unittest

from harness import BINARY, SOURCE_DIR, TEST_BACKEND, prepare_test_backend, serve_backend_args

sys.path.insert(0, os.path.join(SOURCE_DIR, "clients", "python"))

from daemon_harness import Daemon  # noqa: E402
from llm_sandbox import (ConnectionFailed, Forbidden, NotFound, RateLimited,  # noqa: E402
                         SandboxClient, SandboxFailure, ServerError, Unauthorized)
from llm_sandbox.integrations import common  # noqa: E402
from llm_sandbox.integrations.common import (error_for_model, format_result,  # noqa: E402
                                             resolve_tool_config)

ALLOWED = ["python-strict", "research-trace", "code-sandbox"]


def have(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class CountingClient(SandboxClient):
    """The real client, counting executions, to prove a refused call never reached the daemon."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.executions = 0

    def execute(self, *a, **kw):
        self.executions += 1
        return super().execute(*a, **kw)


class DaemonCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BINARY, os.X_OK):
            raise unittest.SkipTest(f"{BINARY} not built")
        prepare_test_backend()
        cls.daemon = Daemon(*serve_backend_args())
        cls.addClassCleanup(cls.daemon.close)
        cls.client = CountingClient(base_url=cls.daemon.base)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()


class TestImportIsLazy(unittest.TestCase):
    def test_importing_the_package_needs_no_framework(self):
        code = ("import sys, llm_sandbox, llm_sandbox.integrations, llm_sandbox.integrations.langchain, "
                "llm_sandbox.integrations.llamaindex\n"
                "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                "('langchain_core', 'llama_index', 'pydantic')))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=os.path.join(SOURCE_DIR, "clients", "python"), timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "[]")


class TestPolicyChoice(DaemonCase):
    def test_enum_and_description_come_from_the_daemon(self):
        cfg = resolve_tool_config(self.client, policies=ALLOWED)
        self.assertEqual(cfg.name, "run_python_code")
        self.assertEqual(cfg.default_policy, "python-strict")
        schema = cfg.json_schema()
        self.assertEqual(schema["properties"]["policy"]["enum"], ALLOWED)
        self.assertEqual(schema["required"], ["code"])
        d = cfg.description
        self.assertIn("- python-strict (default): Untrusted Python snippets: tight limits", d)
        self.assertIn("- research-trace: Python and shell with full tracing", d)
        # code-sandbox has no description in its YAML (kept verbatim): the daemon's built-in one
        # is used (issue 16; before it, the facts stood in: "general-purpose sandbox (...)").
        self.assertRegex(d, r"- code-sandbox: Python with pip.*\(languages: .*python.*; network off\)")
        self.assertNotIn("bash-tools", d)

    def test_operator_words_and_default(self):
        cfg = resolve_tool_config(self.client, policies=["python-strict", "code-sandbox"],
                                  descriptions={"code-sandbox": "The requirements' policy"},
                                  default_policy="code-sandbox", name="run_code")
        self.assertEqual(cfg.name, "run_code")
        self.assertIn("- code-sandbox (default): The requirements' policy (", cfg.description)
        self.assertIn("- python-strict: Untrusted", cfg.description)

    def test_every_policy_by_default_and_from_the_environment(self):
        # Every policy the daemon can run (issue 16: not python-gvisor on the native backend).
        names = [p["name"] for p in self.client.policies() if p["runnable"]]
        self.assertEqual(resolve_tool_config(self.client).policy_names, names)
        os.environ["LLM_SANDBOX_POLICIES"] = "research-trace, python-strict"
        try:
            self.assertEqual(resolve_tool_config(self.client).policy_names,
                             ["research-trace", "python-strict"])
        finally:
            del os.environ["LLM_SANDBOX_POLICIES"]

    def test_policies_the_backend_cannot_run_are_not_offered(self):
        listed = self.client.policies()
        self.assertTrue(all(p["description"].strip() for p in listed), listed)
        not_runnable = [p["name"] for p in listed if not p["runnable"]]
        if TEST_BACKEND == "native":
            self.assertIn("python-gvisor", not_runnable)
        cfg = resolve_tool_config(self.client)
        for name in not_runnable:
            self.assertNotIn(name, cfg.json_schema()["properties"]["policy"]["enum"])
            self.assertNotIn(f"- {name}", cfg.description)
            with self.assertRaisesRegex(ValueError, f"(?s){name}.*cannot run on this daemon's backend.*fix:"):
                resolve_tool_config(self.client, policies=["python-strict", name])

    def test_operator_mistakes_are_errors(self):
        with self.assertRaisesRegex(NotFound, "python-strikt"):
            resolve_tool_config(self.client, policies=["python-strikt"])
        with self.assertRaisesRegex(ValueError, "default_policy"):
            resolve_tool_config(self.client, policies=["python-strict"], default_policy="code-sandbox")
        with self.assertRaises(ValueError):
            resolve_tool_config(self.client, policies=[])


class TestRun(DaemonCase):
    def setUp(self):
        self.cfg = resolve_tool_config(self.client, policies=ALLOWED)

    def test_output_comes_back_as_text_under_the_chosen_policy(self):
        out = self.cfg.run("print(sum(range(10)))")
        self.assertRegex(out, r"^status: ok \(exit code 0, \d+ ms, policy python-strict\)\nstdout:\n45\n$")
        out = self.cfg.run("print('traced')", policy="research-trace")
        self.assertIn("policy research-trace)", out)
        self.assertIn("stdout:\ntraced\n", out)

    def test_a_policy_outside_the_list_never_reaches_the_daemon(self):
        before = self.client.executions
        out = self.cfg.run("print(1)", policy="bash-tools")
        self.assertEqual(out, 'error: policy "bash-tools" is not available to you; choose one of: '
                              "python-strict, research-trace, code-sandbox")
        self.assertEqual(self.client.executions, before)
        self.assertEqual(self.cfg.run("   "), "error: `code` must be a non-empty program")
        self.assertEqual(self.client.executions, before)

    def test_failures_and_alerts_are_told_to_the_model(self):
        out = self.cfg.run("import socket\nsocket.socket().connect(('127.0.0.1', 6379))")
        self.assertIn("status: error (exit code 1", out)
        self.assertIn("stderr:\nTraceback", out)
        self.assertRegex(out, r"alerts:\n- \[warning\] network_attempt: .*127\.0\.0\.1:6379")
        out = self.cfg.run("import os\nos.system('/bin/sh -c true')\nprint('after')")
        self.assertIn("alerts:\n- [", out)

    def test_timeout_is_explained(self):
        cfg = resolve_tool_config(self.client, policies=["python-strict"], timeout=1)
        out = cfg.run("while True: pass")
        self.assertTrue(out.startswith("status: timeout"), out)
        self.assertIn("note: the program was killed at its time limit.", out)

    def test_long_output_is_clipped_for_the_model(self):
        cfg = resolve_tool_config(self.client, policies=["python-strict"], max_output_chars=1000)
        out = cfg.run("print('x' * 50000)")
        self.assertIn("[... 49001 characters cut ...]", out)
        self.assertLess(len(out), 1300)

    def test_a_limit_the_policy_forbids_is_text(self):
        cfg = resolve_tool_config(self.client, policies=["python-strict"], timeout=9999)
        self.assertRegex(cfg.run("print(1)"),
                         r"^error: the policy does not allow this request \(forbidden\): .*timeout")


class TestErrorMapping(DaemonCase):
    def test_operator_errors_are_raised(self):
        dead = SandboxClient(base_url="http://127.0.0.1:9", timeout=5)
        with self.assertRaises(ConnectionFailed):
            resolve_tool_config(dead)
        cfg = resolve_tool_config(self.client, policies=["python-strict"])
        cfg.client = dead
        with self.assertRaises(ConnectionFailed):
            cfg.run("print(1)")

    def test_a_wrong_token_is_raised(self):
        secured = Daemon(env={"LLM_SANDBOX_TOKENS": "right-token"})
        self.addCleanup(secured.close)
        try:
            cfg = resolve_tool_config(SandboxClient(base_url=secured.base, token="right-token"),
                                      policies=["python-strict"])
            self.assertIn("stdout:\n1\n", cfg.run("print(1)"))
            cfg.client = SandboxClient(base_url=secured.base, token="wrong")
            with self.assertRaises(Unauthorized):
                cfg.run("print(1)")
        finally:
            secured.stop()

    def test_each_class(self):
        self.assertEqual(error_for_model(RateLimited("queue full", status=429, retry_after=2)),
                         "error: the sandbox service is busy (too_many_requests): queue full. Retry after 2 s.")
        self.assertEqual(error_for_model(Forbidden("memory 1G exceeds 256M", status=403)),
                         "error: the policy does not allow this request (forbidden): memory 1G exceeds 256M")
        self.assertTrue(error_for_model(SandboxFailure("init died", status=502)).startswith(
            "error: the sandbox itself failed (sandbox_error)"))
        with self.assertRaises(ServerError):
            error_for_model(ServerError("bug", status=500))


class TestFormatting(unittest.TestCase):
    def test_notes(self):
        r = {"stdout": "", "stderr": "", "exit_code": 137, "status": "oom", "duration_ms": 5,
             "policy": "p", "alerts": [], "truncated": True}
        out = format_result(r)
        self.assertIn("note: the program ran out of memory", out)
        self.assertIn("note: the output was longer than the policy allows", out)
        self.assertIn("stdout:\n(empty)", out)

    def test_clip(self):
        self.assertEqual(common.clip("abc", 5), "abc")
        self.assertEqual(common.clip("0123456789", 4), "012\n[... 6 characters cut ...]\n9")


@unittest.skipUnless(have("pydantic"), "pydantic is not installed (it comes with langchain-core and llama-index-core)")
class TestInputModel(DaemonCase):
    def test_policy_enum_and_validation(self):
        from pydantic import ValidationError
        cfg = resolve_tool_config(self.client, policies=ALLOWED)
        model = common.input_model(cfg)
        schema = model.model_json_schema()
        self.assertEqual(schema["required"], ["code"])
        self.assertIn("python-strict", str(schema["properties"]["policy"]))
        self.assertEqual(model(code="x", policy="research-trace").policy, "research-trace")
        with self.assertRaises(ValidationError):
            model(code="x", policy="bash-tools")


@unittest.skipUnless(have("langchain_core"),
                     "langchain-core is not installed (PyPI is not reachable here); the adapter "
                     "logic is covered by the standard-library tests above")
class TestLangChainTool(DaemonCase):
    def test_tool_runs_code(self):
        from langchain_core.utils.function_calling import convert_to_openai_tool
        from llm_sandbox.integrations.langchain import create_run_python_code_tool
        tool = create_run_python_code_tool(self.client, policies=ALLOWED)
        self.assertEqual(tool.name, "run_python_code")
        spec = convert_to_openai_tool(tool)["function"]
        self.assertIn("python-strict", str(spec["parameters"]["properties"]["policy"]))
        out = tool.invoke({"code": "print(6 * 7)", "policy": "research-trace"})
        self.assertIn("policy research-trace)", out)
        self.assertIn("stdout:\n42\n", out)


@unittest.skipUnless(have("llama_index.core"),
                     "llama-index-core is not installed (PyPI is not reachable here); the adapter "
                     "logic is covered by the standard-library tests above")
class TestLlamaIndexTool(DaemonCase):
    def test_tool_runs_code(self):
        from llm_sandbox.integrations.llamaindex import create_function_tool
        tool = create_function_tool(self.client, policies=ALLOWED)
        self.assertEqual(tool.metadata.name, "run_python_code")
        self.assertIn("python-strict (default)", tool.metadata.description)
        out = tool.call(code="print(6 * 7)")
        self.assertIn("stdout:\n42\n", str(out.content))


if __name__ == "__main__":
    unittest.main()
