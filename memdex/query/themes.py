"""What a list of documents is about: the tags, topics, namespaces and platforms most of them
share, each with how many of them have it.

A period's listing shows them above its results ("what this time was about"); every other
result list shows the same of its shown documents as "Patterns noticed"
(:func:`patterns_noticed`).
One named query (``schema/queries/themes.sql``) counts them, whatever the corpus size.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memdex.models import Hit
from memdex.store import db

MAX_THEMES = 10


@dataclass(frozen=True)
class Theme:
    "A term several of the documents share, and how many do."

    term: str
    count: int
    kind: str  # tag | topic | namespace | platform

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.term, "count": self.count, "kind": self.kind}


def themes(conn: sqlite3.Connection, document_ids: Iterable[int], limit: int = MAX_THEMES) -> list[Theme]:
    """The ``limit`` terms most of these documents share, most shared first. A term counts
    once per document, as a tag, a topic, a namespace or a platform, and its ``kind`` is the
    one most of them have it as. Of two or more documents, a term only one has is no theme;
    a single document's themes are its own terms."""
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        return []
    params = {"ids": json.dumps(ids), "min_count": 2 if len(ids) > 1 else 1, "limit": limit}
    return [Theme(r["term"], r["count"], r["kind"]) for r in conn.execute(db.query("themes"), params)]


def patterns_noticed(conn: sqlite3.Connection, hits: list[Hit]) -> list[dict[str, Any]]:
    """What two or more of the shown results' documents share, each with ``of``: how many
    documents were shown. Fewer than two documents share nothing: an empty list."""
    ids = list(dict.fromkeys(h.id for h in hits))
    if len(ids) < 2:
        return []
    return [{**t.to_dict(), "of": len(ids)} for t in themes(conn, ids)]
