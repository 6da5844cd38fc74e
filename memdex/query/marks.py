"""What a hit says of its source beside the match: whether its file was deleted
(``source_deleted``) and, for an agent's session, the command that resumes it (``resume``).

Every hit a search makes gets both here, once (``query.search``), whichever door asked: the
command line, a batch line, MCP, HTTP, Datasette, an answer's sources or the Python API.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from memdex.ingest import resume_command, traits_of
from memdex.models import Hit
from memdex.store import db
from memdex.store.deleted import mark_hits


def mark(conn: sqlite3.Connection, hits: Iterable[Hit]) -> None:
    "Set ``source_deleted`` and ``resume`` on the hits (a query for each, for all of them)."
    hits = list(hits)
    mark_hits(conn, hits)
    sessions = [h for h in hits if traits_of(h.kind).resume is not None]
    if sessions:
        commands = resume_commands(conn, (h.id for h in sessions))
        for hit in sessions:
            hit.resume = commands.get(hit.id)


def resume_commands(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, dict[str, Any] | None]:
    "The command that resumes each document's agent session, by id (None: its log records none)."
    rows = conn.execute(db.query("documents_resume"), {"ids": json.dumps(sorted(set(ids)))})
    return {r["id"]: resume_command(r["kind"], r["key"], json.loads(r["meta"] or "{}")) for r in rows}
