"""docs/quickstart.md and README.md's quick start, followed as written (issue 37).

docs/quickstart.md: every ```sh block runs, in order, in one bash (`set -e`), at the top of a fresh
tree made like a clone: policies/, config/, examples/ and clients/python copied from this source
tree, build/ a symlink to LSB_BUILD_DIR. A block preceded by `<!-- quickstart: not run ... -->` is
not run: that is the build step (./scripts/quickstart.sh), replaced here by the existing build.
`<!-- expect: TEXT -->` before a block: TEXT must appear in that block's output. Each block must
run to its end. The whole walk runs in a network namespace of its own (`unshare --net`, loopback
up), so its daemon's port 8080 is its own whatever else runs on this host, and pip has no index to
reach; LLM_SANDBOX_STATE_DIR points into the tree, so the daemon's audit log is not the host's.

README.md: the quick start's first block names ./scripts/quickstart.sh and ./scripts/test.sh (the
second is CI's whole run: not run here); the build inside quickstart.sh is replaced by the existing
build, and the commands it then runs, which the README's second block lists, run as written (the
test checks quickstart.sh runs exactly those).

Needs root (the native backend, unshare) and a build with llm-sandbox and llm-sandbox-init: exit
77 (skipped) without them.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("LSB_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("LSB_BUILD_DIR") or os.path.join(ROOT, "build")
WALK_TIMEOUT = 150  # seconds for a whole walk; it takes well under a minute here


def blocks(markdown):
    """[(lang, code, [comment lines just above its fence])] of every fenced block, in order."""
    out, comments, lines, i = [], [], markdown.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r'^```(\w*)\s*$', line)
        if fence:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append((fence.group(1), "\n".join(lines[i + 1:j]), comments))
            comments, i = [], j + 1
            continue
        m = re.match(r'^<!--\s*(.*?)\s*-->$', line)
        if m:
            comments.append(m.group(1))
        elif line.strip():
            comments = []
        i += 1
    return out


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def section(markdown, heading):
    return markdown.split("\n## " + heading + "\n", 1)[1].split("\n## ", 1)[0]


def make_tree(tmp):
    """A clone-like tree: the files the quick starts use, and build/ -> the existing build."""
    for d in ("policies", "config", "examples"):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(tmp, d))
    shutil.copytree(os.path.join(ROOT, "clients", "python"), os.path.join(tmp, "clients", "python"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist"))
    os.symlink(os.path.abspath(BUILD), os.path.join(tmp, "build"))


def walk(tmp, steps):
    """Runs [(name, code)] in one bash in a private network namespace; {name: (output, finished)}."""
    script = ["set -e"]
    for name, code in steps:
        script += [f"echo '@@begin {name}'", code, f"echo '@@end {name}'"]
    path = os.path.join(tmp, ".walk.sh")
    with open(path, "w") as f:
        f.write("\n".join(script) + "\n")
    env = dict(os.environ, LLM_SANDBOX_STATE_DIR=os.path.join(tmp, "state"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.Popen(["unshare", "--net", "bash", "-c", 'ip link set lo up && exec bash "$0"', path],
                            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env)
    try:
        out, _ = proc.communicate(timeout=WALK_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out += f"\n(killed after {WALK_TIMEOUT} s)"
    finally:
        try:  # a daemon the walk left behind (a failed block before the stop step)
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    results = {}
    for name, _ in steps:
        m = re.search(rf"^@@begin {re.escape(name)}\n(.*?)(^@@end {re.escape(name)}$|\Z)", out, re.S | re.M)
        results[name] = (m.group(1), bool(m.group(2))) if m else ("", False)
    return results, out


def prerequisites():
    if os.geteuid() != 0:
        return "needs root (the native backend and unshare --net)"
    for b in ("llm-sandbox", "llm-sandbox-init"):
        if not os.access(os.path.join(BUILD, b), os.X_OK):
            return f"no {b} in {BUILD} (LSB_BUILD_DIR)"
    return None


class QuickstartDoc(unittest.TestCase):
    def test_blocks_are_marked(self):
        bs = blocks(read("docs", "quickstart.md"))
        run = [b for b in bs if b[0] == "sh" and not any(c.startswith("quickstart: not run") for c in b[2])]
        self.assertGreaterEqual(len(run), 6, "docs/quickstart.md lost its runnable blocks")
        self.assertTrue(any("./scripts/quickstart.sh" in b[1] for b in bs if b not in run))
        for lang, code, _ in bs:
            self.assertEqual(lang, "sh", "every block of docs/quickstart.md is a command block: " + code[:60])

    def test_followed_verbatim(self):
        why = prerequisites()
        if why:
            self.skipTest(why)
        steps, expects = [], {}
        for n, (lang, code, comments) in enumerate(blocks(read("docs", "quickstart.md"))):
            if lang != "sh" or any(c.startswith("quickstart: not run") for c in comments):
                continue
            name = f"block{n + 1}"
            steps.append((name, code))
            expects[name] = [c[len("expect:"):].strip() for c in comments if c.startswith("expect:")]
        with tempfile.TemporaryDirectory(prefix="lsb-quickstart-") as tmp:
            make_tree(tmp)
            results, out = walk(tmp, steps)
            serve_log = os.path.join(tmp, "serve.log")
            log = ""
            if os.path.exists(serve_log):
                with open(serve_log, encoding="utf-8", errors="replace") as f:
                    log = f.read()[-3000:]
        for name, code in steps:
            text, finished = results[name]
            ctx = f"\n--- {name}:\n{code}\n--- its output:\n{text}\n--- the walk:\n{out[-4000:]}\n--- serve.log:\n{log}"
            self.assertTrue(finished, f"{name} did not run to its end" + ctx)
            for want in expects[name]:
                self.assertIn(want, text, f"{name}: expected {want!r}" + ctx)


class ReadmeQuickStart(unittest.TestCase):
    def readme_blocks(self):
        return blocks(section(read("README.md"), "Quick start"))

    def test_first_block_names_the_two_scripts(self):
        first = self.readme_blocks()[0][1]
        for script in ("./scripts/quickstart.sh", "./scripts/test.sh"):
            self.assertIn(script, first)
            self.assertTrue(os.access(os.path.join(ROOT, script), os.X_OK), script + " is not executable")

    def test_quickstart_sh_runs_what_the_readme_lists(self):
        script = read("scripts", "quickstart.sh")
        for line in self.readme_blocks()[1][1].splitlines():
            self.assertIn(line.replace("build/llm-sandbox ", '"$bin" '), script,
                          "README.md's quick start lists a command scripts/quickstart.sh does not run")

    def test_listed_commands_run(self):
        why = prerequisites()
        if why:
            self.skipTest(why)
        code = self.readme_blocks()[1][1]
        # quickstart.sh runs the attack with `|| true`: its exit code is the program's, not 0.
        steps = [(f"line{i + 1}", c + (" || true" if "attack.py" in c else ""))
                 for i, c in enumerate(code.splitlines())]
        with tempfile.TemporaryDirectory(prefix="lsb-readme-") as tmp:
            make_tree(tmp)
            results, out = walk(tmp, steps)
        for name, c in steps:
            self.assertTrue(results[name][1], f"{c!r} failed:\n{out[-4000:]}")
        self.assertIn("ok: code-sandbox", results["line1"][0])
        self.assertIn("hi from the sandbox", results["line2"][0])
        self.assertIn("exec /bin/sh:", results["line3"][0])


if __name__ == "__main__":
    if prerequisites() and "--force" not in sys.argv:
        print("skipped:", prerequisites())
        sys.exit(77)
    unittest.main(argv=[a for a in sys.argv if a != "--force"])
