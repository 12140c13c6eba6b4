"""Handles of asynchronous executions (docs/api.md "Asynchronous executions").

``client.submit(code)`` queues an execution and returns an :class:`ExecutionHandle` at once; its
``result(timeout)`` long-polls GET /v1/executions/{id}?wait= until the daemon has the result. The
result is kept by the daemon (bounded, docs/api.md), not by the connection: when a long-poll's
connection breaks the handle asks again by id, so a dropped connection does not lose a result.
``SandboxClient.execute`` is ``submit(...).result()``.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Dict, Optional

from . import _calls
from .errors import ConnectionFailed, ProtocolError, RequestTimedOut

#: What a broken or silent long-poll raises; asked again by id, the result is still there.
_TRANSIENT = (ConnectionFailed, ProtocolError, RequestTimedOut)


def _not_finished(execution_id: str, timeout: Optional[float]) -> RequestTimedOut:
    return RequestTimedOut(f"execution {execution_id} did not finish within {timeout} s; it is still "
                           "kept by the daemon: call result() again, or get_execution(id) later")


class ExecutionHandle:
    """An execution the daemon is running or has run; ``id`` names it to any client with the
    same token (``SandboxClient.execution(id)``)."""

    def __init__(self, run: Callable[[_calls.Call], Any], base_timeout: float, execution_id: str) -> None:
        self._run = run
        self._base_timeout = base_timeout
        self.id = execution_id

    def status(self) -> Dict[str, Any]:
        """The execution's view now: ``{"state": "queued"|"running"|"finished", "result"?, ...}``."""
        return self._run(_calls.get_execution(self.id, self._base_timeout))

    def result(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Waits for the result (an ExecResult; a batch's whole answer for ``submit_batch``) and
        returns it; an execution the daemon could not run raises its typed exception.
        ``timeout``: seconds at most (None: until it finishes); past it RequestTimedOut, and the
        result stays kept for a later call. A broken connection is retried by id
        (``_calls.RECONNECT_TRIES`` times, backing off); NotFound once it is no longer kept."""
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        failures = 0
        while True:
            left = _calls.LONG_POLL if deadline is None else deadline - time.monotonic()
            try:
                view = self._run(_calls.get_execution(self.id, self._base_timeout, max(0.0, left)))
                failures = 0
            except _TRANSIENT:
                failures += 1
                if failures > _calls.RECONNECT_TRIES:
                    raise
                time.sleep(_calls.RECONNECT_DELAY * 2 ** (failures - 1))
                view = None
            result = _calls.finished_result(view)
            if result is not None:
                return result
            if deadline is not None and time.monotonic() >= deadline:
                raise _not_finished(self.id, timeout)

    def __str__(self) -> str:
        # The id, so code that formatted execute_async's bare id (before the handle) still works.
        return self.id

    def __repr__(self) -> str:
        return f"ExecutionHandle({self.id!r})"


class AsyncExecutionHandle:
    """:class:`ExecutionHandle` for the asyncio client: ``await handle.result(timeout)``."""

    def __init__(self, run: Callable[[_calls.Call], Any], base_timeout: float, execution_id: str) -> None:
        self._run = run
        self._base_timeout = base_timeout
        self.id = execution_id

    async def status(self) -> Dict[str, Any]:
        return await self._run(_calls.get_execution(self.id, self._base_timeout))

    async def result(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """See :meth:`ExecutionHandle.result`."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + float(timeout)
        failures = 0
        while True:
            left = _calls.LONG_POLL if deadline is None else deadline - loop.time()
            try:
                view = await self._run(_calls.get_execution(self.id, self._base_timeout, max(0.0, left)))
                failures = 0
            except _TRANSIENT:
                failures += 1
                if failures > _calls.RECONNECT_TRIES:
                    raise
                await asyncio.sleep(_calls.RECONNECT_DELAY * 2 ** (failures - 1))
                view = None
            result = _calls.finished_result(view)
            if result is not None:
                return result
            if deadline is not None and loop.time() >= deadline:
                raise _not_finished(self.id, timeout)

    def __str__(self) -> str:
        # The id, so code that formatted execute_async's bare id (before the handle) still works.
        return self.id

    def __repr__(self) -> str:
        return f"AsyncExecutionHandle({self.id!r})"
