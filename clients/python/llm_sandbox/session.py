"""A session: one sandbox kept for several executions (the requirements' "sub-agent").

Files written under the policy's tmpfs survive between executions, and with language python the
interpreter keeps its variables. A session holds a box on the daemon until it is closed or its
idle timeout passes, so use it as a context manager and it is closed even when the code fails.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _calls, _workspace
from .errors import NotFound

if TYPE_CHECKING:
    from .client import SandboxClient


class SessionBase:
    """What a session knows of itself, shared by :class:`Session` and its asyncio twin."""

    def __init__(self, client: Any, info: Dict[str, Any]) -> None:
        self._client = client
        self._info = info
        self.session_id: str = str(info["session_id"])
        self.closed = False

    @property
    def id(self) -> str:
        return self.session_id

    @property
    def policy(self) -> Optional[str]:
        return self._info.get("policy")

    @property
    def language(self) -> Optional[str]:
        return self._info.get("language")


class Session(SessionBase):
    """Returned by :meth:`SandboxClient.session`; the box exists once this object does."""

    _client: "SandboxClient"

    def execute(self, code: Optional[str] = None, *, stdin: Optional[str] = None, timeout: Optional[float] = None,
                env: Optional[Mapping[str, str]] = None, command: Optional[Sequence[str]] = None,
                collect: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """Runs code (or ``command``, a program and its arguments) in this session's box; returns
        the ExecResult dict (see SandboxClient.execute), with result["collected"] when ``collect``
        names files. Raises Conflict when another execution of this session is still running."""
        return self._client._run(_calls.session_execute(
            self.session_id, code, stdin=stdin, timeout=timeout, env=env,
            base_timeout=self._client.timeout,
            policy_timeout=self._client._limit(self.policy, timeout), command=command, collect=collect))

    def upload_dir(self, local: str, remote: str, *, ignore: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        """Sends the directory ``local`` into the box under ``remote`` (e.g. /tmp/work) as one
        tar.gz; returns {"path", "format", "files", "dirs", "bytes"}. ``ignore``: glob patterns of
        names left out (default: .git, node_modules, __pycache__, .venv, ...). A symbolic link
        inside the tree is sent as the file it points to; a link out of it is left out."""
        return self.upload_archive(remote, _workspace.pack_dir(local, ignore))

    def upload_archive(self, remote: str, archive: bytes) -> Dict[str, Any]:
        """Unpacks a tar, tar.gz, tar.zst or zip (bytes) in the box under ``remote``."""
        return self._client._run(_calls.upload_archive(self.session_id, remote, archive, self._client.timeout))

    def download_dir(self, remote: str, local: str) -> List[str]:
        """Fetches the directory ``remote`` of the box into ``local`` (created); returns the files
        written. Links and special files in the box are not sent (docs/api.md "Files out")."""
        data = self._client._run(_calls.download_archive(self.session_id, remote, self._client.timeout))
        return _workspace.unpack_tar(data, local)

    def upload(self, path: str, data: Union[bytes, str]) -> Dict[str, Any]:
        """Writes a file into the box (str is encoded as UTF-8); returns {"path", "size"}.
        The path must be absolute and inside one of the policy's tmpfs mounts, e.g. /tmp/x."""
        return self._client._run(_calls.upload(self.session_id, path, data, self._client.timeout))

    def download(self, path: str) -> bytes:
        """Reads a file from the box, byte for byte. Raises NotFound when it is absent."""
        return self._client._run(_calls.download(self.session_id, path, self._client.timeout))

    def list_dir(self, path: str, *, limit: Optional[int] = None) -> Dict[str, Any]:
        """A directory's entries by name (at most ``limit``, 1-2000): {"path", "entries": [{"name",
        "type", "size", "mode", "mtime_ms", "target"?}], "truncated", "total", "message"?}. Carried
        out in the box by init for any language; links are described, never followed."""
        return self._client._run(_calls.fs_list(self.session_id, path, limit, self._client.timeout))

    def stat(self, path: str) -> Dict[str, Any]:
        """One entry ({"name", "path", "type", "size", "mode", "mtime_ms", "target"?}); NotFound when absent."""
        return self._client._run(_calls.fs_stat(self.session_id, path, self._client.timeout))

    def mkdir(self, path: str, *, parents: bool = False) -> Dict[str, Any]:
        """Makes a directory inside the policy's writable dirs (``parents``: like mkdir -p)."""
        return self._client._run(_calls.fs_mkdir(self.session_id, path, parents, self._client.timeout))

    def rename(self, src: str, dst: str) -> Dict[str, Any]:
        """Renames (moves) ``src`` to ``dst``, both inside the policy's writable dirs."""
        return self._client._run(_calls.fs_rename(self.session_id, src, dst, self._client.timeout))

    def remove(self, path: str, *, recursive: bool = False) -> Dict[str, Any]:
        """Removes a file, a link, or a directory (empty, or with ``recursive``)."""
        return self._client._run(_calls.fs_remove(self.session_id, path, recursive, self._client.timeout))

    def changes(self, path: Optional[str] = None) -> Dict[str, Any]:
        """What changed under ``path`` (default: every writable dir) since the session was created
        or last uploaded to, as {"root", "files", "patch", ...}: the patch applies with `git apply`.
        The session must be created with ``changes=True``."""
        return self._client._run(_calls.session_changes(self.session_id, path, self._client.timeout))

    def reset(self) -> Dict[str, Any]:
        """Returns the session to its state right after creation (or the last snapshot()): a
        fresh interpreter with the setup's imports, the tmpfs files put back, no process of the
        episode left. Returns the session info with ``reset`` ({"mode", "duration_ms", ...}).
        Raises Conflict while an execution runs."""
        self._info = self._client._run(_calls.session_reset(self.session_id, self._client.timeout))
        return self._info

    def snapshot(self) -> Dict[str, Any]:
        """Makes the state now (variables, imports, tmpfs files) the one reset() returns to.
        Python sessions only."""
        self._info = self._client._run(_calls.session_snapshot(self.session_id, self._client.timeout))
        return self._info

    def fork(self, count: int = 1) -> "_calls.ForkedSessions":
        """New sessions, each in its own box, starting with this session's globals (those that
        pickle), imported modules and tmpfs files; no process is carried. Returns a list of the
        children whose ``.report`` is the daemon's account of what was and was not carried
        (docs/api.md "Fork"); each child's ``fork_report`` is the same dict."""
        answer = self._client._run(_calls.session_fork(self.session_id, count, self._client.timeout))
        children = [Session(self._client, info) for info in answer["sessions"]]
        for c in children:
            c.fork_report = answer.get("fork")
        return _calls.ForkedSessions(children, answer.get("fork"))

    def pause(self) -> Dict[str, Any]:
        """Saves the session's state (the globals that pickle, its modules, the files of its
        writable paths) in the daemon and ends its box, freeing its memory; the id stays. Returns
        {"session_id", "state": "paused", "pause": {"bytes", "duration_ms", "not_kept"}}. Python
        sessions only; :meth:`resume` (or ``client.resume_session(id)``, even from a later daemon
        run) brings it back."""
        answer = self._client._run(_calls.session_pause(self.session_id, self._client.timeout))
        self._info = dict(self._info, state="paused")
        return answer

    def resume(self) -> Dict[str, Any]:
        """Rebuilds a paused session, same id, in a new box; returns the session info with
        "resume" (what was carried and not). Processes never survive a pause."""
        self._info = self._client._run(_calls.session_resume(self.session_id, self._client.timeout))
        return self._info

    def watch(self, path: str, *, recursive: bool = False) -> Iterator[Tuple[str, Any]]:
        """Follows changes under ``path`` in the box: yields ``(event, data)`` as they happen
        (docs/api.md "File-system API"); ``break`` closes the connection."""
        return self._client._follow(_calls.fs_watch(self.session_id, path, recursive))

    def info(self) -> Dict[str, Any]:
        """The session's current state (executions, state, expires_at...)."""
        self._info = self._client._run(_calls.session_info(self.session_id, self._client.timeout))
        return self._info

    def close(self) -> None:
        """Deletes the session and its box. Idempotent: a session the daemon already expired
        counts as closed."""
        if self.closed:
            return
        try:
            self._client._run(_calls.delete_session(self.session_id, self._client.timeout))
        except NotFound:
            pass
        self.closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Session(id={self.session_id!r}, policy={self.policy!r}, closed={self.closed})"
