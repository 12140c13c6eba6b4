"""The in-tree PEP 517 build backend of the llm-sandbox Python client: standard library only.

``pip install ./clients/python`` must work on a machine with no package index. A backend such as
setuptools would have to be fetched into pip's isolated build environment (``requires =
["setuptools>=61"]`` fails offline), and without ``wheel`` installed older pips cannot build at
all. This module needs nothing but the interpreter: it reads the ``[project]`` table of
pyproject.toml and writes the wheel (a zip with METADATA, WHEEL and RECORD, PEP 427) and the
sdist (a tar.gz with PKG-INFO) itself. pyproject.toml names it with ``backend-path``, so pip
imports it from the source tree.

Hooks: build_wheel, build_sdist, build_editable (PEP 660: a .pth file pointing at the source),
the three get_requires_for_* (nothing is required) and prepare_metadata_for_build_wheel/editable.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: The directory holding pyproject.toml: this file sits in its ``backend/`` subdirectory.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "llm_sandbox"
#: Package files shipped besides the .py modules (PEP 561 marker).
DATA_FILES = ("py.typed",)
#: What an sdist carries besides the package: enough to build the wheel from it again.
SDIST_EXTRA = ("pyproject.toml", "README.md", "backend/lsb_build.py")
WHEEL_TAG = "py3-none-any"


# --- pyproject.toml

def _parse_project_table(text: str) -> Dict[str, Any]:
    """The ``[project]`` table for Pythons without tomllib (3.9, 3.10): the subset this project's
    pyproject.toml uses, i.e. ``key = "string"`` and ``key = ["string", ...]`` (over several lines
    too). Anything else in the table is an error rather than a silently wrong METADATA."""
    out: Dict[str, Any] = {}
    in_project = False
    pending: Optional[Tuple[str, str]] = None  # a list value still open: (key, text so far)
    for raw in text.splitlines():
        line = _strip_comment(raw).strip()
        if pending is not None:
            key, acc = pending
            acc += " " + line
            if "]" in line:
                out[key] = _strings(acc, key)
                pending = None
            else:
                pending = (key, acc)
            continue
        if not line:
            continue
        if line.startswith("["):
            in_project = line == "[project]"
            continue
        if not in_project:
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", key):
            raise ValueError(f"pyproject.toml [project]: cannot read the line {raw!r}")
        if value.startswith("["):
            if "]" in value:
                out[key] = _strings(value, key)
            else:
                pending = (key, value)
        elif value.startswith('"') and value.endswith('"') and len(value) >= 2:
            out[key] = _unquote(value[1:-1])
        else:
            raise ValueError(f"pyproject.toml [project].{key}: only strings and lists of strings "
                             f"are understood without tomllib, got {value!r}")
    if pending is not None:
        raise ValueError(f"pyproject.toml [project].{pending[0]}: the list is never closed")
    return out


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` that is outside double quotes."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        elif ch == "#" and not quoted:
            return line[:i]
    return line


def _unquote(s: str) -> str:
    return s.replace('\\"', '"').replace("\\\\", "\\")


def _strings(value: str, key: str) -> List[str]:
    inner = value.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise ValueError(f"pyproject.toml [project].{key}: cannot read the list {value!r}")
    items = re.findall(r'"((?:[^"\\]|\\.)*)"', inner)
    leftover = re.sub(r'"((?:[^"\\]|\\.)*)"', "", inner[1:-1]).replace(",", "").strip()
    if leftover:
        raise ValueError(f"pyproject.toml [project].{key}: only lists of strings are understood "
                         f"without tomllib, got {value!r}")
    return [_unquote(i) for i in items]


def read_project(root: str = ROOT) -> Dict[str, Any]:
    """pyproject.toml's ``[project]`` table (tomllib where the interpreter has it)."""
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        return _parse_project_table(data.decode("utf-8"))
    return dict(tomllib.loads(data.decode("utf-8")).get("project", {}))


def read_version(root: str = ROOT) -> str:
    """``__version__`` of llm_sandbox/_version.py, the single place the version is kept."""
    with open(os.path.join(root, PACKAGE, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', f.read(), re.M)
    if not m:
        raise ValueError(f"{PACKAGE}/_version.py has no __version__ = \"...\" line")
    return m.group(1)


def metadata_text(root: str = ROOT) -> str:
    """The core metadata (METADATA / PKG-INFO, version 2.1) from the [project] table."""
    project = read_project(root)
    name = project["name"]
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {read_version(root)}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    for dep in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for c in project.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    readme = project.get("readme")
    body = ""
    if isinstance(readme, str):
        with open(os.path.join(root, readme), encoding="utf-8") as f:
            body = f.read()
        kind = "text/markdown" if readme.lower().endswith(".md") else "text/plain"
        lines.append(f"Description-Content-Type: {kind}")
    return "\n".join(lines) + "\n\n" + body


def _dist_name(root: str = ROOT) -> str:
    """The distribution name as file names spell it (PEP 427: runs of -_. become _)."""
    return re.sub(r"[-_.]+", "_", read_project(root)["name"]).lower()


# --- archives

def _epoch() -> float:
    """SOURCE_DATE_EPOCH when set, so two builds of one tree are byte-identical; else 1980-01-01
    (the earliest date a zip entry can carry)."""
    try:
        return max(float(os.environ["SOURCE_DATE_EPOCH"]), 315532800.0)
    except (KeyError, ValueError):
        return 315532800.0


def package_files(root: str = ROOT) -> List[str]:
    """The package's files, relative to ``root`` with "/" separators, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in filenames:
            if fn.endswith(".py") or fn in DATA_FILES:
                out.append(os.path.relpath(os.path.join(dirpath, fn), root).replace(os.sep, "/"))
    return sorted(out)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, entries: Sequence[Tuple[str, bytes]]) -> str:
    """A wheel with ``entries`` plus its dist-info (METADATA, WHEEL, RECORD); returns its name."""
    name, version = _dist_name(), read_version()
    dist_info = f"{name}-{version}.dist-info"
    wheel_meta = (f"Wheel-Version: 1.0\nGenerator: lsb_build\nRoot-Is-Purelib: true\n"
                  f"Tag: {WHEEL_TAG}\n")
    files = list(entries) + [(f"{dist_info}/METADATA", metadata_text().encode("utf-8")),
                             (f"{dist_info}/WHEEL", wheel_meta.encode("utf-8"))]
    record = "".join(_record_line(p, d) + "\n" for p, d in files) + f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode("utf-8")))
    filename = f"{name}-{version}-{WHEEL_TAG}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    date = time.gmtime(_epoch())[:6]
    tmp = os.path.join(wheel_directory, filename + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files:
            info = zipfile.ZipInfo(path, date_time=date)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    os.replace(tmp, os.path.join(wheel_directory, filename))  # never a half-written wheel
    return filename


def _read(rel: str) -> bytes:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


def _write_metadata_dir(metadata_directory: str) -> str:
    dist_info = f"{_dist_name()}-{read_version()}.dist-info"
    path = os.path.join(metadata_directory, dist_info)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata_text())
    return dist_info


# --- PEP 517 / PEP 660 hooks

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, Any]] = None) -> str:
    return _write_metadata_dir(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str,
                                        config_settings: Optional[Dict[str, Any]] = None) -> str:
    return _write_metadata_dir(metadata_directory)


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(p, _read(p)) for p in package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """A wheel whose only content is a .pth line adding the source tree to sys.path."""
    return _write_wheel(wheel_directory, [(f"__editable__.{_dist_name()}.pth",
                                           (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    base = f"{_dist_name()}-{read_version()}"
    members = [("PKG-INFO", metadata_text().encode("utf-8"))]
    members += [(p, _read(p)) for p in list(SDIST_EXTRA) + package_files()]
    filename = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    tmp = os.path.join(sdist_directory, filename + ".part")
    mtime = int(_epoch())
    with open(tmp, "wb") as raw:
        # gzip's own header carries a time too: fix it so the archive is reproducible.
        with gzip.GzipFile(filename=filename, mode="wb", fileobj=raw, mtime=mtime) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for path, data in members:
                    info = tarfile.TarInfo(f"{base}/{path}")
                    info.size, info.mtime, info.mode = len(data), mtime, 0o644
                    tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, os.path.join(sdist_directory, filename))
    return filename
