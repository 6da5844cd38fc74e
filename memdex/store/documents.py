"""Read one indexed document, or some of its lines, under a token budget.

``memdex show`` and the MCP tool ``get_document`` use it after a search: a result's
``line_start``/``line_end`` say where to read. A document that is its whole file (its kind's
``one_document_per_file``: memory, note, serena) is read from the file, so line numbers are
the file's own; the file must still lie inside an indexed root (``paths``). A conversation
is read from the index -- its chunks, one after another, each headed by its messages --
since an export file holds many conversations.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memdex.errors import InvalidParameter, MemdexError
from memdex.ingest import traits_of
from memdex.models import est_tokens
from memdex.store import db
from memdex.store.paths import open_inside, roots


class DocumentNotFound(MemdexError):
    "No document has that id, path or key"


def resolve(conn: sqlite3.Connection, ref: int | str) -> int:
    "The id of the document ``ref`` names: an id, a source file's path, or a natural key."
    if isinstance(ref, int) or (isinstance(ref, str) and ref.strip().isdigit()):
        doc_id = int(ref)
        if conn.execute(db.query("document_get"), {"id": doc_id}).fetchone() is None:
            raise DocumentNotFound(f"No document has id {doc_id}: take ids from search results.")
        return doc_id
    rows = conn.execute(db.query("document_refs"), {"ref": ref}).fetchall()
    if not rows:
        raise DocumentNotFound(
            f"No document has the path or key {ref!r}: give an id or a path from search results."
        )
    if len(rows) > 1 and rows[0]["path"] == ref and rows[1]["path"] == ref:
        listed = ", ".join(f"{r['id']} ({r['title']})" for r in rows[:10])
        count = f"{len(rows)}+" if len(rows) == 20 else str(len(rows))
        raise InvalidParameter(f"{ref} holds {count} documents; give one id: {listed}")
    return int(rows[0]["id"])


def get_document(
    conn: sqlite3.Connection,
    ref: int | str,
    *,
    line_start: int | None = None,
    line_end: int | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """A document's text, or lines ``line_start``-``line_end`` of it (1-based, inclusive),
    cut at a line boundary before ``max_tokens``; ``next_line`` says where to go on."""
    for name, value in (("line_start", line_start), ("line_end", line_end), ("max_tokens", max_tokens)):
        if value is not None and value < 1:
            raise InvalidParameter(f"{name} must be 1 or more, not {value}.")
    if line_start is not None and line_end is not None and line_end < line_start:
        raise InvalidParameter(f"line_end {line_end} is before line_start {line_start}.")
    doc = conn.execute(db.query("document_get"), {"id": resolve(conn, ref)}).fetchone()
    text, source = _text(conn, doc)
    lines = text.splitlines(keepends=True)
    first = line_start or 1
    if first > max(len(lines), 1):
        raise InvalidParameter(
            f"line_start {first} is past the end: document {doc['id']} has {len(lines)} lines."
        )
    last = min(line_end or len(lines), len(lines))
    chosen = lines[first - 1 : last]
    truncated = False
    if max_tokens is not None:
        kept: list[str] = []
        used = 0
        for line in chosen:
            size = len(line.encode("utf-8"))
            if kept and est_tokens(used + size) > max_tokens:
                truncated = True
                break
            kept.append(line)
            used += size
        if kept and est_tokens(used) > max_tokens:  # one line alone is over the budget: cut it
            data = "".join(kept).encode("utf-8")[: max_tokens * 4]
            kept, truncated = [data.decode("utf-8", "ignore")], True
        chosen = kept
    body = "".join(chosen)
    shown_last = first + len(chosen) - 1 if chosen else first - 1
    return {
        "id": doc["id"],
        "key": doc["key"],
        "title": doc["title"],
        "kind": doc["kind"],
        "path": doc["path"],
        "read_from": source,
        "line_start": first,
        "line_end": shown_last,
        "total_lines": len(lines),
        "size_bytes": len(body.encode("utf-8")),
        "est_tokens": est_tokens(len(body.encode("utf-8"))),
        "truncated": truncated,
        "next_line": shown_last + 1 if shown_last < last else None,
        "text": body,
    }


def _text(conn: sqlite3.Connection, doc: sqlite3.Row) -> tuple[str, str]:
    "(text, where it was read: file | index)."
    if traits_of(doc["kind"]).one_document_per_file:
        try:
            with open_inside(doc["path"], roots(conn)) as f:  # OutsideRoots if it resolves elsewhere
                return f.read().decode("utf-8", "replace"), "file"
        except OSError:
            pass  # gone or unreadable since it was indexed: the index still has its text
    chunks = conn.execute(db.query("hit_chunks"), {"ids": json.dumps([doc["id"]])}).fetchall()
    parts = []
    for c in chunks:
        meta = json.loads(c["meta"] or "{}")
        if "msg_start" in meta:
            parts.append(f"--- messages {meta['msg_start'] + 1}-{meta['msg_end'] + 1} ---\n{c['text']}\n")
        else:
            parts.append(c["text"].rstrip("\n") + "\n")
    return "\n".join(parts), "index"
