"""Which files memdex may read on request: those inside the roots it was given.

``--retrieve`` and ``get_document`` read files named by the index. A file can change after
it was indexed -- replaced by a symlink to ``~/.ssh``, say -- so each path is resolved
(symlinks and ``..``) at the moment of reading and must still lie inside an indexed root.
Checking a path and then opening it leaves a moment in which it can be swapped, so
:func:`open_inside` checks the file it actually opened.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import sys
from typing import BinaryIO

from memdex.errors import InvalidParameter
from memdex.store import db


class OutsideRoots(InvalidParameter):
    "A file named by the index now resolves outside every indexed root"

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} now resolves outside the indexed roots (a symlink?); memdex will not read it."
        )


def roots(conn: sqlite3.Connection) -> list[str]:
    "The indexed roots, resolved."
    return [os.path.realpath(r["path"]) for r in conn.execute(db.query("root_paths"))]


def inside(path: str, root_paths: list[str]) -> bool:
    "Is ``path``, resolved, one of the roots or inside one?"
    return _within(_resolved(path), root_paths)


def _resolved(path: str) -> str:
    """``os.path.realpath``, or "" (inside nothing) when the path changes while it is resolved:
    a link read as one by lstat and gone by readlink raises instead of resolving."""
    try:
        return os.path.realpath(path)
    except OSError:
        return ""


def _within(real: str, root_paths: list[str]) -> bool:
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in root_paths)


def open_inside(path: str, root_paths: list[str]) -> BinaryIO:
    """Open ``path`` for reading if it lies inside a root; raise OutsideRoots if not.

    The path is resolved and opened without following a symlink in its last part, and then
    the descriptor's own path (Linux ``/proc/self/fd``, macOS ``F_GETPATH``) is checked: a
    file or folder swapped for a symlink between the check and the open is caught either
    way. OSError as ``open`` raises it for a file that is gone or unreadable.
    """
    real = _resolved(path)
    if not _within(real, root_paths):
        raise OutsideRoots(path)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(real):  # swapped for a symlink since it was resolved
            raise OutsideRoots(path) from exc
        raise
    try:
        opened = _path_of(fd)
        if opened is None:  # no way to ask: it must at least still be the file resolved above
            st, now = os.fstat(fd), os.stat(real, follow_symlinks=False)
            opened = real if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino) else ""
        if not _within(opened, root_paths):
            raise OutsideRoots(path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _path_of(fd: int) -> str | None:
    "The path the kernel says an open descriptor has, where the platform tells."
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
    get_path = getattr(fcntl, "F_GETPATH", None)  # macOS
    if get_path is not None:
        try:
            raw = fcntl.fcntl(fd, get_path, b"\0" * 1024)
            return os.fsdecode(raw.split(b"\0", 1)[0])
        except OSError:
            return None
    return None
