"""An incremental parser for server-sent events (the streaming form of POST /v1/execute).

Bytes arrive in arbitrary pieces (TCP segments, HTTP chunks), so the parser keeps the unfinished
line and the unfinished event between calls. It follows the WHATWG rules the daemon relies on:
lines end in LF, CRLF or CR; ``field: value`` with one optional space after the colon; several
``data`` lines join with LF; a blank line dispatches; lines starting with ``:`` are comments
(keep-alives). Sync and async clients share it, so both decode a stream the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class SSEEvent:
    """One dispatched event: its name (``"message"`` when the server gave none) and raw data."""
    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None


@dataclass
class SSEParser:
    """Feed bytes with :meth:`feed`; it returns the events completed by those bytes."""
    _buffer: bytes = b""
    _event: Optional[str] = None
    _data: List[str] = field(default_factory=list)
    _has_data: bool = False
    _id: Optional[str] = None
    _retry: Optional[int] = None
    _pending_cr: bool = False

    def feed(self, chunk: bytes) -> List[SSEEvent]:
        out: List[SSEEvent] = []
        if not chunk:
            return out
        buf = self._buffer + chunk
        # A CR at the end of the previous piece may be the first half of a CRLF.
        if self._pending_cr and buf.startswith(b"\n"):
            buf = buf[1:]
        self._pending_cr = False
        start = 0
        i = 0
        n = len(buf)
        while i < n:
            c = buf[i]
            if c == 0x0A or c == 0x0D:  # LF or CR
                self._line(buf[start:i], out)
                if c == 0x0D:
                    if i + 1 < n:
                        if buf[i + 1] == 0x0A:
                            i += 1
                    else:
                        self._pending_cr = True
                start = i + 1
            i += 1
        self._buffer = buf[start:]
        return out

    def close(self) -> List[SSEEvent]:
        """End of stream: per the spec an unterminated event is dropped, but a final complete
        line without its blank line is still dispatched, since a server closing right after its
        last event should not lose it."""
        out: List[SSEEvent] = []
        if self._buffer:
            self._line(self._buffer, out)
            self._buffer = b""
        if self._has_data or self._event is not None:
            self._dispatch(out)
        return out

    def _line(self, raw: bytes, out: List[SSEEvent]) -> None:
        line = raw.decode("utf-8", "replace")
        if line == "":
            self._dispatch(out)
            return
        if line.startswith(":"):
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        # Other fields are ignored, as the spec says.

    def _dispatch(self, out: List[SSEEvent]) -> None:
        if self._has_data:
            out.append(SSEEvent(event=self._event or "message", data="\n".join(self._data),
                                id=self._id, retry=self._retry))
        self._event = None
        self._data = []
        self._has_data = False
