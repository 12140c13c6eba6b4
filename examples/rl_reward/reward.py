#!/usr/bin/env python3
"""A reward function for a code-generation RL loop, on LLM Sandbox sessions (docs/api.md).

Each episode runs one candidate (model-written code) against its verifier (unit tests) in a
session, then resets the session so no global, file or process of the episode reaches the next
one: a reset costs tens of milliseconds where a new session costs hundreds (BENCHMARKS.md). A
pool of sessions, one per worker thread, serves many episodes concurrently.

    from reward import RewardFunction
    with RewardFunction("http://127.0.0.1:8080", workers=16) as reward:
        scores = reward.score_many([(candidate, tests), ...])
        # [{"passed": True, "reward": 1.0, "status": "ok", "output": "...", ...}, ...]

Run it against a local daemon (`llm-sandbox serve`):  python3 examples/rl_reward/reward.py
  [--url URL] [--episodes N] [--workers N]   prints the rewards of a few candidates, then a rate.
"""
from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from llm_sandbox import SandboxClient  # noqa: E402

#: What an episode runs: the candidate, then the verifier, in one program; a passing verifier
#: prints the marker last (a candidate cannot fake it without also passing: the verifier's own
#: exit is what counts, the marker only separates the verifier's output).
HARNESS = """
{candidate}

import sys as _sys, unittest as _unittest
_verifier = {tests!r}
_ns = dict(globals())
exec(compile(_verifier, '<verifier>', 'exec'), _ns)
_suite = _unittest.defaultTestLoader.loadTestsFromTestCase(_ns['Verifier'])
_result = _unittest.TextTestRunner(stream=_sys.stdout, verbosity=1).run(_suite)
_sys.exit(0 if _result.wasSuccessful() else 1)
"""


class RewardFunction:
    """Scores candidates with a pool of `workers` python sessions, reset between episodes.

    A verifier is python source defining ``class Verifier(unittest.TestCase)``, which sees the
    candidate's globals. The reward is 1.0 when every test passes, else 0.0; a candidate that
    crashes, loops past `timeout` or is stopped by the policy scores 0.0 with its output.
    """

    def __init__(self, url: str, *, workers: int = 4, policy: Optional[str] = None,
                 setup: Optional[str] = None, timeout: float = 10.0, token: Optional[str] = None) -> None:
        self.client = SandboxClient(base_url=url, policy=policy, token=token)
        self.timeout = timeout
        self.workers = workers
        self._sessions: "queue.Queue[Any]" = queue.Queue()
        self._all: List[Any] = []
        with ThreadPoolExecutor(workers) as pool:  # sessions open concurrently
            for s in pool.map(lambda _: self.client.session(language="python", setup=setup), range(workers)):
                self._all.append(s)
                self._sessions.put(s)
        self.resets = 0
        self._lock = threading.Lock()

    def score(self, candidate: str, tests: str) -> Dict[str, Any]:
        """One episode on a free session; the session is reset before it is free again."""
        s = self._sessions.get()
        try:
            r = s.execute(HARNESS.format(candidate=candidate, tests=tests), timeout=self.timeout)
            passed = r["status"] == "ok" and r["exit_code"] == 0
            return {"passed": passed, "reward": 1.0 if passed else 0.0, "status": r["status"],
                    "exit_code": r["exit_code"], "output": (r["stdout"] + r["stderr"])[-4000:],
                    "duration_ms": r["duration_ms"]}
        finally:
            s.reset()  # the next episode sees none of this one's globals, files or processes
            with self._lock:
                self.resets += 1
            self._sessions.put(s)

    def score_many(self, episodes: Sequence[Tuple[str, str]]) -> List[Dict[str, Any]]:
        """Scores every (candidate, tests) pair, `workers` at a time, in order."""
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(lambda e: self.score(*e), episodes))

    def close(self) -> None:
        for s in self._all:
            s.close()

    def __enter__(self) -> "RewardFunction":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


TESTS = """
import unittest
class Verifier(unittest.TestCase):
    def test_small(self):
        self.assertEqual(add(2, 3), 5)
    def test_negative(self):
        self.assertEqual(add(-2, -3), -5)
"""
CANDIDATES = {
    "correct": "def add(a, b):\n    return a + b",
    "off by one": "def add(a, b):\n    return a + b + 1",
    "crashes": "def add(a, b):\n    raise RuntimeError('no')",
    "loops": "def add(a, b):\n    while True:\n        pass",
    "leaks state": "LEAK = 'from an earlier episode'\ndef add(a, b):\n    return a + b",
    "reads the leak": "def add(a, b):\n    return a + b if 'LEAK' not in globals() else 0",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=os.environ.get("LSB_DAEMON_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--episodes", type=int, default=32, help="episodes of the rate run after the demo")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=3.0)
    a = ap.parse_args()
    with RewardFunction(a.url, workers=a.workers, timeout=a.timeout) as reward:
        names = list(CANDIDATES)
        for name, r in zip(names, reward.score_many([(CANDIDATES[n], TESTS) for n in names])):
            print(f"{name:15} reward {r['reward']:.1f}  status {r['status']:8} {r['output'].strip().splitlines()[-1:]}")
        t = time.monotonic()
        rate = reward.score_many([(CANDIDATES["correct"] if i % 2 else CANDIDATES["off by one"], TESTS)
                                  for i in range(a.episodes)])
        took = time.monotonic() - t
        lost = a.episodes - len(rate)
        print(f"{a.episodes} episodes with {a.workers} workers in {took:.1f} s: {a.episodes / took:.1f} episodes/s, "
              f"{sum(r['passed'] for r in rate)} passed, {lost} lost, {reward.resets} resets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
