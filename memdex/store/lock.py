"""One writer per index: an advisory lock in a file beside the database.

The kernel drops an ``flock`` when its process ends, even by ``kill -9``, so a crashed writer
never leaves the index locked. The file also says who holds it (role, pid, since), for
``memdex status`` and for the message a refused writer prints.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from memdex.errors import DatabaseError, MemdexError
from memdex.utils import utc_stamp


def lock_path(db_path: Path) -> Path:
    return Path(f"{db_path}.lock")


class WriterBusy(MemdexError):
    "Another process is writing to this index"

    def __init__(self, db_path: Path, holder: dict[str, Any]) -> None:
        self.holder = holder
        who = "memdex watch" if holder.get("role") == "watch" else "memdex index"
        super().__init__(
            f"{who} (pid {holder.get('pid')}, since {holder.get('since')}) is already writing to "
            f"{db_path}; only one writer at a time. Wait for it to finish or stop it."
        )


class WriterLock:
    "``with WriterLock(db_path, 'index'):`` -- held for as long as the block runs."

    def __init__(self, db_path: Path, role: str) -> None:
        self.db_path = db_path
        self.path = lock_path(db_path)
        self.role = role
        self.fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a read-only folder or disk: nothing can be written there
            raise DatabaseError(
                f"Cannot write to the index at {self.db_path}: its lock file {self.path} cannot be "
                f"created ({exc.strerror or exc}). Check the permissions of that folder; searching "
                "needs only read access."
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise WriterBusy(self.db_path, holder(self.db_path) or {}) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"role": self.role, "pid": os.getpid(), "since": utc_stamp()}).encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder(db_path: Path) -> dict[str, Any] | None:
    "Who holds the writer lock of this index (role, pid, since), or None if nobody does."
    path = lock_path(db_path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 4096).decode("utf-8", errors="replace")
            try:
                info = json.loads(text)
            except json.JSONDecodeError:
                info = {}  # caught between the holder's lock and its note of who it is
            return info if isinstance(info, dict) else {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
