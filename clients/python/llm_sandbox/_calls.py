"""What each API operation sends and how its answer is read, with no I/O ("sans-IO").

The sync client (``client.py`` over ``http.client``) and the async one (``aio.py`` over asyncio
streams) both execute these :class:`Call` descriptions. Keeping request bodies, paths and answer
decoding here means the two clients cannot drift apart from each other or from docs/api.md.
"""
from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional,
                    Sequence, Tuple, Union)
from urllib.parse import quote

from .errors import ProtocolError, SandboxError, error_from_body
from .sse import SSEEvent, SSEParser

#: Extra seconds of HTTP patience beyond the sandbox's own timeout: the daemon needs time to
#: start a box and to collect the result after the program was killed at its deadline.
TIMEOUT_MARGIN = 15.0

FilesArg = Union[Mapping[str, Union[str, bytes]], Sequence[Mapping[str, Any]], None]


@dataclass
class Response:
    """A complete HTTP answer: status, lower-cased headers and the raw body."""
    status: int
    headers: Dict[str, str]
    body: bytes


@dataclass
class Call:
    """One HTTP request and the function that turns its successful answer into a Python value.

    ``parse`` is None for streaming calls, whose body is read event by event instead.
    """
    method: str
    path: str
    body: Optional[bytes] = None
    content_type: Optional[str] = None
    accept: str = "application/json"
    http_timeout: Optional[float] = None
    parse: Optional[Callable[[Response], Any]] = None
    #: False for a call whose 503 is the answer itself (GET /readyz asks "are you ready?").
    retry: bool = True


class _StreamEventFields(NamedTuple):
    kind: str
    data: Any


class StreamEvent(_StreamEventFields):
    """One event of a streamed execution. A tuple, so ``kind, data = event`` works.

    kind is ``"stdout"``/``"stderr"`` (data: str), ``"alert"`` (data: Event dict) or
    ``"result"`` (data: ExecResult dict, always the last one). Unknown event names from a newer
    daemon are passed through with their decoded JSON.

    For stdout/stderr, ``data_bytes`` is the exact output: when the program wrote bytes that are
    not UTF-8, ``data`` has U+FFFD in their place and the daemon sent the bytes as base64
    (docs/api.md "Binary output"), which ``data_bytes`` decodes. None for other kinds.
    """

    def __new__(cls, kind: str, data: Any, data_bytes: Optional[bytes] = None) -> "StreamEvent":
        self = super().__new__(cls, kind, data)
        self._data_bytes = data_bytes
        return self

    @property
    def data_bytes(self) -> Optional[bytes]:
        raw = getattr(self, "_data_bytes", None)
        if raw is not None:
            return raw
        if self.kind in ("stdout", "stderr") and isinstance(self.data, str):
            return self.data.encode("utf-8")
        return None


def _decode_base64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise ProtocolError(f"{what} is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        raise ProtocolError(f"{what} is not valid base64") from None


def output_bytes(result: Mapping[str, Any], stream: str = "stdout") -> bytes:
    """The exact bytes of a result's ``stdout`` or ``stderr``.

    ``result["stdout"]`` is text; when the program wrote bytes that are not valid UTF-8 it has
    U+FFFD in their place and the result also carries ``stdout_base64`` with the bytes
    (docs/api.md "Binary output"). This returns those bytes, or the text encoded as UTF-8.
    Works on any result: execute, batch entries, session executions and the streamed "result".
    """
    if stream not in ("stdout", "stderr"):
        raise ValueError(f"stream must be 'stdout' or 'stderr', not {stream!r}")
    if result.get(stream + "_base64") is not None:
        return _decode_base64(result[stream + "_base64"], f"the result's {stream}_base64")
    text = result.get(stream, "")
    return text.encode("utf-8") if isinstance(text, str) else b""


def _json_body(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _post_json(path: str, obj: Any, http_timeout: float, parse: Optional[Callable[[Response], Any]],
               accept: str = "application/json") -> Call:
    """A POST whose body is ``obj`` as JSON."""
    return Call("POST", path, _json_body(obj), "application/json", accept=accept,
                http_timeout=http_timeout, parse=parse)


def _given(**fields: Any) -> Dict[str, Any]:
    """The fields that were given, in their order: None means unset, so the field is left out of
    the request and the policy's (or the daemon's) value applies."""
    return {k: v for k, v in fields.items() if v is not None}


def decode_json(resp: Response) -> Any:
    try:
        return json.loads(resp.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"the daemon answered {resp.status} with a body that is not JSON "
                            f"({e}): {resp.body[:200]!r}", status=resp.status) from None


def _key(name: str) -> Callable[[Response], Any]:
    def parse(resp: Response) -> Any:
        obj = decode_json(resp)
        if not isinstance(obj, dict) or name not in obj:
            raise ProtocolError(f"expected an object with {name!r}, got {str(obj)[:200]}",
                                status=resp.status)
        return obj[name]
    return parse


def _none(resp: Response) -> None:
    return None


def _raw(resp: Response) -> bytes:
    return resp.body


def _http_timeout(base: float, sandbox_timeout: Optional[float]) -> float:
    """The HTTP wait of a call that may run a program for ``sandbox_timeout`` seconds: at least
    the client's own timeout, and the program's limit plus the margin."""
    if sandbox_timeout is None:
        return base
    return max(base, float(sandbox_timeout) + TIMEOUT_MARGIN)


def run_limit(given: Optional[float], policy_timeout: Optional[float]) -> Optional[float]:
    """How long the program of a call may run: the request's ``timeout`` when it names one (it
    may only lower the policy's), else the policy's."""
    return float(given) if given is not None else policy_timeout


def encode_files(files: FilesArg) -> Optional[List[Dict[str, str]]]:
    """Accepts ``{path: str|bytes}`` or the API's own list form; bytes travel as base64 so any
    file content (binary, invalid UTF-8) arrives byte for byte."""
    if files is None:
        return None
    items: Iterable[Any]
    if isinstance(files, Mapping):
        items = [{"path": p, "content": c} for p, c in files.items()]
    else:
        items = files
    out: List[Dict[str, str]] = []
    for item in items:
        if not isinstance(item, Mapping) or "path" not in item:
            raise TypeError("files must be {path: content} or a list of {'path': ..., "
                            "'content' | 'content_base64': ...}")
        entry: Dict[str, str] = {"path": str(item["path"])}
        if "archive_base64" in item:
            entry["archive_base64"] = str(item["archive_base64"])
        elif "content_base64" in item:
            entry["content_base64"] = str(item["content_base64"])
        else:
            content = item.get("content", "")
            if isinstance(content, (bytes, bytearray, memoryview)):
                entry["content_base64"] = base64.b64encode(bytes(content)).decode("ascii")
            else:
                entry["content"] = str(content)
        out.append(entry)
    return out


def execute_body(code: Optional[str], *, policy: Optional[str], language: Optional[str] = None,
                 stdin: Optional[str] = None, timeout: Optional[float] = None,
                 memory: Union[str, int, None] = None, cpu: Union[str, float, None] = None,
                 env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
                 command: Optional[Sequence[str]] = None,
                 collect: Optional[Sequence[str]] = None,
                 changes: Union[bool, str, None] = None,
                 outputs: Optional[bool] = None) -> Dict[str, Any]:
    """The POST /v1/execute body; unset options are left out so the policy's values apply.
    Exactly one of ``code`` and ``command`` (a program and its arguments, run as they are).
    ``changes``: True or a directory for a change set; ``outputs``: False turns rich outputs off."""
    if (code is None) == (command is None):
        raise TypeError("give exactly one of code and command")
    if code is not None and not isinstance(code, str):
        raise TypeError(f"code must be a str, not {type(code).__name__}")
    if isinstance(command, str) or isinstance(collect, str):
        raise TypeError("command and collect are lists of strings, not one string")
    program: Dict[str, Any] = {"code": code} if code is not None else {"command": [str(a) for a in command or []]}
    return {**program, **_given(
        language=language, policy=policy, stdin=stdin, timeout=timeout, memory=memory, cpu=cpu,
        env=None if env is None else {str(k): str(v) for k, v in env.items()},
        files=encode_files(files), collect=None if collect is None else [str(p) for p in collect],
        changes=changes, outputs=outputs)}


def execute(body: Dict[str, Any], base_timeout: float,
            policy_timeout: Optional[float] = None) -> Call:
    """POST /v1/execute; ``policy_timeout`` is the policy's limit, used when the body has none."""
    limit = run_limit(body.get("timeout"), policy_timeout)
    return _post_json("/v1/execute", body, _http_timeout(base_timeout, limit), decode_json)


def execute_stream(body: Dict[str, Any], base_timeout: float,
                   policy_timeout: Optional[float] = None) -> Call:
    limit = run_limit(body.get("timeout"), policy_timeout)
    return _post_json("/v1/execute?stream=true", body, _http_timeout(base_timeout, limit), None,
                      accept="text/event-stream")


def stream_event(ev: SSEEvent) -> StreamEvent:
    """Decodes one SSE event; an "error" event becomes its typed exception, raised."""
    try:
        data = json.loads(ev.data) if ev.data else None
    except ValueError:
        raise ProtocolError(f"SSE event {ev.event!r} carries data that is not JSON: "
                            f"{ev.data[:200]!r}") from None
    if ev.event == "error":
        raise error_from_body(data)
    if ev.event in ("stdout", "stderr"):
        if not isinstance(data, dict) or not isinstance(data.get("data"), str):
            raise ProtocolError(f"SSE {ev.event} event without a string 'data': {ev.data[:200]!r}")
        raw = data.get("data_base64")
        exact = _decode_base64(raw, f"SSE {ev.event} event's data_base64") if raw is not None else None
        return StreamEvent(ev.event, data["data"], exact)
    return StreamEvent(ev.event, data)


class StreamDecoder:
    """The body of a streamed execution, bytes in, :class:`StreamEvent` out; the sync and asyncio
    clients feed it the chunks their transports read. ``feed`` and ``close`` are lazy: an event
    is decoded (an "error" event raised) only when the caller's iteration reaches it."""

    def __init__(self) -> None:
        self._parser = SSEParser()
        self._got_result = False

    def feed(self, chunk: bytes) -> Iterator[StreamEvent]:
        """The events completed by this chunk."""
        return self._decode(self._parser.feed(chunk))

    def close(self) -> Iterator[StreamEvent]:
        """The events completed by the end of the body; then ProtocolError if none was the
        result."""
        yield from self._decode(self._parser.close())
        if not self._got_result:
            raise ProtocolError("the event stream ended without a result event")

    def _decode(self, events: List[SSEEvent]) -> Iterator[StreamEvent]:
        for ev in events:
            out = stream_event(ev)
            self._got_result = self._got_result or out.kind == "result"
            yield out


def batch_tasks(tasks: Sequence[Union[str, Mapping[str, Any]]], *,
                policy: Optional[str]) -> List[Dict[str, Any]]:
    """The POST /v1/batch tasks. A task is code (str) or an execute body (dict); the client's
    default policy fills in where a task names none."""
    encoded: List[Dict[str, Any]] = []
    for t in tasks:
        if isinstance(t, str):
            encoded.append(execute_body(t, policy=policy))
        elif isinstance(t, Mapping):
            d = dict(t)
            if "code" not in d:
                raise TypeError("each batch task dict needs a 'code' key")
            if policy is not None:
                d.setdefault("policy", policy)
            if "files" in d:
                d["files"] = encode_files(d["files"])
            encoded.append(d)
        else:
            raise TypeError(f"a batch task is code (str) or a dict, not {type(t).__name__}")
    return encoded


def batch(encoded: List[Dict[str, Any]], *, concurrency: Optional[int], base_timeout: float,
          raise_on_error: bool = False,
          policy_timeouts: Optional[Mapping[Optional[str], Optional[float]]] = None) -> Call:
    """POST /v1/batch of tasks from :func:`batch_tasks`; ``policy_timeouts`` maps a task's policy
    to its limit, for tasks that name no timeout. With ``raise_on_error`` the answer's first
    failed entry is raised as its typed exception."""
    body: Dict[str, Any] = {"tasks": encoded}
    if concurrency is not None:
        body["concurrency"] = int(concurrency)
    # The batch answers once every task is done; give the HTTP wait room for the waves of tasks.
    known = policy_timeouts or {}
    limits = [run_limit(t.get("timeout"), known.get(t.get("policy"))) for t in encoded]
    longest = max([float(x) if x is not None else base_timeout for x in limits] or [base_timeout])
    waves = math.ceil(len(encoded) / max(1, concurrency or 4)) if encoded else 1
    timeout = max(base_timeout, waves * (longest + TIMEOUT_MARGIN))
    return _post_json("/v1/batch", body, timeout, _batch_results(raise_on_error))


def _batch_results(raise_on_error: bool) -> Callable[[Response], Any]:
    results_of = _key("results")

    def parse(resp: Response) -> Any:
        results = results_of(resp)
        if raise_on_error:
            for err in batch_errors(results):
                if err is not None:
                    raise err
        return results
    return parse


def batch_errors(results: Sequence[Any]) -> List[Optional[SandboxError]]:
    """For each batch entry, its typed exception if it failed, else None."""
    return [error_from_body(r) if isinstance(r, dict) and "error" in r and "exit_code" not in r
            else None for r in results]


def create_session(*, policy: Optional[str], language: Optional[str],
                   idle_timeout: Optional[float], max_lifetime: Optional[float],
                   base_timeout: float, setup: Optional[str] = None, changes: bool = False) -> Call:
    body = _given(policy=policy, language=language, idle_timeout=idle_timeout,
                  max_lifetime=max_lifetime, setup=setup, changes=True if changes else None)
    return _post_json("/v1/sessions", body, base_timeout, _new_session)


def session_reset(session_id: str, base_timeout: float) -> Call:
    return _post_json(f"/v1/sessions/{_sid(session_id)}/reset", {}, base_timeout, decode_json)


def session_snapshot(session_id: str, base_timeout: float) -> Call:
    return _post_json(f"/v1/sessions/{_sid(session_id)}/snapshot", {}, base_timeout, decode_json)


def session_fork(session_id: str, count: int, base_timeout: float) -> Call:
    """POST .../fork: {"sessions": [Session info], "fork": {what was and was not carried}}."""
    # Each child costs a create; they open concurrently, but give the wait room for several waves.
    return _post_json(f"/v1/sessions/{_sid(session_id)}/fork", {"count": int(count)},
                      max(base_timeout, 4 * TIMEOUT_MARGIN), decode_json)


def _new_session(resp: Response) -> Any:
    info = decode_json(resp)
    if not isinstance(info, dict) or "session_id" not in info:
        raise ProtocolError(f"session created without a session_id: {str(info)[:200]}")
    return info


def _sid(session_id: str) -> str:
    return quote(str(session_id), safe="")


def session_info(session_id: str, base_timeout: float) -> Call:
    return Call("GET", f"/v1/sessions/{_sid(session_id)}", http_timeout=base_timeout,
                parse=decode_json)


def list_sessions(base_timeout: float) -> Call:
    return Call("GET", "/v1/sessions", http_timeout=base_timeout, parse=_key("sessions"))


def delete_session(session_id: str, base_timeout: float) -> Call:
    return Call("DELETE", f"/v1/sessions/{_sid(session_id)}", http_timeout=base_timeout,
                parse=_none)


def session_execute(session_id: str, code: Optional[str], *, stdin: Optional[str],
                    timeout: Optional[float], env: Optional[Mapping[str, str]],
                    base_timeout: float, policy_timeout: Optional[float] = None,
                    command: Optional[Sequence[str]] = None,
                    collect: Optional[Sequence[str]] = None) -> Call:
    body = execute_body(code, policy=None, stdin=stdin, timeout=timeout, env=env,
                        command=command, collect=collect)
    return _post_json(f"/v1/sessions/{_sid(session_id)}/execute", body,
                      _http_timeout(base_timeout, run_limit(timeout, policy_timeout)), decode_json)


def _file_path(session_id: str, path: str) -> str:
    return f"/v1/sessions/{_sid(session_id)}/files?path={quote(path, safe='/')}"


def upload(session_id: str, path: str, data: Union[bytes, str], base_timeout: float) -> Call:
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return Call("PUT", _file_path(session_id, path), raw, "application/octet-stream",
                http_timeout=base_timeout, parse=decode_json)


def _archive_path(session_id: str, path: str) -> str:
    return f"/v1/sessions/{_sid(session_id)}/archive?path={quote(path, safe='/')}"


def upload_archive(session_id: str, path: str, archive: bytes, base_timeout: float) -> Call:
    """PUT /v1/sessions/{id}/archive: a tar/tar.gz/tar.zst/zip unpacked under ``path``."""
    return Call("PUT", _archive_path(session_id, path), bytes(archive), "application/octet-stream",
                http_timeout=base_timeout, parse=decode_json)


def download_archive(session_id: str, path: str, base_timeout: float) -> Call:
    """GET /v1/sessions/{id}/archive: the directory ``path`` as tar bytes."""
    return Call("GET", _archive_path(session_id, path), accept="application/x-tar",
                http_timeout=base_timeout, parse=_raw)


def download(session_id: str, path: str, base_timeout: float) -> Call:
    return Call("GET", _file_path(session_id, path), accept="application/octet-stream",
                http_timeout=base_timeout, parse=_raw)


# --- the file-system API (docs/api.md "File-system API"): any language, no interpreter in the box

def _fs(session_id: str, op: str, path: Optional[str] = None, **query: Any) -> str:
    q = "" if path is None else f"?path={quote(path, safe='/')}"
    for k, v in query.items():
        if v is not None:
            q += ("&" if q else "?") + f"{k}={quote(str(v), safe='')}"
    return f"/v1/sessions/{_sid(session_id)}/fs/{op}{q}"


def fs_list(session_id: str, path: str, limit: Optional[int], base_timeout: float) -> Call:
    """GET .../fs/list: {"path", "entries": [...], "truncated", "total", "message"?}."""
    return Call("GET", _fs(session_id, "list", path, limit=limit), http_timeout=base_timeout, parse=decode_json)


def fs_stat(session_id: str, path: str, base_timeout: float) -> Call:
    return Call("GET", _fs(session_id, "stat", path), http_timeout=base_timeout, parse=decode_json)


def fs_mkdir(session_id: str, path: str, parents: bool, base_timeout: float) -> Call:
    return _post_json(_fs(session_id, "mkdir"), {"path": path, "parents": bool(parents)}, base_timeout, decode_json)


def fs_rename(session_id: str, src: str, dst: str, base_timeout: float) -> Call:
    return _post_json(_fs(session_id, "rename"), {"from": src, "to": dst}, base_timeout, decode_json)


def fs_remove(session_id: str, path: str, recursive: bool, base_timeout: float) -> Call:
    return _post_json(_fs(session_id, "remove"), {"path": path, "recursive": bool(recursive)}, base_timeout,
                      decode_json)


def session_changes(session_id: str, path: Optional[str], base_timeout: float) -> Call:
    """GET .../changes: the change set since creation (or the last upload), as an execute's."""
    q = "" if not path else f"?path={quote(path, safe='/')}"
    return Call("GET", f"/v1/sessions/{_sid(session_id)}/changes{q}", http_timeout=base_timeout, parse=decode_json)


def policies(base_timeout: float) -> Call:
    return Call("GET", "/v1/policies", http_timeout=base_timeout, parse=_key("policies"))


def policy(name: Optional[str], base_timeout: float) -> Call:
    """GET /v1/policies/<name>; ``name`` is the one asked for, else the client's default."""
    if not name:
        raise ValueError("no policy name given and the client has no default policy")
    return Call("GET", f"/v1/policies/{quote(name, safe='')}", http_timeout=base_timeout,
                parse=decode_json)


def health(base_timeout: float) -> Call:
    return Call("GET", "/healthz", http_timeout=base_timeout, parse=decode_json)


def ready(base_timeout: float) -> Call:
    return Call("GET", "/readyz", http_timeout=base_timeout, parse=decode_json, retry=False)


# --- asynchronous executions (docs/api.md "Asynchronous executions")

#: How often wait_execution asks GET /v1/executions/{id} while the execution is not finished.
POLL_INTERVAL = 0.25
#: Seconds one long-poll (GET /v1/executions/{id}?wait=) may wait; the daemon allows up to 60.
LONG_POLL = 30.0
#: How often a handle asks again after its long-poll's connection broke, waiting twice as long
#: each time from RECONNECT_DELAY (about 25 s in all), before the error is raised.
RECONNECT_TRIES = 8
RECONNECT_DELAY = 0.1


def execute_async(body: Dict[str, Any], base_timeout: float) -> Call:
    """POST /v1/execute?async=true: queued, answered at once (202) with the execution id."""
    return _post_json("/v1/execute?async=true", body, base_timeout, _key("execution_id"))


def get_execution(execution_id: str, base_timeout: float, wait: Optional[float] = None) -> Call:
    """GET /v1/executions/{id}: {"state": "queued"|"running"|"finished", "result"?, "error"?};
    with ``wait`` (seconds) the daemon answers once it finished or the wait is over."""
    path = f"/v1/executions/{quote(str(execution_id), safe='')}"
    if wait is not None and wait > 0:
        wait = min(float(wait), LONG_POLL)
        path += f"?wait={wait:.3f}"
        base_timeout += wait
    return Call("GET", path, http_timeout=base_timeout, parse=decode_json)


def batch_async(tasks: List[Dict[str, Any]], *, concurrency: Optional[int],
                base_timeout: float) -> Call:
    """POST /v1/batch with "async": true: 202 with the execution id whose result is the answer."""
    body: Dict[str, Any] = {"tasks": tasks, "async": True}
    if concurrency is not None:
        body["concurrency"] = concurrency
    return _post_json("/v1/batch", body, base_timeout, _key("execution_id"))


def finished_result(view: Any) -> Optional[Dict[str, Any]]:
    """The ExecResult of a finished asynchronous execution's view, None while it is not finished;
    a failed one (the daemon could not run it) raises its typed exception."""
    if not isinstance(view, dict) or view.get("state") != "finished":
        return None
    if "error" in view:
        raise error_from_body(view)
    result = view.get("result")
    if not isinstance(result, dict):
        raise ProtocolError(f"a finished execution without a result: {str(view)[:200]}")
    return result


# --- pause and resume (docs/api.md "Pause and resume")

def session_pause(session_id: str, base_timeout: float) -> Call:
    """POST .../pause: {"session_id", "state": "paused", "pause": {"bytes", "duration_ms", "not_kept"}}."""
    return _post_json(f"/v1/sessions/{_sid(session_id)}/pause", {}, max(base_timeout, TIMEOUT_MARGIN), decode_json)


def session_resume(session_id: str, base_timeout: float) -> Call:
    """POST .../resume: the Session info with "resume" (what was and was not carried)."""
    return _post_json(f"/v1/sessions/{_sid(session_id)}/resume", {}, max(base_timeout, 2 * TIMEOUT_MARGIN),
                      _new_session)


class ForkedSessions(list):  # type: ignore[type-arg]
    """What ``fork()`` returns: the children (a list, as before) and the daemon's ``report`` of
    what was and was not carried ({"parent", "carried", "not_carried", "save_ms", ...})."""

    def __init__(self, children: Sequence[Any], report: Optional[Dict[str, Any]]) -> None:
        super().__init__(children)
        self.report: Dict[str, Any] = report or {}


# --- monitoring (docs/api.md "Monitoring"): the dashboard's routes, for scripts and tools

def _query(**params: Any) -> str:
    q = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items() if v is not None and v != "")
    return f"?{q}" if q else ""


def list_executions(base_timeout: float, *, limit: Optional[int] = None, policy: Optional[str] = None,
                    status: Optional[str] = None, rule: Optional[str] = None) -> Call:
    """GET /v1/executions: {"running": [...], "recent": [...]} (the caller's own)."""
    path = "/v1/executions" + _query(limit=limit, policy=policy, status=status, rule=rule)
    return Call("GET", path, http_timeout=base_timeout, parse=decode_json)


def history(base_timeout: float, *, limit: Optional[int] = None, cursor: Optional[str] = None,
            policy: Optional[str] = None, status: Optional[str] = None, rule: Optional[str] = None) -> Call:
    """GET /v1/history: a page of the audit log, {"executions": [...], "next_cursor"?}."""
    path = "/v1/history" + _query(limit=limit, cursor=cursor, policy=policy, status=status, rule=rule)
    return Call("GET", path, http_timeout=base_timeout, parse=decode_json)


def overview(base_timeout: float) -> Call:
    """GET /v1/overview: the daemon's and host's totals, the caller's sessions and executions."""
    return Call("GET", "/v1/overview", http_timeout=base_timeout, parse=decode_json)


def images(base_timeout: float) -> Call:
    """GET /v1/images: the daemon's image store."""
    return Call("GET", "/v1/images", http_timeout=base_timeout, parse=_key("images"))


#: Seconds a read of an event stream may wait: the daemon sends a keep-alive every 15 s.
EVENT_READ_TIMEOUT = 60.0


def events(types: Optional[Sequence[str]] = None) -> Call:
    """GET /v1/events: the monitoring events as SSE; ``types`` keeps only those event names."""
    q = _query(types=",".join(types) if types else None)
    return Call("GET", "/v1/events" + q, accept="text/event-stream", http_timeout=EVENT_READ_TIMEOUT)


def fs_watch(session_id: str, path: str, recursive: bool) -> Call:
    """GET .../fs/watch: changes under ``path`` in the box, as SSE."""
    return Call("GET", _fs(session_id, "watch", path, recursive="true" if recursive else None),
                accept="text/event-stream", http_timeout=EVENT_READ_TIMEOUT)


class EventDecoder:
    """A long-lived event stream (/v1/events, fs/watch), bytes in, ``(event, data)`` out: data is
    the decoded JSON (None when there is none); an "error" event is raised as its exception."""

    def __init__(self) -> None:
        self._parser = SSEParser()

    def feed(self, chunk: bytes) -> Iterator[Tuple[str, Any]]:
        for ev in self._parser.feed(chunk):
            try:
                data = json.loads(ev.data) if ev.data else None
            except ValueError:
                raise ProtocolError(f"SSE event {ev.event!r} carries data that is not JSON: "
                                    f"{ev.data[:200]!r}") from None
            if ev.event == "error":
                raise error_from_body(data)
            yield ev.event, data


def execution_id(execution: Any) -> str:
    """The id of a handle, or the id itself (execute_async returned the bare id at first)."""
    return str(getattr(execution, "id", execution))
