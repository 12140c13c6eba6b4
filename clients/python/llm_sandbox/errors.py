"""Typed exceptions for every error class of the LLM Sandbox HTTP API (docs/api.md).

The daemon answers every failure with ``{"error": {"code", "message"}}`` and a status. Agents
usually need to tell three situations apart: "my request was wrong" (fix the code or the limits),
"the daemon is busy" (wait ``retry_after`` seconds and retry), and "the sandbox itself broke"
(report it). One class per status makes those ``except`` clauses short and exact.
"""
from __future__ import annotations

import datetime
import email.utils
import json
import time
from typing import Any, Mapping, Optional


class SandboxError(Exception):
    """Base of every error raised by this package.

    Attributes:
        message: the daemon's explanation (it says what is wrong and how to fix it).
        code: the API's snake_case error code (``"forbidden"``, ``"too_many_requests"``...),
            or a client-side code such as ``"connection_failed"``.
        status: the HTTP status, or None when no HTTP answer was received.
        retry_after: seconds the daemon asked us to wait (429/503), else None.
        body: the decoded error body when there was one, for debugging.
    """

    default_code = "error"

    def __init__(self, message: str, *, code: Optional[str] = None, status: Optional[int] = None,
                 retry_after: Optional[float] = None, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.status = status
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        prefix = f"[{self.status} {self.code}] " if self.status is not None else f"[{self.code}] "
        return prefix + self.message

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
                f"message={self.message!r})")


class BadRequest(SandboxError):
    """400: the request is malformed (missing code, bad path, unknown language...)."""
    default_code = "bad_request"


class MethodNotAllowed(BadRequest):
    """405: the route exists but not with this method (a client bug; a BadRequest for callers)."""
    default_code = "method_not_allowed"


class UnsupportedMediaType(BadRequest):
    """415: the body's Content-Type is not what the route takes."""
    default_code = "unsupported_media_type"


class Unauthorized(SandboxError):
    """401: no bearer token, or an unknown one. Pass ``token=`` or set $LLM_SANDBOX_TOKEN."""
    default_code = "unauthorized"


class Forbidden(SandboxError):
    """403: the request would loosen its policy; the message names the field."""
    default_code = "forbidden"


#: The usual reason for a 403: asking for more than the policy allows.
PolicyViolation = Forbidden


class NotFound(SandboxError):
    """404: no such policy, session or file."""
    default_code = "not_found"


class SessionGone(NotFound):
    """410: the session's node is not serving any more (a cluster front says so, docs/scale-out.md);
    its state is lost with that node: open a new session."""
    default_code = "gone"


class Conflict(SandboxError):
    """409: the session is busy with another execution."""
    default_code = "conflict"


class PayloadTooLarge(SandboxError):
    """413: the request body or an uploaded file is above the daemon's bound."""
    default_code = "payload_too_large"


class RateLimited(SandboxError):
    """429: the daemon's queue is full; wait ``retry_after`` seconds and retry."""
    default_code = "too_many_requests"


class Unavailable(SandboxError):
    """503: the daemon is not ready or is shutting down; ``retry_after`` says when to retry."""
    default_code = "unavailable"


class SandboxFailure(SandboxError):
    """502: the sandbox itself failed (init died, backend down); the message carries the cause."""
    default_code = "sandbox_error"


class ServerError(SandboxError):
    """500 (or any other 5xx): a bug or an unexpected condition in the daemon."""
    default_code = "internal"


class ConnectionFailed(SandboxError):
    """The daemon could not be reached at all (refused, DNS, reset before an answer)."""
    default_code = "connection_failed"


class RequestTimedOut(SandboxError):
    """No answer within the client's HTTP timeout (the daemon may still be running the code)."""
    default_code = "timeout"


class ProtocolError(SandboxError):
    """The daemon's answer is not what docs/api.md promises (bad JSON, broken framing)."""
    default_code = "protocol_error"


_BY_STATUS: Mapping[int, type] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    409: Conflict, 410: SessionGone, 413: PayloadTooLarge, 415: UnsupportedMediaType, 429: RateLimited,
    500: ServerError, 502: SandboxFailure, 503: Unavailable,
}

_BY_CODE: Mapping[str, type] = {
    "bad_request": BadRequest, "unauthorized": Unauthorized, "forbidden": Forbidden,
    "not_found": NotFound, "gone": SessionGone, "method_not_allowed": MethodNotAllowed, "conflict": Conflict,
    "payload_too_large": PayloadTooLarge, "unsupported_media_type": UnsupportedMediaType,
    "too_many_requests": RateLimited, "unavailable": Unavailable, "sandbox_error": SandboxFailure,
    "internal": ServerError,
}


def class_for(status: Optional[int], code: Optional[str] = None) -> type:
    """The exception class for a status (preferred) or, for SSE "error" events, a code."""
    if status is not None:
        if status in _BY_STATUS:
            return _BY_STATUS[status]
        if 400 <= status < 500:
            return BadRequest
        return ServerError
    return _BY_CODE.get(code or "", SandboxError)


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After in seconds: the delay-seconds form (the daemon's) or an HTTP date (a proxy's),
    counted from ``now`` (time.time()). A date in the past is 0; anything unreadable is None."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def refused_before_running(err: "SandboxError") -> bool:
    """True when the daemon itself said it did not take the request: a 429/503 whose body is the
    API's error object with code too_many_requests/unavailable (docs/api.md). A bare 503 from a
    proxy in front of it does not prove that, so a POST is not retried on one."""
    body = err.body
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return False
    return body["error"].get("code") in ("too_many_requests", "unavailable")


def error_from_body(payload: Any, status: Optional[int] = None,
                    retry_after: Optional[float] = None) -> SandboxError:
    """Builds the typed exception for a decoded ``{"error": {...}}`` object.

    Also used for failed entries of a batch and for the SSE "error" event, which carry the same
    object without an HTTP status of their own.
    """
    err = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(err, dict):
        code = str(err.get("code") or "") or None
        message = str(err.get("message") or "") or "(no message)"
    else:
        code, message = None, "(no error object in the answer)"
    cls = class_for(status, code)
    return cls(message, code=code, status=status, retry_after=retry_after, body=payload)


def error_from_response(status: int, headers: Mapping[str, str], body: bytes,
                        url: str = "") -> SandboxError:
    """Maps a non-2xx HTTP answer to its exception, even when the body is not the API's JSON
    (a proxy's HTML page, an empty 502): the status alone decides the class then."""
    retry_after = parse_retry_after(headers.get("retry-after"))
    try:
        payload = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, ValueError):
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        return error_from_body(payload, status, retry_after)
    snippet = body[:300].decode("utf-8", "replace").strip()
    where = f" from {url}" if url else ""
    message = f"HTTP {status}{where}" + (f": {snippet}" if snippet else " with an empty body")
    cls = class_for(status)
    return cls(message, status=status, retry_after=retry_after, body=snippet or None)
