"""SandboxClient: the synchronous client of the LLM Sandbox daemon (docs/api.md).

The requirements' example works as written::

    client = SandboxClient(base_url="http://localhost:8080", policy="code-sandbox")
    response = client.execute(code)
    return response["stdout"]
"""
from __future__ import annotations

import ssl
import time
import warnings
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _calls
from ._calls import FilesArg, StreamEvent
from ._http import (DEFAULT_MAX_RETRY_WAIT, DEFAULT_RETRIES, DEFAULT_RETRY_BUDGET, RetryRule,
                    SyncTransport, make_transport)
from . import _policy_timeouts
from ._policy_timeouts import PolicyTimeouts
from .errors import ConnectionFailed, RateLimited, RequestTimedOut, SandboxError, Unavailable
from .handle import ExecutionHandle
from .session import Session

DEFAULT_URL = "http://localhost:8080"
DEFAULT_POLICY = "code-sandbox"


class PolicyName(str):
    """``client.policy``: the name of the client's default policy, a plain ``str`` for every
    use. Calling it is the old spelling of :meth:`SandboxClient.get_policy` (``client.policy`` was
    that method at first); it still works, with a DeprecationWarning."""

    _get_policy: Callable[..., Any]

    def __new__(cls, name: str, get_policy: Callable[..., Any]) -> "PolicyName":
        obj = super().__new__(cls, name)
        obj._get_policy = get_policy
        return obj

    def __call__(self, name: Optional[str] = None) -> Any:
        warnings.warn("client.policy is the default policy's name now; call "
                      "client.get_policy(name) for a policy's details", DeprecationWarning,
                      stacklevel=2)
        return self._get_policy(name)


class ClientBase:
    """The settings :class:`SandboxClient` and its asyncio twin share; each runs the calls of
    ``_calls`` on its own transport (``_transport_class``)."""

    _transport_class: Callable[..., Any]

    def __init__(self, base_url: str = DEFAULT_URL, policy: Optional[str] = DEFAULT_POLICY,
                 token: Optional[str] = None, timeout: float = 60.0, *,
                 retries: int = DEFAULT_RETRIES, max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
                 retry_budget: float = DEFAULT_RETRY_BUDGET,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        self.base_url = base_url
        self._policy = policy
        self.timeout = float(timeout)
        self._policy_timeouts = PolicyTimeouts()
        retry = RetryRule(retries=max(0, int(retries)), max_wait=float(max_retry_wait),
                          budget=float(retry_budget))
        self._transport = make_transport(self._transport_class, base_url, token, retry,
                                         ssl_context)

    @property
    def policy(self) -> Optional[PolicyName]:
        """The policy used when a call names none (None: the daemon's default)."""
        return None if self._policy is None else PolicyName(self._policy, self.get_policy)

    @policy.setter
    def policy(self, name: Optional[str]) -> None:
        self._policy = name

    @property
    def policy_name(self) -> Optional[str]:
        """The same as :attr:`policy` (its first name; kept for existing code)."""
        return self._policy

    @policy_name.setter
    def policy_name(self, name: Optional[str]) -> None:
        self._policy = name

    def get_policy(self, name: Optional[str] = None) -> Any:
        raise NotImplementedError


class SandboxClient(ClientBase):
    """Talks to ``llm-sandbox serve``.

    Args:
        base_url: the daemon's address.
        policy: the server-side policy used when a call names none. A request may only tighten
            it (lower timeout/memory/cpu); asking for more raises Forbidden.
        token: bearer token; defaults to $LLM_SANDBOX_TOKEN. Needed when the daemon has tokens.
        timeout: seconds to wait for the daemon's answer at least. A call that runs a program
            waits at least its limit (the call's ``timeout``, else the policy's, learned once
            from GET /v1/policies/<name>) plus 15 s, so the daemon's deadline always fires first
            and the result is not lost.
        retries: how many times a 429/503 answer (queue full, not ready) is retried, waiting its
            Retry-After each time (default 10; 0 = never). Only refusals the daemon made before
            running anything are retried, so no code runs twice.
        max_retry_wait: upper bound of one wait between retries, in seconds (default 30).
        retry_budget: upper bound of all waits of one call together, in seconds (default 30).
        ssl_context: for an https:// daemon behind a TLS proxy.

    The client holds no connection between calls and may be shared between threads.
    """

    _transport_class = SyncTransport

    def _run(self, call: _calls.Call) -> Any:
        return self._transport.run(call)

    def _policy_timeout(self, policy: Optional[str]) -> Optional[float]:
        """The policy's timeout in seconds (None: unknown), looked up once per TTL."""
        known, seconds = self._policy_timeouts.get(policy)
        if known:
            return seconds
        try:
            name = policy or self._run(_policy_timeouts.default_name_call(self.timeout))
            seconds = self._run(_policy_timeouts.timeout_call(name, self.timeout)) if name else None
        except (ConnectionFailed, RequestTimedOut, RateLimited, Unavailable):
            return None  # busy or unreachable: ask again next time; the call itself will say
        except SandboxError:
            seconds = None  # unknown policy, older daemon: the client's timeout applies
        self._policy_timeouts.put(policy, seconds)
        return seconds

    def _limit(self, policy: Optional[str], given: Optional[float]) -> Optional[float]:
        """The policy timeout a call's HTTP wait must outlast, or None when it names its own."""
        return None if given is not None else self._policy_timeout(policy)

    # --- executions

    def execute(self, code: Optional[str] = None, *, language: Optional[str] = None, stdin: Optional[str] = None,
                timeout: Optional[float] = None, env: Optional[Mapping[str, str]] = None,
                files: FilesArg = None, policy: Optional[str] = None,
                memory: Union[str, int, None] = None,
                cpu: Union[str, float, None] = None, command: Optional[Sequence[str]] = None,
                collect: Optional[Sequence[str]] = None, changes: Union[bool, str, None] = None,
                outputs: Optional[bool] = None) -> Dict[str, Any]:
        """Runs code in a fresh sandbox and returns the ExecResult dict: "stdout", "stderr",
        "exit_code", "status" (ok|error|timeout|oom|killed|denied|output_limit|reset), "duration_ms",
        "cpu_ms", "memory_peak_bytes", "alerts", "truncated", "execution_id", "backend", "policy".

        A program that fails, times out or is denied is still a result (look at "status");
        exceptions are for requests the daemon refused or could not serve.

        files: ``{"/tmp/data.csv": "a,b\\n"}`` (str or bytes values) or the API's list form;
        written into the box's tmpfs before the program starts. A whole directory:
        ``files=[archive_entry("/tmp/work", "./project")]`` (llm_sandbox.archive_entry).

        command: ``["python3", "-m", "unittest"]`` instead of code (allowed by the policy's
        commands.allow). collect: paths or glob patterns (``["/tmp/out/*.png"]``) whose files
        come back in result["collected"] after the program ends. changes: True (every writable
        path) or a directory: result["changes"] lists what the run changed, with a git patch.
        Rich outputs (matplotlib figures as PNG) come in result["outputs"]; outputs=False: none.

        Built on :meth:`submit`: the daemon keeps the result under its execution id until this
        call fetched it, so a connection that breaks while the program runs does not lose it.
        """
        return self.submit(code, language=language, stdin=stdin, timeout=timeout, env=env,
                           files=files, policy=policy, memory=memory, cpu=cpu, command=command,
                           collect=collect, changes=changes, outputs=outputs).result()

    def submit(self, code: Optional[str] = None, *, language: Optional[str] = None, stdin: Optional[str] = None,
               timeout: Optional[float] = None, env: Optional[Mapping[str, str]] = None,
               files: FilesArg = None, policy: Optional[str] = None,
               memory: Union[str, int, None] = None,
               cpu: Union[str, float, None] = None, command: Optional[Sequence[str]] = None,
               collect: Optional[Sequence[str]] = None, changes: Union[bool, str, None] = None,
               outputs: Optional[bool] = None) -> ExecutionHandle:
        """Queues code like :meth:`execute` (same arguments; refusals such as 400/403 are raised
        here) and returns an :class:`ExecutionHandle` at once: ``handle.result(timeout)`` waits
        for the ExecResult, ``handle.id`` names it to :meth:`execution` later."""
        body = _calls.execute_body(code, policy=policy or self._policy, language=language, stdin=stdin,
                                   timeout=timeout, memory=memory, cpu=cpu, env=env, files=files,
                                   command=command, collect=collect, changes=changes, outputs=outputs)
        return self.execution(self._run(_calls.execute_async(body, self.timeout)))

    def submit_batch(self, tasks: Sequence[Union[str, Mapping[str, Any]]], *,
                     concurrency: Optional[int] = None, policy: Optional[str] = None) -> ExecutionHandle:
        """Queues a batch (see :meth:`batch`); ``handle.result()`` is its whole answer,
        ``{"results": [...], "concurrency": {...}}``."""
        encoded = _calls.batch_tasks(tasks, policy=policy or self._policy)
        return self.execution(self._run(_calls.batch_async(encoded, concurrency=concurrency,
                                                           base_timeout=self.timeout)))

    def execution(self, execution_id: str) -> ExecutionHandle:
        """A handle of an asynchronous execution by its id (e.g. one submitted before a crash)."""
        return ExecutionHandle(self._run, self.timeout, execution_id)

    def stream(self, code: str, *, language: Optional[str] = None, stdin: Optional[str] = None,
               timeout: Optional[float] = None, env: Optional[Mapping[str, str]] = None,
               files: FilesArg = None, policy: Optional[str] = None,
               memory: Union[str, int, None] = None,
               cpu: Union[str, float, None] = None) -> Iterator[StreamEvent]:
        """Runs code like :meth:`execute` but yields events as they happen:
        ``("stdout", str)``, ``("stderr", str)``, ``("alert", dict)`` and last
        ``("result", dict)``. An "error" event is raised as its typed exception.

        The request is sent when iteration starts. Closing the iterator early (``break``)
        closes the connection.
        """
        name = policy or self._policy
        body = _calls.execute_body(code, policy=name, language=language, stdin=stdin,
                                   timeout=timeout, memory=memory, cpu=cpu, env=env, files=files)
        return self._stream(_calls.execute_stream(body, self.timeout, self._limit(name, timeout)))

    def execute_async(self, code: str, *, language: Optional[str] = None,
                      stdin: Optional[str] = None, timeout: Optional[float] = None,
                      env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
                      policy: Optional[str] = None, memory: Union[str, int, None] = None,
                      cpu: Union[str, float, None] = None) -> ExecutionHandle:
        """Queues code like :meth:`execute` and returns an :class:`ExecutionHandle` at once, as
        :meth:`submit` does (it returned the bare id at first: ``handle.id`` is that id, ``str(handle)`` too, and
        :meth:`get_execution` / :meth:`wait_execution` take the handle or the id)."""
        return self.submit(code, language=language, stdin=stdin, timeout=timeout, env=env, files=files,
                           policy=policy, memory=memory, cpu=cpu)

    def get_execution(self, execution_id: Union[str, ExecutionHandle]) -> Dict[str, Any]:
        """An execution's state: ``{"state": "queued"|"running"|"finished", "result": ExecResult
        (finished), "error": {...} (the daemon could not run it)}``; NotFound once it is no
        longer kept (or is another token's)."""
        return self._run(_calls.get_execution(_calls.execution_id(execution_id), self.timeout))

    def wait_execution(self, execution_id: Union[str, ExecutionHandle], *, timeout: Optional[float] = None,
                       poll_interval: float = _calls.POLL_INTERVAL) -> Dict[str, Any]:
        """Waits for an asynchronous execution and returns its ExecResult (a failed one raises
        its typed exception). ``timeout``: seconds to wait at most (None: until it finishes);
        past it RequestTimedOut, and the execution is still kept for a later call."""
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        execution_id = _calls.execution_id(execution_id)
        while True:
            result = _calls.finished_result(self.get_execution(execution_id))
            if result is not None:
                return result
            if deadline is not None and time.monotonic() >= deadline:
                raise RequestTimedOut(f"execution {execution_id} did not finish within {timeout} s; "
                                      "it is still kept: call wait_execution again later")
            time.sleep(poll_interval)

    def _follow(self, call: _calls.Call) -> Iterator[Tuple[str, Any]]:
        """``(event, data)`` of a long-lived event stream until the caller stops iterating."""
        events = _calls.EventDecoder()
        chunks = self._transport.stream(call)
        try:
            for chunk in chunks:
                yield from events.feed(chunk)
        finally:
            chunks.close()

    def _stream(self, call: _calls.Call) -> Iterator[StreamEvent]:
        events = _calls.StreamDecoder()
        chunks = self._transport.stream(call)
        try:
            for chunk in chunks:
                yield from events.feed(chunk)
            yield from events.close()
        finally:
            chunks.close()

    def batch(self, tasks: Sequence[Union[str, Mapping[str, Any]]], *,
              concurrency: Optional[int] = None, policy: Optional[str] = None,
              raise_on_error: bool = False) -> List[Dict[str, Any]]:
        """Runs many tasks concurrently, each in a fresh sandbox (sub-agents without state).

        tasks: code strings or execute bodies (``{"code": ..., "language": ..., "timeout":
        ...}``). Returns one entry per task, in request order: an ExecResult, or
        ``{"error": {"code", "message"}}`` for a task the daemon refused; with
        ``raise_on_error=True`` the first such entry is raised as its typed exception instead.
        """
        encoded = _calls.batch_tasks(tasks, policy=policy or self._policy)
        limits = {t.get("policy"): self._policy_timeout(t.get("policy"))
                  for t in encoded if t.get("timeout") is None}
        return self._run(_calls.batch(encoded, concurrency=concurrency, base_timeout=self.timeout,
                                      raise_on_error=raise_on_error, policy_timeouts=limits))

    # --- sessions

    def session(self, *, language: Optional[str] = None, policy: Optional[str] = None,
                idle_timeout: Optional[float] = None,
                max_lifetime: Optional[float] = None, setup: Optional[str] = None,
                changes: bool = False) -> Session:
        """Creates a session (one box kept for several executions). Use it with ``with`` so the
        box is released: ``with client.session(language="python") as s: s.execute("x = 1")``.
        ``setup`` (python) runs once when the interpreter starts; ``Session.reset()`` returns to
        the state after it without running it again. ``changes``: keep a baseline of the
        writable dirs, so ``Session.changes()`` can give the change set as a patch."""
        return Session(self, self._run(_calls.create_session(
            policy=policy or self._policy, language=language, idle_timeout=idle_timeout,
            max_lifetime=max_lifetime, base_timeout=self.timeout, setup=setup, changes=changes)))

    def attach_session(self, session_id: str) -> Session:
        """A Session object for an existing session id (e.g. created by another process)."""
        return Session(self, self._run(_calls.session_info(session_id, self.timeout)))

    def list_sessions(self) -> List[Dict[str, Any]]:
        """Every live session on the daemon, as Session info dicts."""
        return self._run(_calls.list_sessions(self.timeout))

    def resume_session(self, session_id: str) -> Session:
        """Resumes a paused session by its id (e.g. paused by another process, or before the
        daemon restarted); ``session.info()["resume"]`` says what was carried."""
        return Session(self, self._run(_calls.session_resume(session_id, self.timeout)))

    # --- monitoring: what the dashboard reads (docs/api.md "Monitoring")

    def list_executions(self, *, limit: Optional[int] = None, policy: Optional[str] = None,
                        status: Optional[str] = None, rule: Optional[str] = None) -> Dict[str, Any]:
        """The caller's running and recent executions: {"running": [...], "recent": [...]}."""
        return self._run(_calls.list_executions(self.timeout, limit=limit, policy=policy, status=status, rule=rule))

    def history(self, *, limit: Optional[int] = None, cursor: Optional[str] = None, policy: Optional[str] = None,
                status: Optional[str] = None, rule: Optional[str] = None) -> Dict[str, Any]:
        """A page of the audit log, newest first: {"executions", "next_cursor", ...}; pass
        ``next_cursor`` back as ``cursor`` for the next page. NotFound without an audit log."""
        return self._run(_calls.history(self.timeout, limit=limit, cursor=cursor, policy=policy,
                                        status=status, rule=rule))

    def overview(self) -> Dict[str, Any]:
        """The daemon's and host's totals, the executor, the pool and the caller's sessions."""
        return self._run(_calls.overview(self.timeout))

    def events(self, types: Optional[Sequence[str]] = None) -> Iterator[Tuple[str, Any]]:
        """Follows the monitoring events (execution_started, usage, execution_finished, alert,
        session_created, ...): yields ``(event, data)``; ``break`` closes the connection."""
        return self._follow(_calls.events(types))

    def images(self) -> List[Dict[str, Any]]:
        """The daemon's image store (name, digest, platform, size...)."""
        return self._run(_calls.images(self.timeout))

    # --- policies and health

    def policies(self) -> List[Dict[str, Any]]:
        """The daemon's policies: name, description, backend, network, languages."""
        return self._run(_calls.policies(self.timeout))

    def get_policy(self, name: Optional[str] = None) -> Dict[str, Any]:
        """One policy, resolved, with its per-control explain view (default: the client's
        :attr:`policy`). Formerly ``client.policy(name)``."""
        return self._run(_calls.policy(name or self._policy, self.timeout))

    def health(self) -> Dict[str, Any]:
        """GET /healthz: {"status": "ok"} when the daemon is up."""
        return self._run(_calls.health(self.timeout))

    def ready(self) -> Dict[str, Any]:
        """GET /readyz: {"status": "ready", "backend": ...}; raises Unavailable when not ready."""
        return self._run(_calls.ready(self.timeout))

    def __enter__(self) -> "SandboxClient":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __repr__(self) -> str:
        return f"SandboxClient(base_url={self.base_url!r}, policy={self._policy!r})"
