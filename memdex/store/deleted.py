"""Documents kept after their file was deleted, as readers see them: the mark on results.

Ingest keeps them (``ingest/departures.py``) with their file's ``deleted_at``; a search, an
answer's sources and the MCP tools show it as ``source_deleted``, the date memdex noticed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from memdex.models import Hit
from memdex.store import db


def mark_hits(conn: sqlite3.Connection, hits: Iterable[Hit]) -> None:
    "Set ``source_deleted`` on the hits whose document's file is gone (one query for all)."
    hits = list(hits)
    if not hits:
        return
    ids = json.dumps(sorted({h.id for h in hits}))
    gone = {r["id"]: r["deleted_at"] for r in conn.execute(db.query("documents_deleted"), {"ids": ids})}
    for hit in hits:
        hit.source_deleted = gone.get(hit.id)
