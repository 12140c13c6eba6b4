"""`llm-sandbox run` on the native backend, driven through the real binary: output, exit codes,
--json, stdin, live streaming, OOM, fork bombs, timeouts, and the fail-closed unprivileged mode."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import BINARY, IMAGES, SEED_POLICY, SOURCE_DIR, SandboxTestCase, alerts_with_rule, run_cli, run_code

RUN = ["run", "--policy", SEED_POLICY, "--images", IMAGES]


def require_root(test):
    return unittest.skipUnless(os.geteuid() == 0, "the native backend enforces everything only as root")(test)


@require_root
class RunBasics(SandboxTestCase):
    def test_hello(self):
        p = run_cli(RUN + ["-"], stdin='print("hi")\n')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "hi\n")

    def test_a_command_after_dashes_runs_as_it_is(self):
        p = run_cli(RUN + ["--", "python3", "-c", "import sys; print(sys.argv[1:])", "a", "b c", "--json"])
        self.assertEqual((p.returncode, p.stdout), (0, "['a', 'b c', '--json']\n"), p.stderr)
        p = run_cli(RUN + ["--", "python3", "-m", "unittest"])  # discovers nothing in /tmp: "Ran 0 tests"
        self.assertIn("Ran 0 tests", p.stderr)

    def test_a_command_the_policy_does_not_allow_is_126_before_any_box(self):
        p = run_cli(RUN + ["--", "/usr/bin/curl", "example.com"])
        self.assertEqual(p.returncode, 126, p.stderr)
        self.assertIn("command[0]: /usr/bin/curl is not in commands.allow", p.stderr)
        p = run_cli(RUN + ["--"])
        self.assertEqual(p.returncode, 2, p.stderr)
        p = run_cli(RUN + ["prog.py", "--", "python3"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not both", p.stderr)

    def test_a_missing_workdir_names_the_path_and_the_fix(self):
        """Issue 37 item 3: the box's start failed with a bare "chdir to the workdir: No such file"."""
        d = tempfile.mkdtemp(prefix="lsb-workdir-")
        self.addCleanup(shutil.rmtree, d, True)
        policy = os.path.join(d, "w.yaml")
        with open(policy, "w") as f:
            f.write('version: "1.0"\nname: w\ncontainer:\n  image: host\n  workdir: /lsb-no-such-dir\n')
        p = run_cli(["run", "--policy", policy, "--images", IMAGES, "-"], stdin="print(1)\n")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot enter the working directory /lsb-no-such-dir: No such file or directory", p.stderr)
        self.assertIn('mkdir -p /lsb-no-such-dir', p.stderr)
        self.assertIn("llm-sandbox policy check", p.stderr)

    def test_program_from_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write("print(6 * 7)\n")
        try:
            p = run_cli(RUN + [f.name])
        finally:
            os.unlink(f.name)
        self.assertEqual((p.returncode, p.stdout), (0, "42\n"), p.stderr)

    def test_exit_code_is_the_programs(self):
        p = run_cli(RUN + ["-"], stdin="import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(7)\n")
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertEqual(p.stdout, "out\n")
        self.assertIn("err\n", p.stderr)

    def test_uncaught_exception_is_exit_1(self):
        p = run_cli(RUN + ["-"], stdin="raise ValueError('boom')\n")
        self.assertEqual(p.returncode, 1)
        self.assertIn("ValueError: boom", p.stderr)

    def test_json_fields(self):
        r, p = run_code("import sys\nprint('hi')\nsys.exit(3)\n")
        self.assertEqual(p.returncode, 3)
        for key in ("stdout", "stderr", "exit_code", "status", "duration_ms", "cpu_ms",
                    "memory_peak_bytes", "alerts", "truncated", "execution_id", "backend"):
            self.assertIn(key, r)
        self.assertEqual(r["stdout"], "hi\n")
        self.assertEqual(r["exit_code"], 3)
        self.assertEqual(r["status"], "error")
        self.assertEqual(r["backend"], "native")
        self.assertFalse(r["truncated"])
        self.assertIsInstance(r["duration_ms"], int)
        self.assertTrue(r["execution_id"])
        self.assertGreater(r["memory_peak_bytes"] or 0, 0)

    def test_stdin_file(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("line1\nline2\n")
        try:
            r, p = run_code("import sys\ndata = sys.stdin.read()\nprint(len(data.splitlines()), data.upper())",
                            extra=["--stdin", f.name])
        finally:
            os.unlink(f.name)
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"], "2 LINE1\nLINE2\n\n")

    def test_large_stdin_is_not_a_deadlock(self):
        with tempfile.NamedTemporaryFile("wb", delete=False) as f:
            f.write(b"x" * (3 << 20))
        try:
            r, _ = run_code("import sys\nprint(len(sys.stdin.buffer.read()))", extra=["--stdin", f.name])
        finally:
            os.unlink(f.name)
        self.assertEqual(r["stdout"], str(3 << 20) + "\n", r)

    def test_no_stdin_reads_eof(self):
        r, _ = run_code("import sys\nprint(repr(sys.stdin.read()))")
        self.assertEqual(r["stdout"], "''\n", r)

    def test_live_streaming(self):
        code = "import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second', flush=True)\n"
        proc = subprocess.Popen([BINARY] + RUN + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=SOURCE_DIR)
        start = time.monotonic()
        proc.stdin.write(code.encode())
        proc.stdin.close()
        first = proc.stdout.readline()
        first_at = time.monotonic() - start
        rest = proc.stdout.read()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
        total = time.monotonic() - start
        self.assertEqual(first, b"first\n")
        self.assertEqual(rest, b"second\n")
        self.assertEqual(proc.returncode, 0)
        # "first" arrived while the program was still sleeping, not at its end.
        self.assertLess(first_at, total - 1.5, (first_at, total))

    def test_bash_language_denied_by_seed_policy(self):
        # A language the policy cannot run is a usage error (2) naming what it runs, before any box
        # (it was 70, "the sandbox failed", before issue 16).
        p = run_cli(RUN + ["--lang", "bash", "-"], stdin="echo hi\n")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("language 'bash' runs /bin/bash, which commands.deny lists", p.stderr)
        self.assertIn("policy 'code-sandbox' runs: python;", p.stderr)

    def test_timeout_flag_may_only_lower(self):
        p = run_cli(RUN + ["--timeout", "60", "-"], stdin="print(1)\n")
        self.assertEqual(p.returncode, 70)
        self.assertIn("only lower", p.stderr)

    def test_unknown_image_is_an_error_naming_it(self):
        with tempfile.TemporaryDirectory() as d:
            images = os.path.join(d, "images.yaml")
            with open(images, "w") as f:
                f.write("images:\n  \"other:1\": host\n")
            p = run_cli(["run", "--policy", SEED_POLICY, "--images", images, "-"], stdin="print(1)\n")
        self.assertEqual(p.returncode, 70)
        self.assertIn("python:3.12-slim", p.stderr)
        self.assertIn(images, p.stderr)

    def test_missing_init_says_how_to_fix(self):
        env = dict(os.environ, LLM_SANDBOX_INIT="/nonexistent/llm-sandbox-init")
        p = subprocess.run([BINARY] + RUN + ["-"], input="print(1)\n", capture_output=True, text=True,
                           env=env, cwd=SOURCE_DIR, timeout=60)
        self.assertEqual(p.returncode, 70)
        self.assertIn("LLM_SANDBOX_INIT", p.stderr)

    def test_usage_error(self):
        p = run_cli(["run", "--no-such-flag"])
        self.assertEqual(p.returncode, 2)


def program_file(suffix, text):
    """A program file with `suffix`, removed at the end of the test that asked for it."""
    f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
    f.write(text)
    f.close()
    return f.name


BASH_TOOLS = ["run", "--policy", "bash-tools", "--images", IMAGES]


@require_root
class RunLanguageInference(SandboxTestCase):
    def file(self, suffix, text):
        path = program_file(suffix, text)
        self.addCleanup(os.unlink, path)
        return path

    def test_python_file_under_a_shell_policy_is_refused_not_run_as_bash(self):
        path = self.file(".py", "import os\nprint('python ran')\n")
        p = run_cli(BASH_TOOLS + [path])
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "")  # nothing ran: bash would have printed errors for the import line
        self.assertIn(f"{path} is python by its extension (no --lang given)", p.stderr)
        self.assertIn("language 'python' runs /usr/bin/python3, which commands.allow does not list", p.stderr)
        self.assertIn("policy 'bash-tools' runs: bash, sh;", p.stderr)

    def test_python_file_runs_as_python_under_a_python_policy(self):
        path = self.file(".py", "import sys\nprint(sys.version_info[0])\n")
        p = run_cli(["run", "--policy", "research-trace", "--images", IMAGES, path])
        self.assertEqual((p.returncode, p.stdout), (0, "3\n"), p.stderr)

    def test_shell_file_runs_as_bash_or_sh_as_the_policy_allows(self):
        path = self.file(".sh", 'echo "bash=${BASH_VERSION:+yes}"\n')
        p = run_cli(BASH_TOOLS + [path])
        self.assertEqual((p.returncode, p.stdout), (0, "bash=yes\n"), p.stderr)
        # research-trace denies /bin/bash but allows /bin/sh: the .sh file runs as sh.
        p = run_cli(["run", "--policy", "research-trace", "--images", IMAGES, path])
        self.assertEqual((p.returncode, p.stdout), (0, "bash=\n"), p.stderr)
        # The seed runs neither: refused, naming what it runs.
        p = run_cli(RUN + [path])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("policy 'code-sandbox' runs: python;", p.stderr)

    def test_lang_flag_wins_and_stdin_keeps_the_policy_default(self):
        path = self.file(".py", "echo from-bash\n")
        p = run_cli(BASH_TOOLS + ["--lang", "bash", path])
        self.assertEqual((p.returncode, p.stdout), (0, "from-bash\n"), p.stderr)
        p = run_cli(BASH_TOOLS + ["-"], stdin="echo from-stdin\n")
        self.assertEqual((p.returncode, p.stdout), (0, "from-stdin\n"), p.stderr)
        p = run_cli(BASH_TOOLS + ["--lang", "python", "-"], stdin="print(1)\n")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("policy 'bash-tools' runs: bash, sh;", p.stderr)

    def test_unknown_extension_keeps_the_policy_default(self):
        path = self.file(".txt", "echo plain\n")
        p = run_cli(BASH_TOOLS + [path])
        self.assertEqual((p.returncode, p.stdout), (0, "plain\n"), p.stderr)


@require_root
class RunPresets(SandboxTestCase):
    """bash-tools' @coreutils/@findutils/@text on the native backend: the common commands run, and
    the commands that start other programs (env, nice, timeout, xargs, find -exec, awk system())
    still reach only what the policy allows."""

    def bash(self, script, policy="bash-tools"):
        r, p = run_code(script, policy=policy, lang="bash")
        return r

    def test_common_commands_run(self):
        r = self.bash("set -e\ncd /tmp\nmkdir -p d/e\nseq 3 | tr '\\n' ' '\necho\necho a,b | cut -d, -f2\n"
                      "date +%Y >/dev/null\nfind d -name e\necho x | xargs echo got\n"
                      "printf 'b\\na\\nb\\n' | sort | uniq -c | wc -l\necho hi | grep -c hi\n"
                      "echo abc | sed s/b/B/ | awk '{print toupper($0)}'\n")
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"], "1 2 3 \nb\nd/e\ngot x\n2\n1\nABC\n")
        self.assertEqual(alerts_with_rule(r, "denied_exec"), [])

    def test_exec_wrappers_do_not_reach_interpreters_the_policy_did_not_allow(self):
        for wrapper in ("echo 1 | xargs /usr/bin/python3 -c 'print(\"pwned\")'",
                        "find /tmp -maxdepth 0 -exec /usr/bin/python3 -c 'print(\"pwned\")' \\;",
                        "env /usr/bin/python3 -c 'print(\"pwned\")'",
                        "nice /usr/bin/perl -e 'print \"pwned\\n\"'",
                        "timeout 5 /usr/bin/python3 -c 'print(\"pwned\")'",
                        "awk 'BEGIN { system(\"/usr/bin/python3 -c 1 && echo pwned\") }'"):
            with self.subTest(wrapper=wrapper):
                r = self.bash(wrapper)
                self.assertNotIn("pwned", r["stdout"], r)
                denied = alerts_with_rule(r, "denied_exec")
                self.assertTrue(any("/usr/bin/p" in a["message"] for a in denied), r)

    def test_xargs_and_find_exec_do_not_reach_a_denied_shell(self):
        # bash-tools itself allows /bin/sh; this policy is bash-tools' presets without it.
        pdir = tempfile.mkdtemp(prefix="lsb-presets-")
        self.addCleanup(shutil.rmtree, pdir)
        path = os.path.join(pdir, "no-sh.yaml")
        with open(path, "w") as f:
            f.write('version: "1.0"\nname: no-sh\ncontainer:\n  image: host\n  tmpfs:\n    /tmp: "size=16M"\n'
                    'commands:\n  allow: ["/bin/bash", "@coreutils", "@findutils", "@text"]\n'
                    '  deny: ["/bin/sh", "/usr/bin/dash"]\nlanguages:\n  default: bash\n')
        for attempt in ("echo x | xargs sh -c 'echo pwned'",
                        "find /tmp -maxdepth 0 -exec /bin/sh -c 'echo pwned' \\;",
                        "env sh -c 'echo pwned'",
                        "awk 'BEGIN { system(\"echo pwned\") }'"):  # awk's system() runs /bin/sh -c
            with self.subTest(attempt=attempt):
                r = self.bash(attempt, policy=path)
                self.assertNotIn("pwned", r["stdout"], r)
                self.assertTrue(alerts_with_rule(r, "denied_exec"), r)


@require_root
class RunLimits(SandboxTestCase):
    def test_timeout(self):
        start = time.monotonic()
        p = run_cli(RUN + ["--timeout", "1", "-"], stdin="import time\ntime.sleep(30)\n")
        self.assertEqual(p.returncode, 124, p.stderr)
        self.assertLess(time.monotonic() - start, 10)
        r, _ = run_code("import time\ntime.sleep(30)\n", timeout_s=1)
        self.assertEqual(r["status"], "timeout")
        self.assertTrue(alerts_with_rule(r, "timeout"), r["alerts"])

    def test_timeout_is_124_in_the_cli_and_json_and_the_grace_keeps_a_summary(self):
        # One convention (issue 16): --json's exit_code and the CLI's exit status are both 124.
        code = ("import signal, sys, time\n"
                "def done(*_):\n"
                "    print('=== 3 passed ===')\n"
                "    sys.exit(1)\n"
                "signal.signal(signal.SIGTERM, done)\n"
                "time.sleep(100)\n")
        r, p = run_code(code, timeout_s=1)
        self.assertEqual((r["status"], r["exit_code"], p.returncode), ("timeout", 124, 124), r)
        self.assertEqual(r["stdout"], "=== 3 passed ===\n", r)
        # A policy with timeout_grace: 0 kills at once: no summary.
        with open(SEED_POLICY) as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as d:
            pol = os.path.join(d, "no-grace.yaml")
            with open(pol, "w") as f:
                f.write(text.replace("name: code-sandbox", "name: no-grace")
                        .replace("resources:\n", "resources:\n  timeout_grace: 0\n", 1))
            r, p = run_code(code, policy=pol, timeout_s=1)
        self.assertEqual((r["status"], r["exit_code"], r["signal"], p.returncode), ("timeout", 124, 9, 124), r)
        self.assertEqual(r["stdout"], "", r)

    def test_binary_output_is_raw_on_stdout_and_base64_in_json(self):
        code = "import sys\nsys.stdout.buffer.write(bytes(range(256)))\n"
        p = subprocess.run([BINARY] + RUN + ["-"], input=code.encode(), capture_output=True, timeout=120,
                           cwd=SOURCE_DIR)
        self.assertEqual(p.stdout, bytes(range(256)))
        r, _ = run_code(code)
        self.assertEqual(base64.b64decode(r["stdout_base64"]), bytes(range(256)))

    def test_memory_hog_is_oom(self):
        code = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n"
        r, p = run_code(code)
        self.assertEqual(r["status"], "oom", r)
        self.assertEqual(p.returncode, 137)
        self.assertTrue(alerts_with_rule(r, "oom_kill"), r["alerts"])
        # The seed policy's 256M: the box's peak is at the limit, not beyond it.
        self.assertLessEqual(r["memory_peak_bytes"], 256 << 20)
        p = run_cli(RUN + ["-"], stdin=code)
        self.assertEqual(p.returncode, 137)
        self.assertIn("alert [oom_kill]", p.stderr)

    def test_program_sees_only_its_box_cgroups(self):
        # init joins the box's groups (kCgroups) and roots a cgroup namespace there: every
        # hierarchy reads "/" from inside, and the memory limit is the policy's.
        code = ("print(open('/proc/self/cgroup').read())\n")
        p = run_cli(RUN + ["-"], stdin=code)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [l for l in p.stdout.splitlines() if l]
        self.assertTrue(lines, p.stdout)
        for line in lines:
            self.assertTrue(line.endswith(":/"), f"host cgroup path visible in the box: {line!r}")
        # v1 hierarchies name their controllers; a v2-only host shows the single "0::/" line.
        v1 = {c for l in lines if not l.startswith("0::") for c in l.split(":")[1].split(",")}
        if v1:
            self.assertTrue({"memory", "pids"} <= v1, p.stdout)

    def test_fork_bomb_is_contained_and_reported(self):
        code = ("import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
                "            time.sleep(3); os._exit(0)\n        n += 1\nexcept OSError as e:\n"
                "    print('stopped at', n, e.errno)\n")
        start = time.monotonic()
        r, _ = run_code(code)
        self.assertLess(time.monotonic() - start, 30)
        self.assertIn("stopped at", r["stdout"], r)
        n = int(r["stdout"].split()[2])
        self.assertLessEqual(n, 128)  # the policy's pids (default 128) holds the whole tree
        self.assertTrue(alerts_with_rule(r, "pids_limit"), r["alerts"])
        # The host is fine: a normal run right after works.
        r2, _ = run_code("print('ok')")
        self.assertEqual(r2["stdout"], "ok\n")

    def test_output_cap(self):
        r, _ = run_code("import sys\nsys.stdout.write('x' * (5 << 20))\n")
        self.assertTrue(r["truncated"], {k: r[k] for k in r if k != "stdout"})
        self.assertLessEqual(len(r["stdout"]) + len(r["stderr"]), 1 << 20)

    def test_network_attempt_alert_is_printed_in_words(self):
        p = run_cli(RUN + ["-"], stdin=(
            "import socket\ns = socket.socket()\ntry:\n    s.connect(('127.0.0.1', 6379))\n"
            "except OSError as e:\n    print('refused', e.errno)\n"))
        self.assertIn("refused", p.stdout)
        self.assertIn("llm-sandbox: alert [network_attempt]", p.stderr)
        self.assertIn("127.0.0.1:6379", p.stderr)


class Unprivileged(SandboxTestCase):
    """As an ordinary user the native backend cannot map uid 1000 nor create cgroups here: it must
    refuse, naming each control, instead of running with less."""

    def test_fails_closed_naming_each_control(self):
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            self.skipTest("needs root to switch to an unprivileged user with setpriv")
        if not all(os.access(p, os.R_OK) for p in (BINARY, SEED_POLICY, IMAGES)):
            self.skipTest("build tree not readable by nobody")
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BINARY] + RUN + ["-"],
                           input="print(1)\n", capture_output=True, text=True, cwd="/", timeout=60)
        if "Permission denied" in p.stderr and "llm-sandbox" not in p.stderr:
            self.skipTest("binary not executable by nobody: " + p.stderr)
        self.assertEqual(p.returncode, 70, p.stderr)
        for control in ("container.user", "resources.memory", "resources.pids", "resources.cpu"):
            self.assertIn(control, p.stderr)
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
