"""examples/rl_reward against the real `llm-sandbox serve`: the demo's rewards are right (a
correct candidate 1.0; wrong, crashing and looping ones 0.0), state does not leak between
episodes on one session (the "reads the leak" candidate runs right after "leaks state" on the
same session and still scores 1.0), and the script runs end to end with no episode lost."""
import os
import subprocess
import sys
import unittest

from daemon_harness import SOURCE_DIR, Daemon, skip_unless_daemon_suite

sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "rl_reward"))
import reward  # noqa: E402


class RewardExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.d = Daemon()
        cls.addClassCleanup(cls.d.close)

    def test_rewards_and_no_leak_between_episodes(self):
        names = list(reward.CANDIDATES)
        with reward.RewardFunction(self.d.base, workers=1, timeout=2) as rf:
            got = rf.score_many([(reward.CANDIDATES[n], reward.TESTS) for n in names])
            self.assertEqual(rf.resets, len(names))
        by_name = dict(zip(names, got))
        self.assertEqual({n: r["reward"] for n, r in by_name.items()},
                         {"correct": 1.0, "off by one": 0.0, "crashes": 0.0, "loops": 0.0,
                          "leaks state": 1.0, "reads the leak": 1.0}, got)
        self.assertEqual(by_name["loops"]["status"], "timeout")
        self.assertIn("AssertionError", by_name["off by one"]["output"])
        self.assertIn("RuntimeError", by_name["crashes"]["output"])

    def test_the_script_runs_against_the_daemon(self):
        out = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "examples", "rl_reward", "reward.py"),
                              "--url", self.d.base, "--workers", "2", "--episodes", "8", "--timeout", "2"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assertIn("8 episodes with 2 workers", out.stdout)
        self.assertIn("4 passed, 0 lost", out.stdout)


if __name__ == "__main__":
    unittest.main()
