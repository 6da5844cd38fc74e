"""The command that resumes an agent session from a result: ``claude --resume <id>`` in the
session's folder, ``codex resume <id>``, ``gemini --resume <id>``...

Each kind says how its agent resumes (``Resume`` in the registry, ``memdex.ingest``); the
document's key and metadata fill it in. Every result carries it as ``resume`` (``query.marks``,
for every door); `memdex show --resume` prints it. memdex never runs it.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memdex.errors import MemdexError
from memdex.ingest import traits_of
from memdex.query.marks import resume_commands
from memdex.store import db


class NothingToResume(MemdexError):
    "The document is no agent session its agent can resume"


def resume_of(conn: sqlite3.Connection, ref: int | str) -> dict[str, Any]:
    """The command that resumes the session ``ref`` names (any form `memdex show` takes), with
    the document's id, kind and title. Raises NothingToResume when there is none."""
    from memdex.query.documents import reference

    doc = conn.execute(db.query("document_get"), {"id": reference(conn, ref).id}).fetchone()
    command = resume_commands(conn, [doc["id"]]).get(doc["id"])
    if command is None:
        why = (
            "its log records no session id to resume"
            if traits_of(doc["kind"]).resume is not None
            else f"{doc['kind']} documents are no agent sessions"
        )
        raise NothingToResume(f"Nothing resumes document {doc['id']} ({doc['title']}): {why}.")
    return {"id": doc["id"], "kind": doc["kind"], "title": doc["title"], **command}
