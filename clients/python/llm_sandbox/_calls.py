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
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union
from urllib.parse import quote

from .errors import ProtocolError, SandboxError, error_from_body
from .sse import SSEEvent

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


class StreamEvent(NamedTuple):
    """One event of a streamed execution. A tuple, so ``kind, data = event`` works.

    kind is ``"stdout"``/``"stderr"`` (data: str), ``"alert"`` (data: Event dict) or
    ``"result"`` (data: ExecResult dict, always the last one). Unknown event names from a newer
    daemon are passed through with their decoded JSON.
    """
    kind: str
    data: Any


def _json_body(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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
    if sandbox_timeout is None:
        return base
    return max(base, float(sandbox_timeout) + TIMEOUT_MARGIN)


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
        if "content_base64" in item:
            entry["content_base64"] = str(item["content_base64"])
        else:
            content = item.get("content", "")
            if isinstance(content, (bytes, bytearray, memoryview)):
                entry["content_base64"] = base64.b64encode(bytes(content)).decode("ascii")
            else:
                entry["content"] = str(content)
        out.append(entry)
    return out


def execute_body(code: str, *, policy: Optional[str], language: Optional[str] = None,
                 stdin: Optional[str] = None, timeout: Optional[float] = None,
                 memory: Union[str, int, None] = None, cpu: Union[str, float, None] = None,
                 env: Optional[Mapping[str, str]] = None, files: FilesArg = None) -> Dict[str, Any]:
    """The POST /v1/execute body; unset options are left out so the policy's values apply."""
    if not isinstance(code, str):
        raise TypeError(f"code must be a str, not {type(code).__name__}")
    body: Dict[str, Any] = {"code": code}
    if language is not None:
        body["language"] = language
    if policy is not None:
        body["policy"] = policy
    if stdin is not None:
        body["stdin"] = stdin
    if timeout is not None:
        body["timeout"] = timeout
    if memory is not None:
        body["memory"] = memory
    if cpu is not None:
        body["cpu"] = cpu
    if env is not None:
        body["env"] = {str(k): str(v) for k, v in env.items()}
    encoded = encode_files(files)
    if encoded is not None:
        body["files"] = encoded
    return body


def execute(body: Dict[str, Any], base_timeout: float) -> Call:
    return Call("POST", "/v1/execute", _json_body(body), "application/json",
                http_timeout=_http_timeout(base_timeout, body.get("timeout")), parse=decode_json)


def execute_stream(body: Dict[str, Any], base_timeout: float) -> Call:
    return Call("POST", "/v1/execute?stream=true", _json_body(body), "application/json",
                accept="text/event-stream",
                http_timeout=_http_timeout(base_timeout, body.get("timeout")), parse=None)


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
        return StreamEvent(ev.event, data["data"])
    return StreamEvent(ev.event, data)


def batch(tasks: Sequence[Union[str, Mapping[str, Any]]], *, policy: Optional[str],
          concurrency: Optional[int], base_timeout: float) -> Call:
    """POST /v1/batch. A task is code (str) or an execute body (dict); the client's default
    policy fills in where a task names none."""
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
    body: Dict[str, Any] = {"tasks": encoded}
    if concurrency is not None:
        body["concurrency"] = int(concurrency)
    # The batch answers once every task is done; give the HTTP wait room for the waves of tasks.
    longest = max([float(t.get("timeout") or base_timeout) for t in encoded] or [base_timeout])
    waves = math.ceil(len(encoded) / max(1, concurrency or 4)) if encoded else 1
    timeout = max(base_timeout, waves * (longest + TIMEOUT_MARGIN))
    return Call("POST", "/v1/batch", _json_body(body), "application/json", http_timeout=timeout,
                parse=_key("results"))


def batch_errors(results: Sequence[Any]) -> List[Optional[SandboxError]]:
    """For each batch entry, its typed exception if it failed, else None."""
    return [error_from_body(r) if isinstance(r, dict) and "error" in r and "exit_code" not in r
            else None for r in results]


def create_session(*, policy: Optional[str], language: Optional[str],
                   idle_timeout: Optional[float], max_lifetime: Optional[float],
                   base_timeout: float) -> Call:
    body: Dict[str, Any] = {}
    if policy is not None:
        body["policy"] = policy
    if language is not None:
        body["language"] = language
    if idle_timeout is not None:
        body["idle_timeout"] = idle_timeout
    if max_lifetime is not None:
        body["max_lifetime"] = max_lifetime
    return Call("POST", "/v1/sessions", _json_body(body), "application/json",
                http_timeout=base_timeout, parse=decode_json)


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


def session_execute(session_id: str, code: str, *, stdin: Optional[str],
                    timeout: Optional[float], env: Optional[Mapping[str, str]],
                    base_timeout: float) -> Call:
    body = execute_body(code, policy=None, stdin=stdin, timeout=timeout, env=env)
    return Call("POST", f"/v1/sessions/{_sid(session_id)}/execute", _json_body(body),
                "application/json", http_timeout=_http_timeout(base_timeout, timeout),
                parse=decode_json)


def _file_path(session_id: str, path: str) -> str:
    return f"/v1/sessions/{_sid(session_id)}/files?path={quote(path, safe='/')}"


def upload(session_id: str, path: str, data: Union[bytes, str], base_timeout: float) -> Call:
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return Call("PUT", _file_path(session_id, path), raw, "application/octet-stream",
                http_timeout=base_timeout, parse=decode_json)


def download(session_id: str, path: str, base_timeout: float) -> Call:
    return Call("GET", _file_path(session_id, path), accept="application/octet-stream",
                http_timeout=base_timeout, parse=_raw)


def policies(base_timeout: float) -> Call:
    return Call("GET", "/v1/policies", http_timeout=base_timeout, parse=_key("policies"))


def policy(name: str, base_timeout: float) -> Call:
    return Call("GET", f"/v1/policies/{quote(name, safe='')}", http_timeout=base_timeout,
                parse=decode_json)


def health(base_timeout: float) -> Call:
    return Call("GET", "/healthz", http_timeout=base_timeout, parse=decode_json)


def ready(base_timeout: float) -> Call:
    return Call("GET", "/readyz", http_timeout=base_timeout, parse=decode_json)
