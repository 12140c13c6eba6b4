"""How long a policy lets a program run, so the client's HTTP wait outlasts the daemon's deadline.

A call that names no ``timeout`` runs under its policy's (``resources.timeout_ms`` of GET
/v1/policies/<name>), which may be longer than the client's own ``timeout``: waiting only that
long would give up while the daemon still runs the program, losing its result. The clients look
the policy's timeout up once, keep it for :data:`TTL` seconds (policies change rarely; a reload is
picked up after that), and wait at least that long plus ``_calls.TIMEOUT_MARGIN``.

Sans-IO like ``_calls``: the sync and asyncio clients run the :class:`Call` objects built here.
A lookup is not retried and a busy or unreachable daemon's answer is not remembered: the call
that needed it goes on with the client's own timeout (and its own retries), the next one asks
again.
"""
from __future__ import annotations

import threading
import time
from typing import Dict, Optional, Tuple
from urllib.parse import quote

from ._calls import Call, Response, decode_json

#: Seconds a looked-up policy timeout is trusted before it is asked for again.
TTL = 60.0
#: Stands for "the daemon's default policy" (a call with policy=None) in the cache.
DEFAULT = "\0default"


class PolicyTimeouts:
    """The cache: policy name -> its timeout in seconds (None when it could not be learned, e.g.
    an unknown policy or an older daemon; then the client's own timeout applies). Shared by the
    threads using one client."""

    def __init__(self, ttl: float = TTL) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._entries: Dict[str, Tuple[float, Optional[float]]] = {}

    def get(self, name: Optional[str]) -> Tuple[bool, Optional[float]]:
        """(known, seconds) for ``name``; known is False when it must be looked up."""
        with self._lock:
            entry = self._entries.get(name or DEFAULT)
        if entry is None or time.monotonic() - entry[0] > self.ttl:
            return False, None
        return True, entry[1]

    def put(self, name: Optional[str], seconds: Optional[float]) -> None:
        with self._lock:
            self._entries[name or DEFAULT] = (time.monotonic(), seconds)


def _timeout_of_detail(resp: Response) -> Optional[float]:
    detail = decode_json(resp)
    try:
        ms = detail["policy"]["resources"]["timeout_ms"]
    except (KeyError, TypeError):
        return None
    return ms / 1000.0 if isinstance(ms, (int, float)) and ms > 0 else None


def _default_name(resp: Response) -> Optional[str]:
    listing = decode_json(resp)
    policies = listing.get("policies") if isinstance(listing, dict) else None
    for p in policies or []:
        if isinstance(p, dict) and p.get("default") is True and isinstance(p.get("name"), str):
            return p["name"]
    return None


def timeout_call(name: str, base_timeout: float) -> Call:
    """GET /v1/policies/<name>, answered as the policy's timeout in seconds (or None)."""
    return Call("GET", f"/v1/policies/{quote(name, safe='')}", http_timeout=base_timeout,
                parse=_timeout_of_detail, retry=False)


def default_name_call(base_timeout: float) -> Call:
    """GET /v1/policies, answered as the name of the daemon's default policy (or None)."""
    return Call("GET", "/v1/policies", http_timeout=base_timeout, parse=_default_name, retry=False)
