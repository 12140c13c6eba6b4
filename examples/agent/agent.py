#!/usr/bin/env python3
"""Reference agent: an LLM with tool calling that runs its code in LLM Sandbox and can fan out
sub-agents, each in its own sandbox session, over parts of a data set.

    export LLM_BASE_URL=https://api.openai.com/v1 LLM_MODEL=gpt-4o-mini LLM_API_KEY=...
    export LLM_SANDBOX_URL=http://127.0.0.1:8080
    python3 examples/agent/agent.py --data sales=sales.csv \\
        "What is the total of the amount column? Use 10 sub-agents."
    python3 examples/agent/agent.py --model scripted "What is 2**100 + 7?"   # offline, no key

Tools the main agent has:
- run_code(code, policy): run Python in a fresh box under one of the allowed policies (an enum,
  described to the model from GET /v1/policies); nothing persists between calls.
- spawn_subagents(dataset, parts, instructions, policy): split a data set into `parts` pieces and
  run one sub-agent per piece, each in its own session; returns their answers as JSON.
A sub-agent has one tool, run_code, bound to its own session (files and variables persist).

Standard library plus the llm_sandbox client (clients/python).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import llm_sandbox  # noqa: F401  (installed)
except ImportError:  # running from a checkout
    sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

from llm import ChatClient, LLMError, tool_spec  # noqa: E402
from scripted import ScriptedModel  # noqa: E402
from llm_sandbox import SandboxClient, SandboxError, Session  # noqa: E402
from llm_sandbox.integrations.common import (SandboxToolConfig, error_for_model,  # noqa: E402
                                             format_result, resolve_tool_config)
from subagents import SubAgentRecord, run_subagents  # noqa: E402

MAIN_PROMPT = (
    "You are the main agent. Solve the user's task. Run code with run_code when you need to "
    "compute something; for work over a data set that can be split, use spawn_subagents: each "
    "sub-agent works on one part in its own isolated sandbox and answers with a short result. "
    "Gather their answers and give the final answer.")
SUB_PROMPT = (
    "You are a sub-agent with a sandbox session of your own. Use run_code to read your part of "
    "the data and compute what you are asked. Your final message is your answer to the main "
    "agent: one line of JSON.")


class Agent:
    """One conversation with the LLM and the tool loop around it."""

    def __init__(self, llm: Any, sandbox: SandboxClient, tools: SandboxToolConfig, *,
                 datasets: Optional[Dict[str, str]] = None, max_steps: int = 12,
                 max_subagents: int = 16, session: Optional[Session] = None,
                 record: Optional[SubAgentRecord] = None, log: Callable[[str], None] = lambda s: None):
        self.llm, self.sandbox, self.tools = llm, sandbox, tools
        self.datasets = datasets or {}
        self.max_steps, self.max_subagents = max_steps, max_subagents
        self.session, self.record, self.log = session, record, log
        self.subagents: List[SubAgentRecord] = []

    # --- the tools this agent offers

    def tool_specs(self) -> List[Dict[str, Any]]:
        run = tool_spec("run_code", self.tools.description, self.tools.json_schema())
        if self.session is not None:  # a sub-agent: its own session, its policy is fixed
            return [tool_spec("run_code",
                              "Run Python in your own sandbox session. Files (your data part) and "
                              "variables persist between calls. Print what you need to see.",
                              {"type": "object", "required": ["code"], "additionalProperties": False,
                               "properties": {"code": {"type": "string"}}})]
        specs = [run]
        if self.datasets:
            specs.append(tool_spec(
                "spawn_subagents",
                "Split a data set (CSV, by rows) into `parts` pieces and run one sub-agent per piece, "
                "in parallel, each in its own isolated sandbox session with its piece at "
                "/tmp/part-K.csv. Returns each sub-agent's answer as JSON.",
                {"type": "object", "additionalProperties": False,
                 "required": ["dataset", "parts", "instructions"],
                 "properties": {
                     "dataset": {"type": "string", "enum": sorted(self.datasets)},
                     "parts": {"type": "integer", "minimum": 1, "maximum": self.max_subagents},
                     "instructions": {"type": "string",
                                      "description": "What each sub-agent computes on its part."},
                     "policy": {"type": "string", "enum": self.tools.policy_names,
                                "description": "Policy of the sub-agents' sessions (default "
                                               f"{self.tools.default_policy})."}}}))
        return specs

    def call_tool(self, name: str, args: Dict[str, Any]) -> str:
        if name == "run_code" and self.session is not None:
            return self._run_in_session(str(args.get("code", "")))
        if name == "run_code":
            return self.tools.run(str(args.get("code", "")), args.get("policy"))
        if name == "spawn_subagents" and self.session is None and self.datasets:
            return self._spawn(args)
        return f"error: there is no tool named {name!r}"

    def _run_in_session(self, code: str) -> str:
        start = time.monotonic()
        try:
            result = self.session.execute(code)
        except SandboxError as exc:
            return error_for_model(exc)
        finally:
            if self.record is not None:
                self.record.exec_intervals.append([start, time.monotonic()])
        return format_result(result, self.tools.max_output_chars)

    def _spawn(self, args: Dict[str, Any]) -> str:
        dataset = args.get("dataset")
        if dataset not in self.datasets:
            return f"error: no data set {dataset!r}; you have: {', '.join(sorted(self.datasets))}"
        try:
            parts = int(args.get("parts", 1))
        except (TypeError, ValueError):
            return "error: `parts` must be an integer"
        if not 1 <= parts <= self.max_subagents:
            return f"error: `parts` must be between 1 and {self.max_subagents}"
        policy = args.get("policy") or self.tools.default_policy
        if policy not in self.tools.policy_names:
            return f"error: policy {policy!r} is not available; choose one of {self.tools.policy_names}"
        with open(self.datasets[dataset], encoding="utf-8") as f:
            text = f.read()
        try:
            records = run_subagents(self, dataset, text, parts, str(args.get("instructions", "")), policy)
        except SandboxError as exc:
            return error_for_model(exc)
        self.subagents.extend(records)
        return json.dumps([{"subagent": r.index, "rows": r.rows, "answer": r.answer, "error": r.error}
                           for r in records])

    def child(self, k: int, n: int, session: Session, record: SubAgentRecord) -> "Agent":
        """The agent for sub-agent k: same LLM and sandbox, bound to its own session."""
        return Agent(self.llm, self.sandbox, self.tools, max_steps=self.max_steps,
                     session=session, record=record,
                     log=lambda s: self.log(f"[sub-agent {k}/{n}] {s}"))

    # --- the loop

    def run(self, task: str) -> str:
        """Talks to the LLM until it answers without a tool call (or max_steps is reached)."""
        prompt = SUB_PROMPT if self.session is not None else MAIN_PROMPT
        if self.datasets and self.session is None:
            prompt += " Data sets you can give to sub-agents: " + ", ".join(sorted(self.datasets)) + "."
        messages: List[Dict[str, Any]] = [{"role": "system", "content": prompt},
                                          {"role": "user", "content": task}]
        specs = self.tool_specs()
        for _ in range(self.max_steps):
            reply = self.llm.complete(messages, specs)
            calls = reply.get("tool_calls") or []
            messages.append({"role": "assistant", "content": reply.get("content"),
                             **({"tool_calls": calls} if calls else {})})
            if not calls:
                return str(reply.get("content") or "")
            for call in calls:
                fn = call.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = None
                name = str(fn.get("name"))
                self.log(f"tool {name} {json.dumps(args)[:200]}")
                out = (self.call_tool(name, args) if isinstance(args, dict)
                       else "error: the tool arguments are not a JSON object")
                self.log(f"-> {out[:200]}")
                messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": out})
        return "error: the agent reached its step limit without a final answer"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task")
    ap.add_argument("--data", action="append", default=[], metavar="NAME=FILE.csv",
                    help="a data set the agent may split among sub-agents (repeatable)")
    ap.add_argument("--policies", help="comma-separated policies the agent may use "
                                       "(default $LLM_SANDBOX_POLICIES, else all)")
    ap.add_argument("--model", default=os.environ.get("LLM_MODEL"),
                    help="the model at $LLM_BASE_URL (default $LLM_MODEL), or `scripted`: an offline "
                         "scripted stand-in that needs no endpoint or key (examples/agent/scripted.py)")
    ap.add_argument("--sandbox-url", default=os.environ.get("LLM_SANDBOX_URL", "http://localhost:8080"))
    ap.add_argument("--max-steps", type=int, default=12)
    ap.add_argument("--trace", action="store_true", help="print the sub-agents' records as JSON")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    datasets = {}
    for item in args.data:
        name, sep, path = item.partition("=")
        if not sep:
            ap.error(f"--data wants NAME=FILE, got {item!r}")
        datasets[name] = path
    sandbox = SandboxClient(base_url=args.sandbox_url, policy=None)
    try:
        llm = ScriptedModel() if args.model == "scripted" else ChatClient.from_env(args.model)
        tools = resolve_tool_config(sandbox, name="run_code",
                                    policies=args.policies.split(",") if args.policies else None)
        agent = Agent(llm, sandbox, tools, datasets=datasets, max_steps=args.max_steps,
                      log=(lambda s: print(s, file=sys.stderr)) if args.verbose else (lambda s: None))
        print(agent.run(args.task))
    except (LLMError, SandboxError, ValueError) as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return 1
    if args.trace:
        print(json.dumps([r.as_dict() for r in agent.subagents], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
