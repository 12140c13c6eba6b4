"""What the LangChain and LlamaIndex tools share, with no framework import (standard library).

The operator decides which server-side policies an agent may use (a list of names, or every
policy the daemon lists); the model picks one per call from that enum, guided by the policies'
descriptions from GET /v1/policies. A name outside the list is refused before any request is
sent, so a model cannot talk its way into a looser policy.
"""
from __future__ import annotations

import asyncio
import importlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..client import DEFAULT_URL, SandboxClient
from ..errors import (BadRequest, Conflict, ConnectionFailed, Forbidden, NotFound,
                      PayloadTooLarge, ProtocolError, RateLimited, SandboxError, SandboxFailure,
                      ServerError, Unauthorized, Unavailable)

#: Longest stdout or stderr handed back to a model, in characters.
DEFAULT_MAX_OUTPUT_CHARS = 8000


@dataclass(frozen=True)
class ToolPolicy:
    """One policy as a tool offers it to the model."""
    name: str
    description: str
    languages: Sequence[str] = ()
    network: bool = False


@dataclass
class SandboxToolConfig:
    """The policy choice resolved against the daemon: everything needed to build a tool.

    ``run`` is what every framework adapter calls; it never raises for problems the model can
    act on (see :func:`error_for_model`).
    """
    client: SandboxClient
    name: str
    policies: List[ToolPolicy]
    default_policy: str
    description: str
    language: Optional[str] = "python"
    timeout: Optional[float] = None
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    calls: int = field(default=0, compare=False)

    @property
    def policy_names(self) -> List[str]:
        return [p.name for p in self.policies]

    def json_schema(self) -> Dict[str, Any]:
        """The tool's input as JSON Schema: ``code`` and an enum of the allowed policies."""
        return {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": CODE_HELP},
                "policy": {"type": "string", "enum": self.policy_names,
                           "description": policy_help(self.default_policy)},
            },
            "required": ["code"],
            "additionalProperties": False,
        }

    def run(self, code: str, policy: Optional[str] = None) -> str:
        """Runs one tool call: checks the policy choice, executes, formats for the model."""
        self.calls += 1
        chosen = policy or self.default_policy
        if chosen not in self.policy_names:
            return (f"error: policy {json.dumps(chosen)} is not available to you; choose one of: "
                    f"{', '.join(self.policy_names)}")
        if not isinstance(code, str) or not code.strip():
            return "error: `code` must be a non-empty program"
        try:
            result = self.client.execute(code, policy=chosen, language=self.language,
                                         timeout=self.timeout)
        except SandboxError as exc:
            return error_for_model(exc)
        return format_result(result, self.max_output_chars)

    def tool_functions(self) -> Tuple[Callable[..., str], Callable[..., Awaitable[str]]]:
        """The sync and async callables every framework adapter registers as the tool."""

        def run_python_code(code: str, policy: Optional[str] = None) -> str:
            """Execute Python code in a secure sandbox."""
            return self.run(code, policy)

        async def arun_python_code(code: str, policy: Optional[str] = None) -> str:
            # The client is synchronous and thread-safe; keep the event loop free while it waits.
            return await asyncio.to_thread(self.run, code, policy)

        return run_python_code, arun_python_code


CODE_HELP = "The complete program to run. Its output must be printed to be seen."


def policy_help(default: str) -> str:
    return (f"Which sandbox policy to run under (default {default}); the tool description says "
            "what each is for.")


def _describe(p: Mapping[str, Any], override: Optional[str]) -> str:
    """Falls back to the policy's facts when its YAML has no description."""
    text = (override if override is not None else str(p.get("description") or "")).strip()
    langs = p.get("languages") or []
    facts = (f"languages: {', '.join(langs) if langs else 'python'}; "
             f"network {'on' if p.get('network') else 'off'}")
    # container.build: the packages its environment has (GET /v1/policies `packages`, and
    # `apt_packages` from build.apt), so the model knows what it can import and run; a long list is
    # cut, saying how many more there are.
    for key, label in (("packages", "installed packages"), ("apt_packages", "system packages")):
        pkgs = [str(x) for x in (p.get(key) or [])]
        if pkgs:
            shown = ", ".join(pkgs[:40]) + (f" and {len(pkgs) - 40} more" if len(pkgs) > 40 else "")
            facts += f"; {label}: {shown}"
    return f"{text} ({facts})" if text else f"general-purpose sandbox ({facts})"


def describe_policies(policies: Sequence[ToolPolicy], default_policy: str,
                      language: Optional[str] = "python") -> str:
    """The tool description: what it does, what comes back, and what each policy is for."""
    what = f"Run {language.capitalize() if language else ''} code".replace("  ", " ")
    lines = [
        f"{what} in an isolated, disposable sandbox and get back its stdout, stderr, exit "
        "status and any security alerts.",
        "Each call starts from a clean box: files and variables do not persist between calls. "
        "Print what you need to see.",
        "Choose the `policy` by what the code needs:",
    ]
    for p in policies:
        mark = " (default)" if p.name == default_policy else ""
        lines.append(f"- {p.name}{mark}: {p.description}")
    return "\n".join(lines)


def resolve_tool_config(client: Optional[SandboxClient] = None, *,
                        policies: Optional[Sequence[str]] = None,
                        descriptions: Optional[Mapping[str, str]] = None,
                        default_policy: Optional[str] = None, name: str = "run_python_code",
                        language: Optional[str] = "python", timeout: Optional[float] = None,
                        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> SandboxToolConfig:
    """Fetches GET /v1/policies and keeps the allowed ones.

    Args:
        client: defaults to a SandboxClient for $LLM_SANDBOX_URL (else http://localhost:8080).
        policies: names the agent may choose from, the first being the default; default: every
            policy the daemon can run (GET /v1/policies ``runnable``), or $LLM_SANDBOX_POLICIES
            (comma-separated) when set.
        descriptions: the operator's own words for a policy, replacing the daemon's.
        default_policy: used when the model names none (default: the first allowed).
        name: the tool's name as the model sees it.
        language: the language every call runs as (None: the policy's default).
        timeout: upper bound of one call's wall time, seconds (may only lower the policy's).

    An allowed name the daemon does not have raises NotFound naming it: an operator's typo must
    not silently widen or empty the agent's choice. An allowed name the daemon cannot run
    (``runnable: false``, e.g. python-gvisor on the native backend) raises ValueError with the
    daemon's reason.
    """
    if client is None:
        client = SandboxClient(base_url=os.environ.get("LLM_SANDBOX_URL") or DEFAULT_URL)
    if policies is None and os.environ.get("LLM_SANDBOX_POLICIES"):
        policies = [p.strip() for p in os.environ["LLM_SANDBOX_POLICIES"].split(",") if p.strip()]
    listed = client.policies()
    by_name = {str(p.get("name")): p for p in listed}
    # A policy the daemon's backend cannot run (runnable: false) is never offered: every call
    # under it would be refused. An older daemon without the field runs them all.
    runnable = [n for n, p in by_name.items() if p.get("runnable", True)]
    wanted = list(policies) if policies is not None else runnable
    if not wanted:
        raise ValueError("the tool needs at least one allowed policy")
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise NotFound(f"allowed policy {', '.join(map(repr, missing))} is not on the daemon "
                       f"(it has: {', '.join(by_name)}); fix the tool's 'policies' option")
    not_runnable = [n for n in wanted if n not in runnable]
    if not_runnable:
        reasons = "; ".join(f"{n}: {by_name[n].get('reason') or 'not runnable'}" for n in not_runnable)
        raise ValueError(f"allowed policy {', '.join(map(repr, not_runnable))} cannot run on this "
                         f"daemon's backend ({reasons}); remove it from the tool's 'policies' option "
                         f"or run the daemon where it can run")
    overrides = descriptions or {}
    chosen = [ToolPolicy(n, _describe(by_name[n], overrides.get(n)),
                         tuple(by_name[n].get("languages") or ()), bool(by_name[n].get("network")))
              for n in wanted]
    default = default_policy or chosen[0].name
    if default not in wanted:
        raise ValueError(f"default_policy {default!r} is not among the allowed policies {wanted}")
    return SandboxToolConfig(client=client, name=name, policies=chosen, default_policy=default,
                             description=describe_policies(chosen, default, language),
                             language=language, timeout=timeout,
                             max_output_chars=max_output_chars)


def clip(text: str, limit: int) -> str:
    """Cuts a long text in the middle, saying how much was cut, so a context is not flooded."""
    if len(text) <= limit:
        return text
    head = (limit * 7 + 9) // 10
    tail = limit - head
    return (f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n"
            f"{text[-tail:] if tail > 0 else ''}")


def format_result(result: Mapping[str, Any], max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """The ExecResult as plain text for a model: a status line, stdout, stderr, alerts."""
    ms = f", {result['duration_ms']} ms" if isinstance(result.get("duration_ms"), int) else ""
    status = result.get("status")
    parts = [f"status: {status} (exit code {result.get('exit_code')}{ms}, "
             f"policy {result.get('policy')})"]
    notes = {
        "timeout": "note: the program was killed at its time limit.",
        "oom": "note: the program ran out of memory and was killed.",
        "denied": "note: the policy did not allow something the program tried to do (see alerts).",
    }
    if status in notes:
        parts.append(notes[status])
    if result.get("truncated"):
        parts.append("note: the output was longer than the policy allows and was truncated.")
    stdout = result.get("stdout") or ""
    stderr = result.get("stderr") or ""
    parts.append("stdout:\n" + (clip(stdout, max_output_chars) if stdout else "(empty)"))
    if stderr:
        parts.append("stderr:\n" + clip(stderr, max_output_chars))
    alerts = result.get("alerts") or []
    if alerts:
        parts.append("alerts:\n" + "\n".join(
            f"- [{a.get('severity')}] {a.get('rule') or a.get('kind')}: {a.get('message')}"
            for a in alerts))
    return "\n".join(parts)


def error_for_model(exc: SandboxError) -> str:
    """Errors a model can act on (a wrong request, a policy limit, a busy daemon) become text so
    the agent can adapt; errors only the operator can fix (no daemon, a bad token, a daemon bug,
    a broken answer) are raised again, so they are not hidden inside a conversation."""
    if isinstance(exc, (Unauthorized, ConnectionFailed, ProtocolError)) or (
            isinstance(exc, ServerError)):
        raise exc
    if isinstance(exc, (RateLimited, Unavailable)):
        after = f" Retry after {exc.retry_after:g} s." if exc.retry_after is not None else ""
        return f"error: the sandbox service is busy ({exc.code}): {exc.message}.{after}"
    if isinstance(exc, Forbidden):
        return f"error: the policy does not allow this request (forbidden): {exc.message}"
    if isinstance(exc, PayloadTooLarge):
        return f"error: the code or its files are too large (payload_too_large): {exc.message}"
    if isinstance(exc, Conflict):
        return f"error: the sandbox is busy with another run (conflict): {exc.message}"
    if isinstance(exc, (BadRequest, NotFound)):
        return f"error: the request was rejected ({exc.code}): {exc.message}"
    if isinstance(exc, SandboxFailure):
        return f"error: the sandbox itself failed (sandbox_error): {exc.message}"
    return f"error ({exc.code}): {exc.message}"


def framework_class(module: str, name: str, install_hint: str) -> Any:
    """``from module import name`` for an adapter, imported only when its tool is built; when the
    framework is not installed, an ImportError saying how to install it."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(install_hint) from exc


def input_model(config: SandboxToolConfig) -> Any:
    """A pydantic model of the tool's input (code + an enum of the allowed policies), for the
    frameworks that describe tool arguments with pydantic (both LangChain and LlamaIndex depend
    on it, so importing it here is safe whenever one of them is installed)."""
    from typing import Literal, Optional as Opt

    from pydantic import Field, create_model

    names = tuple(config.policy_names)
    policy_type = Literal[names]  # type: ignore[valid-type]
    return create_model(
        "RunCodeInput",
        code=(str, Field(description=CODE_HELP)),
        policy=(Opt[policy_type], Field(default=None, description=policy_help(config.default_policy))),
    )
