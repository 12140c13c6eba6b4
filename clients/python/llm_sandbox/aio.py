"""AsyncSandboxClient: the same API as SandboxClient for asyncio code, on asyncio streams.

It speaks HTTP/1.1 itself (one connection per request, ``Connection: close``) instead of running
the sync client in a thread pool, so hundreds of concurrent sub-agent calls cost coroutines, not
threads, and a cancelled task closes its socket at once. Requests and answers are described by
the same ``_calls`` module as the sync client, so the two cannot disagree.
"""
from __future__ import annotations

import asyncio
import ssl
from typing import (Any, AsyncIterator, Awaitable, Dict, Generator, Iterable, List, Mapping, Optional, Sequence,
                    Tuple, Union)

from . import _calls, _policy_timeouts, _workspace
from ._calls import Call, FilesArg, Response, StreamEvent
from ._http import STREAM_READ, TransportBase, connection_failed, timed_out
from .client import ClientBase
from .handle import AsyncExecutionHandle
from .errors import (ConnectionFailed, NotFound, ProtocolError, RateLimited, RequestTimedOut,
                     SandboxError, Unavailable)
from .session import SessionBase

#: Bound on the status line plus headers; the daemon's are a few hundred bytes.
MAX_HEADER_BYTES = 64 * 1024


class _Conn:
    """One HTTP/1.1 exchange on an asyncio stream pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 timeout: Optional[float]) -> None:
        self.reader = reader
        self.writer = writer
        self.timeout = timeout
        self.status = 0
        self.headers: Dict[str, str] = {}

    async def _io(self, aw: Awaitable[Any]) -> Any:
        return await asyncio.wait_for(aw, self.timeout)

    async def read_head(self) -> None:
        while True:
            try:
                head = await self._io(self.reader.readuntil(b"\r\n\r\n"))
            except asyncio.IncompleteReadError as e:
                if not e.partial:
                    raise ConnectionResetError("the daemon closed the connection without answering")
                raise ProtocolError(f"truncated HTTP header: {e.partial[:200]!r}") from None
            except asyncio.LimitOverrunError:
                raise ProtocolError("HTTP header too large") from None
            lines = head.decode("iso-8859-1").split("\r\n")
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:200]!r}")
            self.status = int(parts[1])
            headers: Dict[str, str] = {}
            for line in lines[1:]:
                if not line:
                    continue
                name, sep, value = line.partition(":")
                if not sep:
                    raise ProtocolError(f"malformed header line: {line[:200]!r}")
                key = name.strip().lower()
                value = value.strip()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            self.headers = headers
            if 100 <= self.status < 200:  # interim answer (100 Continue): the real one follows
                continue
            return

    def _no_body(self, method: str) -> bool:
        return method == "HEAD" or self.status in (204, 304)

    async def body_chunks(self, method: str) -> AsyncIterator[bytes]:
        """The body as it arrives, whatever its framing: chunked, Content-Length or until EOF."""
        if self._no_body(method):
            return
        te = self.headers.get("transfer-encoding", "").lower()
        try:
            if "chunked" in te:
                while True:
                    size_line = await self._io(self.reader.readuntil(b"\r\n"))
                    size_text = size_line.split(b";", 1)[0].strip()
                    try:
                        size = int(size_text, 16)
                    except ValueError:
                        raise ProtocolError(f"bad chunk size {size_line[:50]!r}") from None
                    if size == 0:
                        while (await self._io(self.reader.readuntil(b"\r\n"))) != b"\r\n":
                            pass  # trailers, ignored
                        return
                    data = await self._io(self.reader.readexactly(size))
                    if await self._io(self.reader.readexactly(2)) != b"\r\n":
                        raise ProtocolError("chunk not followed by CRLF")
                    yield data
            elif "content-length" in self.headers:
                try:
                    left = int(self.headers["content-length"])
                except ValueError:
                    raise ProtocolError("bad Content-Length") from None
                while left > 0:
                    data = await self._io(self.reader.read(min(left, STREAM_READ)))
                    if not data:
                        raise ProtocolError(f"the body ended {left} bytes short of Content-Length")
                    left -= len(data)
                    yield data
            else:
                while True:
                    data = await self._io(self.reader.read(STREAM_READ))
                    if not data:
                        return
                    yield data
        except asyncio.IncompleteReadError:
            raise ProtocolError("the answer broke off in the middle of its body") from None

    async def read_body(self, method: str) -> bytes:
        parts = [c async for c in self.body_chunks(method)]
        return b"".join(parts)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (OSError, asyncio.CancelledError):
            pass


class AsyncTransport(TransportBase):
    """Runs :class:`Call` objects on asyncio streams, with the retry rule applied."""

    timeout_errors = (asyncio.TimeoutError,)
    read_errors = (OSError,)

    async def _send(self, call: Call) -> _Conn:
        ssl_arg: Union[ssl.SSLContext, bool, None] = None
        if self.ep.scheme == "https":
            ssl_arg = self.ssl_context or True
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.ep.host, self.ep.port, ssl=ssl_arg,
                                        limit=MAX_HEADER_BYTES), call.http_timeout)
        except asyncio.TimeoutError:
            raise timed_out(self.ep, call) from None
        except OSError as e:
            raise connection_failed(self.ep, e) from None
        conn = _Conn(reader, writer, call.http_timeout)
        headers = self._headers(call)
        if call.body is None and call.method in ("POST", "PUT"):
            headers["Content-Length"] = "0"
        head = f"{call.method} {self.ep.prefix + call.path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        try:
            writer.write(head.encode("latin-1") + (call.body or b""))
            await conn._io(writer.drain())
            await conn.read_head()
        except asyncio.TimeoutError:
            await conn.close()
            raise timed_out(self.ep, call) from None
        except (ConnectionError, OSError) as e:
            await conn.close()
            raise connection_failed(self.ep, e) from None
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _open(self, call: Call) -> _Conn:
        attempt, waited = 0, 0.0
        while True:
            attempt += 1
            conn = await self._send(call)
            if 200 <= conn.status < 300:
                return conn
            try:
                body = await conn.read_body(call.method)
            except (ProtocolError, asyncio.TimeoutError, OSError):
                body = b""
            finally:
                await conn.close()
            wait = self._retry_wait(call, attempt, waited, conn.status, conn.headers, body)
            await asyncio.sleep(wait)
            waited += wait

    async def run(self, call: Call) -> Any:
        conn = await self._open(call)
        try:
            with self._reading(call, "the answer"):
                body = await conn.read_body(call.method)
        finally:
            await conn.close()
        assert call.parse is not None
        return call.parse(Response(conn.status, conn.headers, body))

    async def stream(self, call: Call) -> AsyncIterator[bytes]:
        conn = await self._open(call)
        try:
            with self._reading(call, "the event stream"):
                async for chunk in conn.body_chunks(call.method):
                    yield chunk
        finally:
            await conn.close()


class AsyncSession(SessionBase):
    """The asyncio twin of :class:`llm_sandbox.Session`."""

    _client: "AsyncSandboxClient"

    async def execute(self, code: Optional[str] = None, *, stdin: Optional[str] = None,
                      timeout: Optional[float] = None,
                      env: Optional[Mapping[str, str]] = None, command: Optional[Sequence[str]] = None,
                      collect: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        return await self._client._run(_calls.session_execute(
            self.session_id, code, stdin=stdin, timeout=timeout, env=env,
            base_timeout=self._client.timeout,
            policy_timeout=await self._client._limit(self.policy, timeout), command=command, collect=collect))

    async def upload_dir(self, local: str, remote: str, *, ignore: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        return await self.upload_archive(remote, _workspace.pack_dir(local, ignore))

    async def upload_archive(self, remote: str, archive: bytes) -> Dict[str, Any]:
        return await self._client._run(
            _calls.upload_archive(self.session_id, remote, archive, self._client.timeout))

    async def download_dir(self, remote: str, local: str) -> List[str]:
        data = await self._client._run(
            _calls.download_archive(self.session_id, remote, self._client.timeout))
        return _workspace.unpack_tar(data, local)

    async def upload(self, path: str, data: Union[bytes, str]) -> Dict[str, Any]:
        return await self._client._run(
            _calls.upload(self.session_id, path, data, self._client.timeout))

    async def download(self, path: str) -> bytes:
        return await self._client._run(
            _calls.download(self.session_id, path, self._client.timeout))

    async def list_dir(self, path: str, *, limit: Optional[int] = None) -> Dict[str, Any]:
        """See Session.list_dir."""
        return await self._client._run(_calls.fs_list(self.session_id, path, limit, self._client.timeout))

    async def stat(self, path: str) -> Dict[str, Any]:
        return await self._client._run(_calls.fs_stat(self.session_id, path, self._client.timeout))

    async def mkdir(self, path: str, *, parents: bool = False) -> Dict[str, Any]:
        return await self._client._run(_calls.fs_mkdir(self.session_id, path, parents, self._client.timeout))

    async def rename(self, src: str, dst: str) -> Dict[str, Any]:
        return await self._client._run(_calls.fs_rename(self.session_id, src, dst, self._client.timeout))

    async def remove(self, path: str, *, recursive: bool = False) -> Dict[str, Any]:
        return await self._client._run(_calls.fs_remove(self.session_id, path, recursive, self._client.timeout))

    async def changes(self, path: Optional[str] = None) -> Dict[str, Any]:
        """See Session.changes."""
        return await self._client._run(_calls.session_changes(self.session_id, path, self._client.timeout))

    async def reset(self) -> Dict[str, Any]:
        """See Session.reset."""
        self._info = await self._client._run(
            _calls.session_reset(self.session_id, self._client.timeout))
        return self._info

    async def snapshot(self) -> Dict[str, Any]:
        """See Session.snapshot."""
        self._info = await self._client._run(
            _calls.session_snapshot(self.session_id, self._client.timeout))
        return self._info

    async def fork(self, count: int = 1) -> _calls.ForkedSessions:
        """See Session.fork: the children, with the daemon's carried/not-carried ``.report``."""
        answer = await self._client._run(_calls.session_fork(self.session_id, count, self._client.timeout))
        children = [AsyncSession(self._client, info) for info in answer["sessions"]]
        for c in children:
            c.fork_report = answer.get("fork")
        return _calls.ForkedSessions(children, answer.get("fork"))

    async def pause(self) -> Dict[str, Any]:
        """See Session.pause."""
        answer = await self._client._run(_calls.session_pause(self.session_id, self._client.timeout))
        self._info = dict(self._info, state="paused")
        return answer

    async def resume(self) -> Dict[str, Any]:
        """See Session.resume."""
        self._info = await self._client._run(_calls.session_resume(self.session_id, self._client.timeout))
        return self._info

    def watch(self, path: str, *, recursive: bool = False) -> AsyncIterator[Tuple[str, Any]]:
        """See Session.watch: ``async for event, data in session.watch("/tmp"): ...``."""
        return self._client._follow(_calls.fs_watch(self.session_id, path, recursive))

    async def info(self) -> Dict[str, Any]:
        self._info = await self._client._run(
            _calls.session_info(self.session_id, self._client.timeout))
        return self._info

    async def close(self) -> None:
        if self.closed:
            return
        try:
            await self._client._run(_calls.delete_session(self.session_id, self._client.timeout))
        except NotFound:
            pass
        self.closed = True

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncSession(id={self.session_id!r}, policy={self.policy!r}, closed={self.closed})"


class _SessionStarter:
    """What ``AsyncSandboxClient.session()`` returns: ``await`` it for an AsyncSession, or use
    ``async with`` and the session is closed on the way out."""

    def __init__(self, coro_factory: Any) -> None:
        self._factory = coro_factory
        self._session: Optional[AsyncSession] = None

    def __await__(self) -> Generator[Any, None, AsyncSession]:
        return self._factory().__await__()

    async def __aenter__(self) -> AsyncSession:
        self._session = await self._factory()
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()


class AsyncSandboxClient(ClientBase):
    """Same arguments and methods as :class:`llm_sandbox.SandboxClient`, as coroutines;
    :meth:`stream` is an async iterator and :meth:`session` works with ``async with``."""

    _transport_class = AsyncTransport

    async def _run(self, call: Call) -> Any:
        return await self._transport.run(call)

    async def _policy_timeout(self, policy: Optional[str]) -> Optional[float]:
        """See SandboxClient._policy_timeout."""
        known, seconds = self._policy_timeouts.get(policy)
        if known:
            return seconds
        try:
            name = policy or await self._run(_policy_timeouts.default_name_call(self.timeout))
            seconds = (await self._run(_policy_timeouts.timeout_call(name, self.timeout))
                       if name else None)
        except (ConnectionFailed, RequestTimedOut, RateLimited, Unavailable):
            return None
        except SandboxError:
            seconds = None
        self._policy_timeouts.put(policy, seconds)
        return seconds

    async def _limit(self, policy: Optional[str], given: Optional[float]) -> Optional[float]:
        return None if given is not None else await self._policy_timeout(policy)

    async def execute(self, code: Optional[str] = None, *, language: Optional[str] = None,
                      stdin: Optional[str] = None, timeout: Optional[float] = None,
                      env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
                      policy: Optional[str] = None, memory: Union[str, int, None] = None,
                      cpu: Union[str, float, None] = None, command: Optional[Sequence[str]] = None,
                      collect: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """See SandboxClient.execute: ``await (await submit(...)).result()``."""
        handle = await self.submit(code, language=language, stdin=stdin, timeout=timeout, env=env,
                                   files=files, policy=policy, memory=memory, cpu=cpu,
                                   command=command, collect=collect)
        return await handle.result()

    async def submit(self, code: Optional[str] = None, *, language: Optional[str] = None,
                     stdin: Optional[str] = None, timeout: Optional[float] = None,
                     env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
                     policy: Optional[str] = None, memory: Union[str, int, None] = None,
                     cpu: Union[str, float, None] = None, command: Optional[Sequence[str]] = None,
                     collect: Optional[Sequence[str]] = None) -> AsyncExecutionHandle:
        """See SandboxClient.submit."""
        body = _calls.execute_body(code, policy=policy or self._policy, language=language, stdin=stdin,
                                   timeout=timeout, memory=memory, cpu=cpu, env=env, files=files,
                                   command=command, collect=collect)
        return self.execution(await self._run(_calls.execute_async(body, self.timeout)))

    async def submit_batch(self, tasks: Sequence[Union[str, Mapping[str, Any]]], *,
                           concurrency: Optional[int] = None,
                           policy: Optional[str] = None) -> AsyncExecutionHandle:
        """See SandboxClient.submit_batch."""
        encoded = _calls.batch_tasks(tasks, policy=policy or self._policy)
        return self.execution(await self._run(_calls.batch_async(encoded, concurrency=concurrency,
                                                                 base_timeout=self.timeout)))

    def execution(self, execution_id: str) -> AsyncExecutionHandle:
        """See SandboxClient.execution."""
        return AsyncExecutionHandle(self._run, self.timeout, execution_id)

    async def stream(self, code: str, *, language: Optional[str] = None,
                     stdin: Optional[str] = None, timeout: Optional[float] = None,
                     env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
                     policy: Optional[str] = None, memory: Union[str, int, None] = None,
                     cpu: Union[str, float, None] = None) -> AsyncIterator[StreamEvent]:
        """``async for kind, data in client.stream(code): ...`` (see SandboxClient.stream)."""
        name = policy or self._policy
        body = _calls.execute_body(code, policy=name, language=language, stdin=stdin,
                                   timeout=timeout, memory=memory, cpu=cpu, env=env, files=files)
        events = _calls.StreamDecoder()
        chunks = self._transport.stream(_calls.execute_stream(
            body, self.timeout, await self._limit(name, timeout)))
        try:
            async for chunk in chunks:
                for out in events.feed(chunk):
                    yield out
            for out in events.close():
                yield out
        finally:
            await chunks.aclose()

    async def execute_async(self, code: str, *, language: Optional[str] = None,
                            stdin: Optional[str] = None, timeout: Optional[float] = None,
                            env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
                            policy: Optional[str] = None, memory: Union[str, int, None] = None,
                            cpu: Union[str, float, None] = None) -> AsyncExecutionHandle:
        """See SandboxClient.execute_async: a handle, at once (the bare id at first: ``handle.id``)."""
        return await self.submit(code, language=language, stdin=stdin, timeout=timeout, env=env, files=files,
                                 policy=policy, memory=memory, cpu=cpu)

    async def get_execution(self, execution_id: Union[str, AsyncExecutionHandle]) -> Dict[str, Any]:
        """See SandboxClient.get_execution."""
        return await self._run(_calls.get_execution(_calls.execution_id(execution_id), self.timeout))

    async def wait_execution(self, execution_id: Union[str, AsyncExecutionHandle], *, timeout: Optional[float] = None,
                             poll_interval: float = _calls.POLL_INTERVAL) -> Dict[str, Any]:
        """See SandboxClient.wait_execution."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + float(timeout)
        execution_id = _calls.execution_id(execution_id)
        while True:
            result = _calls.finished_result(await self.get_execution(execution_id))
            if result is not None:
                return result
            if deadline is not None and loop.time() >= deadline:
                raise RequestTimedOut(f"execution {execution_id} did not finish within {timeout} s; "
                                      "it is still kept: call wait_execution again later")
            await asyncio.sleep(poll_interval)

    async def batch(self, tasks: Sequence[Union[str, Mapping[str, Any]]], *,
                    concurrency: Optional[int] = None, policy: Optional[str] = None,
                    raise_on_error: bool = False) -> List[Dict[str, Any]]:
        encoded = _calls.batch_tasks(tasks, policy=policy or self._policy)
        limits = {t.get("policy"): await self._policy_timeout(t.get("policy"))
                  for t in encoded if t.get("timeout") is None}
        return await self._run(_calls.batch(encoded, concurrency=concurrency,
                                            base_timeout=self.timeout,
                                            raise_on_error=raise_on_error, policy_timeouts=limits))

    def session(self, *, language: Optional[str] = None, policy: Optional[str] = None,
                idle_timeout: Optional[float] = None,
                max_lifetime: Optional[float] = None,
                setup: Optional[str] = None, changes: bool = False) -> _SessionStarter:
        async def create() -> AsyncSession:
            return AsyncSession(self, await self._run(_calls.create_session(
                policy=policy or self._policy, language=language, idle_timeout=idle_timeout,
                max_lifetime=max_lifetime, base_timeout=self.timeout, setup=setup, changes=changes)))
        return _SessionStarter(create)

    async def attach_session(self, session_id: str) -> AsyncSession:
        return AsyncSession(self, await self._run(_calls.session_info(session_id, self.timeout)))

    async def list_sessions(self) -> List[Dict[str, Any]]:
        return await self._run(_calls.list_sessions(self.timeout))

    async def resume_session(self, session_id: str) -> AsyncSession:
        """See SandboxClient.resume_session."""
        return AsyncSession(self, await self._run(_calls.session_resume(session_id, self.timeout)))

    async def list_executions(self, *, limit: Optional[int] = None, policy: Optional[str] = None,
                              status: Optional[str] = None, rule: Optional[str] = None) -> Dict[str, Any]:
        """See SandboxClient.list_executions."""
        return await self._run(_calls.list_executions(self.timeout, limit=limit, policy=policy, status=status,
                                                      rule=rule))

    async def history(self, *, limit: Optional[int] = None, cursor: Optional[str] = None,
                      policy: Optional[str] = None, status: Optional[str] = None,
                      rule: Optional[str] = None) -> Dict[str, Any]:
        """See SandboxClient.history."""
        return await self._run(_calls.history(self.timeout, limit=limit, cursor=cursor, policy=policy,
                                              status=status, rule=rule))

    async def overview(self) -> Dict[str, Any]:
        """See SandboxClient.overview."""
        return await self._run(_calls.overview(self.timeout))

    def events(self, types: Optional[Sequence[str]] = None) -> AsyncIterator[Tuple[str, Any]]:
        """See SandboxClient.events: ``async for event, data in client.events(): ...``."""
        return self._follow(_calls.events(types))

    async def images(self) -> List[Dict[str, Any]]:
        """See SandboxClient.images."""
        return await self._run(_calls.images(self.timeout))

    async def _follow(self, call: Call) -> AsyncIterator[Tuple[str, Any]]:
        decoder = _calls.EventDecoder()
        chunks = self._transport.stream(call)
        try:
            async for chunk in chunks:
                for out in decoder.feed(chunk):
                    yield out
        finally:
            await chunks.aclose()

    async def policies(self) -> List[Dict[str, Any]]:
        return await self._run(_calls.policies(self.timeout))

    async def get_policy(self, name: Optional[str] = None) -> Dict[str, Any]:
        """One policy with its explain view (default: the client's :attr:`policy`)."""
        return await self._run(_calls.policy(name or self._policy, self.timeout))

    async def health(self) -> Dict[str, Any]:
        return await self._run(_calls.health(self.timeout))

    async def ready(self) -> Dict[str, Any]:
        return await self._run(_calls.ready(self.timeout))

    async def __aenter__(self) -> "AsyncSandboxClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    def __repr__(self) -> str:
        return f"AsyncSandboxClient(base_url={self.base_url!r}, policy={self._policy!r})"
