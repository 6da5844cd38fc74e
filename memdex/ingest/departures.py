"""Files that left their root: deleted (their documents kept, or dropped) or moved.

Agents delete their own session logs (Claude Code after 30 days, by ``cleanupPeriodDays``);
the index need not forget them too. A root keeps a deleted file's documents when it says so
(``memdex index --keep-deleted``, remembered in ``roots.keep_deleted``) or, when it says
nothing, when the file is of a session-log kind (``KindTraits.session_log``, declared in the
registry). A kept file keeps its ``files`` row, documents, chunks and full-text entries; the
row is marked ``deleted_at`` (when memdex noticed), which search results, `memdex show` and
`memdex status` report. A file that comes back at the same path is indexed as any changed
file, and the mark goes. ``purge_deleted`` (`memdex roots purge-deleted`) drops them.

A file gone from one path whose bytes arrived at another was moved, not deleted: its
documents go, as before, since the new path's are the same. Moved means: a file new to this
run has the same SHA-256, or the same size, modification time and name (a rename keeps
them; a session log read on as it grew has no SHA-256 of its whole bytes stored); or the
same SHA-256 is indexed at a path that is still there (a move seen in an earlier batch).
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from memdex.errors import MemdexError
from memdex.ingest import traits_of
from memdex.ingest.walk import Found
from memdex.ingest.writer import StoredFile, Writer
from memdex.store import db


def keeps(root_keeps: bool | None, kind: str) -> bool:
    "Does a root keep a deleted file of this kind? Its own setting, else the kind's default."
    return traits_of(kind).session_log if root_keeps is None else root_keeps


class Arrivals:
    "The files new to one run, by what would show one of them is a file that moved."

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.shas: set[str] = set()
        self.stats: set[tuple[int, int, str]] = set()

    def add(self, found: Found, sha: str) -> None:
        self.shas.add(sha)
        self.stats.add((found.size, found.mtime_ns, found.path.name))

    def moved(self, stored: StoredFile) -> bool:
        "Is this gone file somewhere else now (see the module's doc)?"
        if stored.sha256 in self.shas:
            return True
        if (stored.size, stored.mtime_ns, os.path.basename(stored.path)) in self.stats:
            return True
        found = self.conn.execute(db.query("file_with_content"), {"sha256": stored.sha256, "id": stored.id})
        return found.fetchone() is not None


def kept_deleted(conn: sqlite3.Connection, root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The documents kept for deleted files, of every root or of ``root`` (a path): the root,
    counts of files, documents and chunks, and each file with when it was noticed deleted.
    Raises MemdexError when ``root`` is no root."""
    from memdex.ingest.roots import find_root

    root_row = None
    if root is not None:
        root_row = find_root(conn, root)
        if root_row is None:
            raise MemdexError(
                f"{os.path.abspath(root)} is not a root of this index; `memdex roots` lists them."
            )
    params = {"root_id": root_row["id"] if root_row else None}
    files = [dict(r) for r in conn.execute(db.query("deleted_files"), params)]
    return {
        "root": root_row["path"] if root_row else None,
        "files": len(files),
        "documents": sum(f["documents"] for f in files),
        "chunks": sum(f["chunks"] for f in files),
        "deleted": [{k: f[k] for k in ("path", "deleted_at", "documents")} for f in files],
        "ids": [f["id"] for f in files],
    }


def purge_deleted(conn: sqlite3.Connection, root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Drop the documents kept for deleted files (``kept_deleted``, which it returns), with
    their chunks, full-text entries and topics, in short transactions of whole files. The
    caller holds the writer lock (``watch.handoff``)."""
    about = kept_deleted(conn, root)
    writer = Writer(conn)
    try:
        for file_id in about.pop("ids"):
            writer.delete(file_id)
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    return about
