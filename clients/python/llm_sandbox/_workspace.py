"""Directories to and from a box: a local tree packed as one tar.gz (``upload_dir``, an inline
``archive_base64`` file entry) and a tar from the daemon unpacked safely (``download_dir``).

The daemon refuses symbolic links in archives (docs/api.md "Archives"), so packing sends a link
whose target lies inside the tree as the file it points to and leaves every other link out.
Unpacking refuses what the daemon's reader refuses: absolute names, "..", links, special files.
"""
from __future__ import annotations

import base64
import fnmatch
import io
import os
import tarfile
from typing import Dict, Iterable, List, Optional, Sequence

#: Left out of ``upload_dir`` unless ``ignore`` is given: version control, dependency and cache
#: directories that a box should install or rebuild itself.
DEFAULT_IGNORE = (".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                  ".mypy_cache", ".pytest_cache", ".tox", "*.pyc")


def _ignored(rel: str, name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p) for p in patterns)


def pack_dir(local: str, ignore: Optional[Iterable[str]] = None) -> bytes:
    """The tree under ``local`` as tar.gz bytes, names relative to it. ``ignore``: glob patterns
    matched against each entry's name and its path relative to ``local`` (default DEFAULT_IGNORE)."""
    root = os.path.realpath(local)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"upload_dir: {local} is not a directory")
    patterns = list(DEFAULT_IGNORE if ignore is None else ignore)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            keep = []
            for d in sorted(dirnames):
                rel = d if rel_dir == "." else f"{rel_dir}/{d}"
                full = os.path.join(dirpath, d)
                if _ignored(rel, d, patterns) or os.path.islink(full):
                    continue  # a linked directory is not followed (it could leave the tree)
                keep.append(d)
                tar.addfile(_info(rel, tarfile.DIRTYPE, 0, 0o755))
            dirnames[:] = keep
            for f in sorted(filenames):
                rel = f if rel_dir == "." else f"{rel_dir}/{f}"
                full = os.path.join(dirpath, f)
                if _ignored(rel, f, patterns):
                    continue
                real = os.path.realpath(full)
                if os.path.islink(full) and not real.startswith(root + os.sep):
                    continue  # a link out of the tree: left out
                if not os.path.isfile(real):
                    continue  # FIFOs, sockets, devices
                with open(real, "rb") as fh:
                    data = fh.read()
                mode = 0o755 if os.stat(real).st_mode & 0o111 else 0o644
                tar.addfile(_info(rel, tarfile.REGTYPE, len(data), mode), io.BytesIO(data))
    return buf.getvalue()


def _info(name: str, kind: bytes, size: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode, info.mtime = kind, size, mode, 0
    return info


def archive_entry(remote: str, local: str, ignore: Optional[Iterable[str]] = None) -> Dict[str, str]:
    """A ``files`` entry for execute/batch that unpacks ``local`` under ``remote`` in the box."""
    return {"path": remote, "archive_base64": base64.b64encode(pack_dir(local, ignore)).decode("ascii")}


def unpack_tar(data: bytes, local: str) -> List[str]:
    """Writes the directories and regular files of the tar ``data`` under ``local`` (created);
    returns the files written. Absolute names, "..", links and special entries are refused."""
    root = os.path.realpath(local)
    os.makedirs(root, exist_ok=True)
    written: List[str] = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for m in tar:
            name = m.name.rstrip("/")
            parts = name.split("/")
            if not name or name.startswith("/") or ".." in parts:
                raise ValueError(f"download_dir: refused archive entry {m.name!r}: it would leave {local}")
            dest = os.path.join(root, *parts)
            if m.isdir():
                os.makedirs(dest, exist_ok=True)
            elif m.isfile():
                parent = os.path.dirname(dest)
                os.makedirs(parent, exist_ok=True)
                if os.path.realpath(parent) != parent:
                    raise ValueError(f"download_dir: refused archive entry {m.name!r}: a link on its way")
                src = tar.extractfile(m)
                assert src is not None
                if os.path.islink(dest):
                    os.unlink(dest)
                with open(dest, "wb") as out:
                    out.write(src.read())
                os.chmod(dest, 0o755 if m.mode & 0o111 else 0o644)
                written.append(dest)
            else:
                raise ValueError(f"download_dir: refused archive entry {m.name!r}: not a file or directory")
    return written
