"""The command that resumes an agent session from a result: ``claude --resume <id>`` in the
session's folder, ``codex resume <id>``, ``gemini --resume <id>``...

Each kind says how its agent resumes (``Resume`` in the registry, ``memdex.ingest``); the
document's key and metadata fill it in. Results carry it as ``resume`` (``--json``, MCP) and
`memdex show --resume` prints it. memdex never runs it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from memdex.errors import MemdexError
from memdex.ingest import resume_command, traits_of
from memdex.models import Hit
from memdex.store import db


class NothingToResume(MemdexError):
    "The document is no agent session its agent can resume"


def _commands(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, dict[str, Any] | None]:
    rows = conn.execute(db.query("documents_resume"), {"ids": json.dumps(sorted(set(ids)))})
    return {r["id"]: resume_command(r["kind"], r["key"], json.loads(r["meta"] or "{}")) for r in rows}


def attach(conn: sqlite3.Connection, hits: Iterable[Hit]) -> None:
    "Set ``resume`` on the hits whose kind's agent resumes sessions (one query for all)."
    wanted = [h for h in hits if traits_of(h.kind).resume is not None]
    if wanted:
        commands = _commands(conn, (h.id for h in wanted))
        for hit in wanted:
            hit.resume = commands.get(hit.id)


def resume_of(conn: sqlite3.Connection, ref: int | str) -> dict[str, Any]:
    """The command that resumes the session ``ref`` names (any form `memdex show` takes), with
    the document's id, kind and title. Raises NothingToResume when there is none."""
    from memdex.store.documents import reference

    doc = conn.execute(db.query("document_get"), {"id": reference(conn, ref).id}).fetchone()
    command = _commands(conn, [doc["id"]]).get(doc["id"])
    if command is None:
        why = (
            "its log records no session id to resume"
            if traits_of(doc["kind"]).resume is not None
            else f"{doc['kind']} documents are no agent sessions"
        )
        raise NothingToResume(f"Nothing resumes document {doc['id']} ({doc['title']}): {why}.")
    return {"id": doc["id"], "kind": doc["kind"], "title": doc["title"], **command}
