"""The synchronous HTTP transport (``http.client``) and what both transports share
(:class:`TransportBase`): the daemon's address, the request headers, the retry rule and decision,
and the messages of a connection that fails, times out or breaks off.

A fresh connection per request keeps the client safe to share between threads (a LangChain
tool may be called from several at once) at the cost of one local TCP handshake, which is small
next to starting a sandbox.
"""
from __future__ import annotations

import contextlib
import http.client
import os
import random
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple, Type
from urllib.parse import urlsplit

from ._version import __version__
from ._calls import Call, Response
from .errors import (ConnectionFailed, ProtocolError, RateLimited, RequestTimedOut, SandboxError,
                     Unavailable, error_from_response, refused_before_running)

USER_AGENT = f"llm-sandbox-python/{__version__}"
#: Read size for streamed bodies: small enough that events arrive as soon as they are sent.
STREAM_READ = 8192


@dataclass(frozen=True)
class Endpoint:
    """The daemon's address, parsed once from ``base_url``."""
    scheme: str
    host: str
    port: int
    prefix: str  # a path prefix when the daemon sits behind a reverse proxy, else ""
    url: str

    @classmethod
    def parse(cls, base_url: str) -> "Endpoint":
        parts = urlsplit(base_url if "://" in base_url else "http://" + base_url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"base_url must be http:// or https://, got {base_url!r}")
        if not parts.hostname:
            raise ValueError(f"base_url has no host: {base_url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        prefix = parts.path.rstrip("/")
        return cls(parts.scheme, parts.hostname, port, prefix, base_url.rstrip("/"))

    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


#: Defaults of the retry rule (the constructors' ``retries``, ``max_retry_wait``, ``retry_budget``).
DEFAULT_RETRIES = 10
DEFAULT_MAX_RETRY_WAIT = 30.0
DEFAULT_RETRY_BUDGET = 30.0
#: Methods whose repetition is harmless whatever answered; a POST is retried only on the daemon's
#: own refusal (errors.refused_before_running).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


@dataclass(frozen=True)
class RetryRule:
    """Automatic retries of 429/503 answers, on by default so a burst of sub-agents beyond the
    daemon's queue waits its turn instead of failing.

    A 429/503 from the daemon means it refused the request before running anything (its queue is
    full, it is not ready or shutting down), so sending it again cannot run code twice. The wait
    is the answer's Retry-After (else ``backoff`` doubled per attempt) plus up to 20% jitter so a
    burst does not come back in lockstep. Retrying never comes back sooner than the daemon asked:
    a Retry-After longer than ``max_wait``, or than what is left of ``budget`` (all waits of one
    call together), ends the retries and raises the error, whose ``retry_after`` says when to
    come back. At most ``retries`` retries; ``retries=0`` turns retrying off.
    """
    retries: int = DEFAULT_RETRIES
    max_wait: float = DEFAULT_MAX_RETRY_WAIT
    budget: float = DEFAULT_RETRY_BUDGET
    backoff: float = 0.5

    def delay(self, attempt: int, error: SandboxError, method: str,
              waited: float = 0.0) -> Optional[float]:
        """Seconds to wait before retry number ``attempt`` (1-based) of a ``method`` request that
        has already waited ``waited`` seconds, or None to give up and raise ``error``."""
        if attempt > self.retries or not isinstance(error, (RateLimited, Unavailable)):
            return None
        if method.upper() not in IDEMPOTENT_METHODS and not refused_before_running(error):
            return None
        asked = error.retry_after if error.retry_after is not None else self.backoff * 2 ** (attempt - 1)
        if asked > self.max_wait or waited + asked > self.budget:
            return None
        return min(asked * (1.0 + random.uniform(0.0, 0.2)), self.budget - waited)


def resolve_token(token: Optional[str]) -> Optional[str]:
    return token if token is not None else (os.environ.get("LLM_SANDBOX_TOKEN") or None)


def connection_failed(ep: Endpoint, reason: object) -> ConnectionFailed:
    return ConnectionFailed(
        f"cannot reach the LLM Sandbox daemon at {ep.url} ({reason}). Is it running? Start it "
        f"with `llm-sandbox serve` (it listens on 127.0.0.1:8080 by default; "
        f"`llm-sandbox serve --listen HOST:PORT` for another address), or pass the right "
        f"base_url= to the client.")


def timed_out(ep: Endpoint, call: Call) -> RequestTimedOut:
    return RequestTimedOut(
        f"no answer from {ep.url} for {call.method} {call.path} within {call.http_timeout:g}s "
        f"(the client's timeout); raise SandboxClient(timeout=...) for long programs")


def make_transport(cls: Any, base_url: str, token: Optional[str], retry: RetryRule,
                   ssl_context: Optional[ssl.SSLContext]) -> Any:
    """The transport of a client (sync or asyncio) from its constructor's arguments."""
    return cls(Endpoint.parse(base_url), resolve_token(token), retry, ssl_context)


class TransportBase:
    """What the sync and asyncio transports share; each adds its own I/O: sending a request and
    reading the answer, waiting before a retry."""

    #: What this transport's reads raise when they time out, and when the connection breaks.
    timeout_errors: Tuple[Type[BaseException], ...] = ()
    read_errors: Tuple[Type[BaseException], ...] = ()

    def __init__(self, ep: Endpoint, token: Optional[str], retry: RetryRule,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        self.ep = ep
        self.token = token
        self.retry = retry
        self.ssl_context = ssl_context

    def _headers(self, call: Call) -> Dict[str, str]:
        headers = {"Host": self.ep.host_header(), "User-Agent": USER_AGENT, "Accept": call.accept}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if call.body is not None:
            headers["Content-Type"] = call.content_type or "application/octet-stream"
            headers["Content-Length"] = str(len(call.body))
        headers["Connection"] = "close"  # one request per connection; frees the daemon's thread
        return headers

    def _retry_wait(self, call: Call, attempt: int, waited: float, status: int,
                    headers: Dict[str, str], body: bytes) -> float:
        """For a refused request (a non-2xx answer) on its ``attempt``-th try, after ``waited``
        seconds of earlier waits: the seconds to wait before sending it again, per the retry
        rule; else the answer is raised as its typed exception."""
        err = error_from_response(status, headers, body, self.ep.url)
        wait = self.retry.delay(attempt, err, call.method, waited) if call.retry else None
        if wait is None:
            raise err
        return wait

    @contextlib.contextmanager
    def _reading(self, call: Call, what: str) -> Iterator[None]:
        """Around reads of a 2xx answer's body: a timeout becomes RequestTimedOut, a broken
        connection a ProtocolError saying that ``what`` ("the answer") broke off."""
        try:
            yield
        except self.timeout_errors:
            raise timed_out(self.ep, call) from None
        except self.read_errors as e:
            raise ProtocolError(f"{what} from {self.ep.url} broke off: {e!r}") from None


def _lower_headers(resp: http.client.HTTPResponse) -> Dict[str, str]:
    return {k.lower(): v for k, v in resp.getheaders()}


class SyncTransport(TransportBase):
    """Runs :class:`Call` objects with ``http.client``, with the retry rule applied."""

    timeout_errors = (socket.timeout,)
    read_errors = (OSError, http.client.HTTPException)

    def _connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.ep.scheme == "https":
            return http.client.HTTPSConnection(self.ep.host, self.ep.port, timeout=timeout,
                                               context=self.ssl_context)
        return http.client.HTTPConnection(self.ep.host, self.ep.port, timeout=timeout)

    def _open(self, call: Call) -> "tuple[http.client.HTTPConnection, http.client.HTTPResponse]":
        """Sends the request and reads the status and headers; retries 429/503 per the rule.
        A non-2xx answer is raised as its typed exception."""
        attempt, waited = 0, 0.0
        while True:
            attempt += 1
            conn = self._connect(call.http_timeout)
            try:
                conn.putrequest(call.method, self.ep.prefix + call.path, skip_host=True,
                                skip_accept_encoding=True)
                for k, v in self._headers(call).items():
                    conn.putheader(k, v)
                conn.endheaders(call.body)
                resp = conn.getresponse()
            except socket.timeout:
                conn.close()
                raise timed_out(self.ep, call) from None
            except (ConnectionError, OSError, http.client.HTTPException) as e:
                conn.close()
                if isinstance(e, http.client.HTTPException) and not isinstance(
                        e, http.client.RemoteDisconnected):
                    raise ProtocolError(f"bad HTTP answer from {self.ep.url}: {e!r}") from None
                raise connection_failed(self.ep, e) from None
            if 200 <= resp.status < 300:
                return conn, resp
            try:
                body = resp.read()
            except (OSError, http.client.HTTPException):
                body = b""
            finally:
                conn.close()
            wait = self._retry_wait(call, attempt, waited, resp.status, _lower_headers(resp), body)
            time.sleep(wait)
            waited += wait

    def run(self, call: Call) -> object:
        conn, resp = self._open(call)
        try:
            with self._reading(call, "the answer"):
                body = resp.read()
        finally:
            conn.close()
        assert call.parse is not None
        return call.parse(Response(resp.status, _lower_headers(resp), body))

    def stream(self, call: Call) -> Iterator[bytes]:
        """Yields the body's bytes as they arrive (chunked decoding done by http.client)."""
        conn, resp = self._open(call)
        try:
            while True:
                with self._reading(call, "the event stream"):
                    chunk = resp.read1(STREAM_READ)
                if not chunk:
                    return
                yield chunk
        finally:
            conn.close()
