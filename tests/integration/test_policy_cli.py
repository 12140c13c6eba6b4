"""`llm-sandbox policy check|explain` driven through the real binary (stdlib only).

LSB_BUILD_DIR points at the build directory holding llm-sandbox; LSB_SOURCE_DIR at the repo.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import BINARY, SOURCE_DIR
SEED = "policies/code-sandbox.yaml"
BAD_DIR = "tests/policies/bad"


def policy_cli(*args, env=None):
    full_env = dict(os.environ)
    full_env.pop("LLM_SANDBOX_POLICY_DIR", None)
    full_env.update(env or {})
    return subprocess.run([BINARY, "policy", *args], capture_output=True, text=True, timeout=60,
                          cwd=SOURCE_DIR, env=full_env)


def expectations(path):
    """The '# expect: LINE:COL: message' lines at the top of a bad policy file."""
    out = []
    with open(os.path.join(SOURCE_DIR, path)) as f:
        for line in f:
            if not line.startswith("# expect"):
                break
            if line.startswith("# expect: "):
                out.append(line[len("# expect: "):].rstrip("\n"))
    return out


@unittest.skipUnless(os.access(BINARY, os.X_OK), f"{BINARY} is not built")
class PolicyCheckTest(unittest.TestCase):
    def test_seed_is_ok(self):
        proc = policy_cli("check", SEED)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, f"ok: code-sandbox ({SEED})\n")
        self.assertEqual(proc.stderr, "")

    def test_all_shipped_policies_are_ok(self):
        files = sorted(glob.glob("policies/*.yaml", root_dir=SOURCE_DIR))
        self.assertGreaterEqual(len(files), 4)
        proc = policy_cli("check", *files)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(proc.stdout.splitlines()), len(files))

    def test_by_name_through_the_search_path(self):
        proc = policy_cli("check", "python-strict")  # ./policies, relative to the repo
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ok: python-strict", proc.stdout)

    def test_every_bad_file_fails_with_its_position(self):
        files = sorted(glob.glob(f"{BAD_DIR}/*.yaml", root_dir=SOURCE_DIR))
        self.assertGreaterEqual(len(files), 15)
        for path in files:
            with self.subTest(path=path):
                proc = policy_cli("check", path)
                self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
                self.assertEqual(proc.stdout, "")
                for expect in expectations(path):
                    self.assertIn(f"{path}:{expect}", proc.stderr)
                self.assertIn("\n  hint: ", proc.stderr)

    def test_errors_are_file_line_column(self):
        proc = policy_cli("check", f"{BAD_DIR}/unknown_key_memroy.yaml")
        first = proc.stderr.splitlines()[0]
        self.assertRegex(first, r"^tests/policies/bad/unknown_key_memroy\.yaml:\d+:\d+: ")
        self.assertIn("did you mean 'memory'?", proc.stderr)

    def test_good_and_bad_together_exit_1_and_report_both(self):
        proc = policy_cli("check", SEED, f"{BAD_DIR}/bad_version.yaml")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("ok: code-sandbox", proc.stdout)
        self.assertIn("bad_version.yaml:2:10:", proc.stderr)

    def test_missing_file(self):
        proc = policy_cli("check", "policies/does-not-exist.yaml")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("does-not-exist.yaml", proc.stderr)

    def test_usage_errors_exit_2(self):
        self.assertEqual(policy_cli().returncode, 2)
        self.assertEqual(policy_cli("check").returncode, 2)
        self.assertEqual(policy_cli("frobnicate").returncode, 2)
        self.assertEqual(policy_cli("check", "--bogus", SEED).returncode, 2)
        self.assertEqual(policy_cli("explain").returncode, 2)
        self.assertEqual(policy_cli("explain", SEED, SEED).returncode, 2)


@unittest.skipUnless(os.access(BINARY, os.X_OK), f"{BINARY} is not built")
class PolicyWorkdirTest(unittest.TestCase):
    """Issue 37 item 3: a workdir the box will not have is refused by check, naming the path and the fix."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lsb-workdir-")
        os.makedirs(os.path.join(self.tmp, "rootfs", "app"))
        os.makedirs(os.path.join(self.tmp, "rootfs", "usr", "bin"))
        self.images = os.path.join(self.tmp, "images.yaml")
        with open(self.images, "w") as f:
            f.write(f'images:\n  "tiny:1": {self.tmp}/rootfs\n')
        self.env = {"LLM_SANDBOX_IMAGES": self.images, "LLM_SANDBOX_IMAGE_STORE": os.path.join(self.tmp, "store")}

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self, image, workdir, extra=""):
        path = os.path.join(self.tmp, "w.yaml")
        with open(path, "w") as f:
            f.write(f'version: "1.0"\nname: w\ncontainer:\n  image: "{image}"\n  workdir: {workdir}\n{extra}')
        return policy_cli("check", path, env=self.env), path

    def test_missing_workdir_in_the_host_image_is_refused(self):
        proc, path = self.check("host", "/srv/lsb-nowhere")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertIn(f"{path}:5:12: container.workdir: /srv/lsb-nowhere does not exist in the box", proc.stderr)
        self.assertIn('mkdir -p /srv/lsb-nowhere', proc.stderr)

    def test_rootfs_image_is_looked_into(self):
        proc, _ = self.check("tiny:1", "/app")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc, _ = self.check("tiny:1", "/srv")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("container.image 'tiny:1'", proc.stderr)
        self.assertIn("has no directory /srv", proc.stderr)

    def test_a_tmpfs_of_the_policy_is_a_workdir(self):
        proc, _ = self.check("host", "/work", '  tmpfs:\n    /work: "size=16M"\n')
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_an_image_not_here_is_said_not_checked(self):
        proc, _ = self.check("example.invalid/nothing:1", "/app")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ok: w", proc.stdout)
        self.assertIn("note: container.workdir /app was not checked", proc.stderr)


POLICY = 'version: "1.0"\nname: solo\ndescription: "{}"\n'


@unittest.skipUnless(os.access(BINARY, os.X_OK), f"{BINARY} is not built")
class ConfigFileTest(unittest.TestCase):
    """Issue 37 item 6: ~/.config/llm-sandbox/config.yaml (then /etc's) stands for the environment variables."""

    def setUp(self):
        self.home = tempfile.mkdtemp(prefix="lsb-home-")
        self.addCleanup(shutil.rmtree, self.home, True)
        self.conf_dir = os.path.join(self.home, ".config", "llm-sandbox")
        os.makedirs(os.path.join(self.conf_dir, "mine"))
        with open(os.path.join(self.conf_dir, "mine", "solo.yaml"), "w") as f:
            f.write(POLICY.format("from the config file"))
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("LLM_SANDBOX_POLICY_DIR", "LLM_SANDBOX_CONFIG", "XDG_CONFIG_HOME")}
        self.env["HOME"] = self.home

    def write_config(self, text, name="config.yaml"):
        path = os.path.join(self.conf_dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def cli(self, *args, **extra):
        return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=60, cwd=self.home,
                              env=dict(self.env, **extra))

    def test_the_users_file_names_the_policy_dir_relative_to_itself(self):
        self.write_config("policy_dir: mine\n")
        proc = self.cli("policy", "check", "solo")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, f"ok: solo ({self.conf_dir}/mine/solo.yaml)\n")

    def test_the_environment_wins_over_the_file(self):
        self.write_config("policy_dir: mine\n")
        other = os.path.join(self.home, "other")
        os.makedirs(other)
        with open(os.path.join(other, "solo.yaml"), "w") as f:
            f.write(POLICY.format("from the environment"))
        proc = self.cli("policy", "check", "solo", LLM_SANDBOX_POLICY_DIR=other)
        self.assertEqual(proc.stdout, f"ok: solo ({other}/solo.yaml)\n", proc.stderr)

    def test_the_first_file_wins_key_by_key(self):
        first = self.write_config("policy_dir: mine\n", "user.yaml")
        second = self.write_config("policy_dir: nowhere\n", "machine.yaml")
        proc = self.cli("policy", "check", "solo", LLM_SANDBOX_CONFIG=f"{first}:{second}")
        self.assertEqual(proc.stdout, f"ok: solo ({self.conf_dir}/mine/solo.yaml)\n", proc.stderr)
        proc = self.cli("policy", "check", "solo", LLM_SANDBOX_CONFIG=f"{second}:{first}")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertIn(f"{self.conf_dir}/nowhere", proc.stderr)

    def test_an_unknown_key_is_an_error_naming_the_file_and_the_key_meant(self):
        path = self.write_config("policy_dir: mine\npolcy_dir: mine\n")
        proc = self.cli("policy", "check", "solo")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn(f"{path}:2:1: unknown key 'polcy_dir'", proc.stderr)
        self.assertIn("did you mean 'policy_dir'?", proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_bad_yaml_and_a_list_value_name_the_file(self):
        path = self.write_config("policy_dir: [unclosed\n")
        proc = self.cli("policy", "check", "solo")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"{path}:", proc.stderr)
        path = self.write_config("images:\n  - a.yaml\n")
        proc = self.cli("policy", "check", "solo")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"{path}:2:3: images: expected one value", proc.stderr)

    def test_version_needs_no_config(self):
        self.write_config("bogus: 1\n")
        self.assertEqual(self.cli("version").returncode, 0)


@unittest.skipUnless(os.access(BINARY, os.X_OK), f"{BINARY} is not built")
class PolicyExplainTest(unittest.TestCase):
    def test_explain_seed_names_both_backends(self):
        proc = policy_cli("explain", SEED)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = proc.stdout
        for control in ("container.image", "container.read_only", "container.tmpfs /tmp",
                        "container.user_namespace", "container.seccomp", "network.enabled",
                        "commands.allow", "commands.deny", "resources.cpu", "resources.memory",
                        "resources.pids", "resources.timeout", "resources.output",
                        "resources.open_files", "resources.file_size", "container.env",
                        "container.workdir", "container.user"):
            self.assertRegex(out, rf"(?m)^{re.escape(control)} = ")
        native = [l for l in out.splitlines() if l.startswith("  native: ")]
        docker = [l for l in out.splitlines() if l.startswith("  docker: ")]
        self.assertGreaterEqual(len(native), 18)
        self.assertEqual(len(native), len(docker))
        self.assertIn("Landlock", out)
        self.assertIn("cgroup", out)
        self.assertIn('NetworkMode "none"', out)
        self.assertIn("HostConfig.Memory 268435456", out)
        self.assertIn(f"[{SEED}:23:11]", out)  # where memory was set

    def test_explain_by_name(self):
        proc = policy_cli("explain", "code-sandbox")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("policy code-sandbox", proc.stdout)

    def test_explain_gvisor_states_what_is_given_up(self):
        proc = policy_cli("explain", "policies/python-gvisor.yaml")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("docker: NOT ENFORCED: under runtime runsc, gVisor has no Landlock", proc.stdout)
        self.assertIn("gvisor_accept_weaker", proc.stdout)

    def test_explain_json(self):
        proc = policy_cli("explain", "--json", SEED)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        doc = json.loads(proc.stdout)
        self.assertEqual(doc["policy"], "code-sandbox")
        memory = [c for c in doc["controls"] if c["control"] == "resources.memory"][0]
        self.assertTrue(memory["native"]["enforced"])
        self.assertIn("HostConfig.Memory", memory["docker"]["how"])

    def test_explain_shows_presets_and_their_commands(self):
        proc = policy_cli("explain", "bash-tools")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = proc.stdout
        self.assertRegex(out, r"(?m)^commands\.allow = /bin/bash, /bin/sh, @coreutils, @findutils, @text  \[")
        self.assertRegex(out, r"(?m)^commands\.allow @coreutils = GNU coreutils.*\bmkdir\b.*\bseq\b.*\(\d+ commands\)")
        self.assertRegex(out, r"(?m)^commands\.allow @findutils = find and xargs: find, xargs \(2 commands\)")
        self.assertRegex(out, r"(?m)^commands\.allow @text = .*\bgrep\b.*\bsed\b")
        doc = json.loads(policy_cli("explain", "--json", "bash-tools").stdout)
        rows = [c["control"] for c in doc["controls"]]
        self.assertIn("commands.allow @text", rows)

    def test_unknown_preset_lists_the_valid_ones(self):
        proc = policy_cli("check", f"{BAD_DIR}/unknown_preset.yaml")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("did you mean '@coreutils'? the presets are: @coreutils, @findutils, @text, @git", proc.stderr)

    def test_every_shipped_policy_explains_a_description(self):
        for path in sorted(glob.glob("policies/*.yaml", root_dir=SOURCE_DIR)):
            with self.subTest(path=path):
                doc = json.loads(policy_cli("explain", "--json", path).stdout)
                self.assertTrue(doc["description"].strip(), path)
        # The seed's file has none (it stays verbatim): its description is the built-in one.
        out = policy_cli("explain", SEED).stdout
        self.assertRegex(out, r"(?m)^description: Python with pip.*\[\(built in\)")

    def test_explain_bad_policy_exits_1(self):
        proc = policy_cli("explain", f"{BAD_DIR}/tmpfs_exec.yaml")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("tmpfs_exec.yaml:7:22:", proc.stderr)


if __name__ == "__main__":
    unittest.main()
