"""Fan-out: N sub-agents, each in its own sandbox session, each over its own part of a data set.

Every sub-agent gets a fresh session (its own box: own tmpfs, processes and network namespace),
its part uploaded as /tmp/part-K.csv, and its own conversation with the LLM, whose only tool runs
code in that session. All N sessions are opened before any sub-agent starts and closed after the
last one ends, so they live side by side; the sub-agents run in parallel threads.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from llm_sandbox import SandboxClient, Session

if TYPE_CHECKING:
    from agent import Agent


def split_csv(text: str, parts: int) -> List[str]:
    """Splits a CSV by rows into `parts` nearly equal pieces, each keeping the header line."""
    lines = text.splitlines()
    if not lines:
        raise ValueError("the data set is empty")
    header, rows = lines[0], lines[1:]
    parts = max(1, min(parts, max(1, len(rows))))
    size, extra = divmod(len(rows), parts)
    out, start = [], 0
    for k in range(parts):
        end = start + size + (1 if k < extra else 0)
        out.append("\n".join([header] + rows[start:end]) + "\n")
        start = end
    return out


def part_path(k: int) -> str:
    return f"/tmp/part-{k}.csv"


@dataclass
class SubAgentRecord:
    """What one sub-agent did, with monotonic timestamps, for reports and tests."""
    index: int
    session_id: str
    path: str
    rows: int
    created_at: float
    answer: Optional[str] = None
    error: Optional[str] = None
    exec_intervals: List[List[float]] = field(default_factory=list)
    closed_at: Optional[float] = None

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def run_subagents(parent: "Agent", dataset: str, text: str, parts: int, instructions: str,
                  policy: str) -> List[SubAgentRecord]:
    """Opens one session per part, runs a sub-agent in each (in parallel), closes them all."""
    pieces = split_csv(text, parts)
    client: SandboxClient = parent.sandbox
    sessions: List[Session] = []
    records: List[SubAgentRecord] = []
    try:
        with ThreadPoolExecutor(max_workers=len(pieces)) as pool:
            # Open every session first: N boxes exist side by side before any sub-agent runs.
            opening = [pool.submit(client.session, language="python", policy=policy)
                       for _ in pieces]
            failures = []
            for f in opening:  # keep every session that did open, so `finally` closes it
                try:
                    sessions.append(f.result())
                except Exception as exc:
                    failures.append(exc)
            if failures:
                raise failures[0]
            for k, (s, piece) in enumerate(zip(sessions, pieces)):
                s.upload(part_path(k), piece)
                records.append(SubAgentRecord(k, s.id, part_path(k), piece.count("\n") - 1,
                                              time.monotonic()))

            def work(k: int) -> None:
                rec = records[k]
                try:
                    rec.answer = parent.child(k, len(pieces), sessions[k], rec).run(
                        f"You are sub-agent {k} of {len(pieces)} working on data set {dataset!r}. "
                        f"Your part of it is the CSV file {rec.path} ({rec.rows} rows) in your "
                        f"sandbox session. {instructions}")
                except Exception as exc:  # one failed sub-agent is reported, not fatal
                    rec.error = f"{type(exc).__name__}: {exc}"

            list(pool.map(work, range(len(pieces))))
    finally:
        for k, s in enumerate(sessions):
            try:
                s.close()
            finally:
                if k < len(records):
                    records[k].closed_at = time.monotonic()
    return records
