"""What the index holds: roots, counts, sizes, kinds, and the files that could not be indexed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from . import db


def status(conn: sqlite3.Connection, db_path: Path) -> dict[str, Any]:
    "A JSON-ready description of the index (``memdex status``)."
    import sqlite_utils  # only status needs it; kept off the search path

    counts = dict(conn.execute(db.query("status_counts")).fetchone())
    database = sqlite_utils.Database(conn)
    return {
        "database": {
            "path": str(db_path),
            "size_bytes": _db_size(db_path),
            "schema_version": db.schema_version(conn),
            "sqlite_version": sqlite3.sqlite_version,
            "fts_tables": {t: database.table(t).detect_fts() for t in ("documents", "chunks")},
        },
        "counts": counts,
        "kinds": [dict(r) for r in conn.execute(db.query("status_kinds"))],
        "roots": [dict(r) for r in conn.execute(db.query("roots_all"))],
        "errors": [dict(r) for r in conn.execute(db.query("status_errors"))],
    }


def _db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
