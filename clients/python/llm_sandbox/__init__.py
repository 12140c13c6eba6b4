"""Python client of LLM Sandbox: run code written by LLM agents in disposable sandboxes.

    from llm_sandbox import SandboxClient
    client = SandboxClient(base_url="http://localhost:8080", policy="code-sandbox")
    print(client.execute("print(6 * 7)")["stdout"])

Standard library only. See README.md beside this package and docs/api.md in the repository.
"""
from ._version import __version__
from ._calls import ForkedSessions, StreamEvent, output_bytes
from ._workspace import DEFAULT_IGNORE, archive_entry
from .aio import AsyncSandboxClient, AsyncSession
from .client import SandboxClient
from .errors import (BadRequest, Conflict, ConnectionFailed, Forbidden, MethodNotAllowed,
                     NotFound, PayloadTooLarge, PolicyViolation, ProtocolError, RateLimited,
                     RequestTimedOut, SandboxError, SandboxFailure, ServerError, SessionGone, Unauthorized,
                     Unavailable, UnsupportedMediaType)
from .handle import AsyncExecutionHandle, ExecutionHandle
from .session import Session

__all__ = [
    "__version__", "SandboxClient", "Session", "AsyncSandboxClient", "AsyncSession",
    "ExecutionHandle", "AsyncExecutionHandle", "StreamEvent", "output_bytes", "SandboxError", "BadRequest", "MethodNotAllowed", "UnsupportedMediaType",
    "Unauthorized", "Forbidden", "PolicyViolation", "NotFound", "SessionGone", "Conflict", "PayloadTooLarge",
    "RateLimited", "Unavailable", "SandboxFailure", "ServerError", "ConnectionFailed",
    "RequestTimedOut", "ProtocolError", "archive_entry", "DEFAULT_IGNORE", "ForkedSessions",
]
