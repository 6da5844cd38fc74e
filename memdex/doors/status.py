"""What the index holds: roots, counts, sizes, kinds, and the files that could not be indexed."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from memdex.store import db


def status(conn: sqlite3.Connection, db_path: Path) -> dict[str, Any]:
    "A JSON-ready description of the index (``memdex status``)."
    counts = dict(conn.execute(db.query("status_counts")).fetchone())
    errors = [dict(r) for r in conn.execute(db.query("status_errors"))]
    counts["errors"] = len(errors)  # files that could not be read and records skipped: the list below
    return {
        "database": {
            "path": str(db_path),
            "size_bytes": _db_size(db_path),
            "schema_version": db.schema_version(conn),
            "sqlite_version": sqlite3.sqlite_version,
            # the tables' full-text indexes; their content is read through views of tokens
            # (migration 0011), so detect_fts(), which looks for content="documents", cannot say
            "fts_tables": {"documents": "documents_fts", "chunks": "chunks_fts"},
        },
        "counts": counts,
        "kinds": [dict(r) for r in conn.execute(db.query("status_kinds"))],
        "roots": list_roots(conn),
        "errors": errors,
        "writer": writer_status(db_path),
        "server": server_status(db_path),
        "semantic": semantic_status(conn, counts["chunks"]),
        "secrets": secrets_status(conn),
    }


def secrets_status(conn: sqlite3.Connection) -> dict[str, Any]:
    """What was masked before it reached the index (memdex.secrets): how many secrets, in how
    many documents, by kind; and the roots that keep theirs (``--keep-secrets``)."""
    by_kind = [dict(r) for r in conn.execute(db.query("secrets_masked_by_kind"))]
    return {
        "masked": sum(k["masked"] for k in by_kind),
        "documents": conn.execute(db.query("secrets_masked_documents")).fetchone()[0],
        "by_kind": by_kind,
        "kept_by_roots": [r["path"] for r in conn.execute(db.query("roots_all")) if r["keep_secrets"]],
    }


def semantic_status(conn: sqlite3.Connection, chunks: int) -> dict[str, Any]:
    "Search by meaning: whether it can run here, and the models with how many chunks have vectors."
    from memdex.query.meaning import available

    models = [dict(r) for r in conn.execute(db.query("embedding_models"))]
    missing = available()
    return {"available": missing is None, "missing": missing, "chunks": chunks, "models": models}


def list_roots(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Each root (``memdex roots``, ``memdex status``): its ``kind`` (the one it was forced
    to or that claims it whole, else its files' one kind, else ``mixed``), ``holds`` (files
    per kind), files, documents, ``keep_deleted`` (true: it keeps the documents of files
    deleted from it; false: it drops them; null: not set, it keeps agents' session logs'),
    ``keep_secrets`` (true: its secrets are indexed as typed; false: masked),
    ``source_deleted`` (documents it keeps so), ``errors`` (problems recorded: files and
    records), and ``state``: ``ok``, ``errors`` (some could not be indexed) or ``missing``
    (the path is gone; its documents are kept until it returns or is forgotten).

    Also the counts its kind adds (``root_counts``): for a Serena root, how many memories no
    index row points at. Each count's query runs once, for all roots."""
    from memdex.ingest import traits_of  # status loads the parsers anyway (writer_status)
    from memdex.ingest.report import root_kind

    counted: dict[str, tuple[dict[str, int], dict[int, dict[str, Any]]]] = {}
    roots = []
    for r in conn.execute(db.query("roots_listing")).fetchall():
        root = dict(r)
        root["holds"] = json.loads(root["holds"] or "{}")
        root["keep_deleted"] = None if root["keep_deleted"] is None else bool(root["keep_deleted"])
        root["keep_secrets"] = bool(root["keep_secrets"])
        root["kind"] = root_kind(root["kind"], root["detected_kind"], sorted(root["holds"]))
        missing = not os.path.exists(root["path"])
        root["state"] = "missing" if missing else "errors" if root["errors"] else "ok"
        for name in traits_of(root["kind"]).root_counts:
            if name not in counted:
                cursor = conn.execute(db.query(name))
                fields = [c[0] for c in cursor.description if c[0] != "root_id"]
                by_root = {row["root_id"]: {f: row[f] for f in fields} for row in cursor}
                counted[name] = (dict.fromkeys(fields, 0), by_root)
            zero, by_root = counted[name]
            root.update(by_root.get(root["id"], zero))
        roots.append(root)
    return roots


def writer_status(db_path: Path) -> dict[str, Any]:
    """Who writes to the index now, and what the watcher last reported.

    The lock says whether a writer runs (a killed one holds nothing); the watcher's state
    file says what it was doing, and stays after it stops.
    """
    from memdex.store.lock import holder
    from memdex.watch.service import read_state

    current = holder(db_path)
    state = read_state(db_path)
    return {
        "running": current is not None,
        "role": current.get("role") if current else None,
        "pid": current.get("pid") if current else None,
        "since": current.get("since") if current else None,
        "watcher": state,
    }


def server_status(db_path: Path) -> dict[str, Any]:
    """Whether ``memdex serve`` answers for this index now, with what it says of itself (pid,
    socket, HTTP address, requests served), else what the last one wrote before it stopped."""
    from memdex.doors.serve.client import ping
    from memdex.doors.serve.state import read_state

    live = ping(str(db_path))
    return {"running": live is not None, **(live or read_state(db_path) or {})}


def _db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
