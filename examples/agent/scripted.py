"""`--model scripted`: an offline, deterministic stand-in for the LLM, so a first try of the
reference agent needs no endpoint and no API key.

It is a TEST DOUBLE FOR A PAID LLM SERVICE (which the project allows for that purpose), not a
model: it reads no meaning into the task beyond a few patterns. What it does is plausible and
real on the sandbox side, so the run shows the whole loop (tool calls, the daemon, sessions):

- main agent, with a data set and a task that asks for sub-agents ("10 sub-agents"): spawns that
  many (default 4) over the first data set, each summing the numeric columns of its part; then
  adds their partial sums up with run_code, in the sandbox, and answers with the totals;
- main agent otherwise: runs one Python snippet with run_code (the arithmetic expression in the
  task if there is one, e.g. "what is 2**100 + 7?", else a look at the sandbox's Python) and
  answers from its stdout;
- sub-agent: runs the column sums on its CSV part in its session and answers with the JSON line.

It has the interface of llm.ChatClient: complete(messages, tools) -> the assistant message.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

# What a sub-agent runs on its part: row count and the sum of each column whose values are all
# numbers, as one JSON line (the sub-agent's answer).
PART_STATS = """\
import csv, json
rows = list(csv.DictReader(open({path!r}, newline="")))
sums = {{}}
for col in (rows[0].keys() if rows else []):
    try:
        sums[col] = sum(float(r[col]) for r in rows)
    except (TypeError, ValueError):
        pass
print(json.dumps({{"rows": len(rows), "sums": sums}}))
"""

# What the main agent runs to add the sub-agents' answers up (in the sandbox, like a model would).
GATHER = """\
import json
parts = json.loads({answers!r})
totals = {{}}
for p in parts:
    for col, v in p["sums"].items():
        totals[col] = totals.get(col, 0) + v
print(json.dumps({{"parts": len(parts), "rows": sum(p["rows"] for p in parts), "sums": totals}}))
"""

LOOK_AROUND = "import platform, sys\nprint(f'Python {platform.python_version()} on {sys.platform}')\n"

# An arithmetic expression in the task: digits and operators, at least one operator between
# numbers ("2**100 + 7", "(3 + 4) * 6").
EXPRESSION = re.compile(r"[\d(][\d\s.+\-*/%()]*[+\-*/%][\d\s.+\-*/%()]*[\d)]")
SUBAGENT_COUNT = re.compile(r"(\d+)\s*sub-?agents?", re.I)
SUBAGENT_TASK = re.compile(r"You are sub-agent (\d+) of (\d+).*?CSV file (\S+)", re.S)


def stdout_of(tool_text: str) -> str:
    """The stdout section of a run_code result as the agent formats it for a model."""
    m = re.search(r"stdout:\n(.*?)(?:\nstderr:|\nalerts:|$)", tool_text, re.S)
    return m.group(1).strip() if m else ""


class ScriptedModel:
    """The scripted stand-in (see the module's docstring); `calls` counts its turns."""

    model = "scripted"

    def __init__(self, default_parts: int = 4) -> None:
        self.default_parts = default_parts
        self.calls = 0

    def complete(self, messages: List[Dict[str, Any]], tools: List[Dict[str, Any]]) -> Dict[str, Any]:
        self.calls += 1
        task = str(messages[1].get("content") or "")
        sub = SUBAGENT_TASK.search(task)
        if sub:
            return self._subagent(messages, sub.group(3))
        names = [t["function"]["name"] for t in tools]
        if ("spawn_subagents" in names and SUBAGENT_COUNT.search(task)) or _spawned(messages):
            return self._fan_out(messages, task, tools)
        return self._one_snippet(messages, task, tools)

    def _subagent(self, messages: List[Dict[str, Any]], path: str) -> Dict[str, Any]:
        last = _last_tool(messages)
        if last is None:
            return _call("run_code", {"code": PART_STATS.format(path=path)}, "part")
        return {"role": "assistant", "content": stdout_of(last)}

    def _fan_out(self, messages: List[Dict[str, Any]], task: str, tools: List[Dict[str, Any]]) -> Dict[str, Any]:
        last = _last_tool(messages)
        if last is None:
            spec = next(t["function"]["parameters"] for t in tools if t["function"]["name"] == "spawn_subagents")
            props = spec["properties"]
            asked = SUBAGENT_COUNT.search(task)
            parts = min(int(asked.group(1)) if asked else self.default_parts, props["parts"]["maximum"])
            return _call("spawn_subagents", {"dataset": props["dataset"]["enum"][0], "parts": max(1, parts),
                                             "instructions": "Count the rows and sum each numeric column.",
                                             **_python_policy(tools, "spawn_subagents")}, "spawn")
        if _last_call_id(messages) == "spawn":
            try:
                answers = [json.loads(a["answer"]) for a in json.loads(last)]
            except (TypeError, ValueError, KeyError):
                return {"role": "assistant", "content": f"The sub-agents did not all answer: {last[:500]}"}
            return _call("run_code", {"code": GATHER.format(answers=json.dumps(answers)),
                                      **_python_policy(tools, "run_code")}, "gather")
        out = stdout_of(last)
        try:
            totals = json.loads(out)
        except ValueError:
            return {"role": "assistant", "content": f"Adding the parts up failed: {last[:500]}"}
        sums = ", ".join(f"{col} = {_number(v)}" for col, v in totals["sums"].items())
        return {"role": "assistant", "content": f"{totals['parts']} sub-agents read {totals['rows']} rows; "
                                                f"totals: {sums or 'no numeric column'}."}

    def _one_snippet(self, messages: List[Dict[str, Any]], task: str,
                     tools: List[Dict[str, Any]]) -> Dict[str, Any]:
        last = _last_tool(messages)
        if last is None:
            expr = EXPRESSION.search(task)
            code = f"print({expr.group(0).strip()})\n" if expr else LOOK_AROUND
            return _call("run_code", {"code": code, **_python_policy(tools, "run_code")}, "snippet")
        out = stdout_of(last)
        if not out or out == "(empty)":
            return {"role": "assistant", "content": f"The code printed nothing; the sandbox said:\n{last[:1000]}"}
        return {"role": "assistant", "content": f"The sandbox ran it and printed: {out}"}


def _python_policy(tools: List[Dict[str, Any]], tool: str) -> Dict[str, Any]:
    """{"policy": P} for a policy of the tool's enum that runs Python, as a model would pick from
    the descriptions: the seed code-sandbox, else one named for python; {} leaves the default."""
    spec = next((t["function"]["parameters"] for t in tools if t["function"]["name"] == tool), {})
    names = spec.get("properties", {}).get("policy", {}).get("enum") or []
    for name in ["code-sandbox"] + [n for n in names if "python" in n]:
        if name in names:
            return {"policy": name}
    return {}


def _call(name: str, args: Dict[str, Any], cid: str) -> Dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": cid, "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}}]}


def _last_tool(messages: List[Dict[str, Any]]) -> Optional[str]:
    tools = [m for m in messages if m.get("role") == "tool"]
    return str(tools[-1]["content"]) if tools else None


def _last_call_id(messages: List[Dict[str, Any]]) -> Optional[str]:
    for m in reversed(messages):
        if m.get("tool_calls"):
            return m["tool_calls"][0].get("id")
    return None


def _spawned(messages: List[Dict[str, Any]]) -> bool:
    return any(c.get("id") == "spawn" for m in messages for c in m.get("tool_calls") or [])


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"
