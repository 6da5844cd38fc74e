"""Read one indexed document, or some of its lines, under a token budget.

``memdex show`` and the MCP tool ``get_document`` use it after a search: a result's
``line_start``/``line_end`` say where to read. A document that is its whole file (its kind's
``one_document_per_file``: memory, note, serena) is read from the file, so line numbers are
the file's own; the file must still lie inside an indexed root (``paths``). A conversation
is read from the index -- its chunks, one after another, each headed by its messages --
since an export file holds many conversations.

Both doors name a document with :func:`reference`, which takes whatever a search result
printed: an id, a key (``chat_id``), a source file's path -- absolute, relative to the current
folder, through a symlink or resolved past one -- with ``:12-30`` (those lines) or `` (messages
3-7)`` (a conversation's ``location``), or an archive's condensed chunk file. A file that holds
many documents (a chat export) names one as ``path#key``, as its results' locations print it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from memdex.errors import InvalidParameter, MemdexError
from memdex.ingest import traits_of
from memdex.models import est_tokens
from memdex.secrets import mask
from memdex.store import db
from memdex.store.paths import open_inside, roots


class DocumentNotFound(MemdexError):
    "No document has that id, path or key"


# What a result's ``location`` adds to a path: lines of a file, messages of a conversation.
_LINES = re.compile(r"^(?P<base>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_MESSAGES = re.compile(r"^(?P<base>.+?) \(messages (?P<start>\d+)-(?P<end>\d+)\)$")


@dataclass(frozen=True)
class Reference:
    "A document named by a reference, and the part of it the reference points at, if any."

    id: int
    line_start: int | None = None
    line_end: int | None = None
    messages: tuple[int, int] | None = None  # 1-based, inclusive, as a location prints them
    chunk: int | None = None  # the chunk an archive's chunk file holds


MAX_ID = 2**63 - 1  # SQLite's largest integer


def reference(conn: sqlite3.Connection, ref: int | str) -> Reference:
    """The document ``ref`` names, in any form a search result prints it: an id; a natural key
    (``chat_id``); a source file's path, absolute or relative to the current folder, through a
    symlink or resolved past one; such a path with ``:start-end`` (those lines) or
    `` (messages a-b)`` (a conversation's location); an archive's condensed chunk file."""
    if isinstance(ref, int) or (ref.strip().isascii() and ref.strip().isdigit()):
        doc_id = int(ref)
        # an id past SQLite's integers names nothing (and must not reach SQLite: OverflowError)
        if doc_id > MAX_ID or conn.execute(db.query("document_get"), {"id": doc_id}).fetchone() is None:
            raise DocumentNotFound(f"No document has id {doc_id}: take ids from search results.")
        return Reference(doc_id)
    found = _named(conn, ref)
    if found is not None:
        return found
    lines, messages = _LINES.match(ref), _MESSAGES.match(ref)
    if lines:
        named = _named(conn, lines["base"])
        if named is not None:
            start = int(lines["start"])
            return Reference(named.id, start, int(lines["end"] or start))
    if messages:
        named = _named(conn, messages["base"])
        if named is not None:
            return Reference(named.id, messages=(int(messages["start"]), int(messages["end"])))
    raise DocumentNotFound(
        f"No document has the path or key {ref!r}: give an id or a path from search results."
    )


def _named(conn: sqlite3.Connection, ref: str) -> Reference | None:
    "The document a key or a path names, or None; a path to a file of many documents is an error."
    if not ref.strip() or "\x00" in ref:
        return None
    # A file here, named relative to this folder, is that file, not another root's same key.
    if not os.path.isabs(ref) and os.path.isfile(ref) and (here := _by_path(conn, ref)) is not None:
        return here
    doc_id = _by_ref(conn, ref)
    if doc_id is not None:
        return Reference(doc_id)
    found = _by_path(conn, ref) if "#" not in ref else None
    return found or _in_file(conn, ref)


def _in_file(conn: sqlite3.Connection, ref: str) -> Reference | None:
    """The document ``path#key`` names (a key may hold ``#`` too: each split is tried), the path
    given any way :func:`_by_path` takes; else the file at ``ref`` whole, if it is one."""
    for at in [i for i, c in enumerate(ref) if c == "#"]:
        path, key = ref[:at], ref[at + 1 :]
        for candidate in _indexed_paths(conn, path):
            row = conn.execute(db.query("document_in_file"), {"path": candidate, "key": key}).fetchone()
            if row is not None:
                return Reference(int(row["id"]))
    return _by_path(conn, ref) if "#" in ref else None


def _indexed_paths(conn: sqlite3.Connection, ref: str) -> list[str]:
    "The indexed paths ``ref`` may name: as given, absolute, and the same file through a symlink."
    if not ref.strip() or "\x00" in ref:
        return []
    given = os.path.abspath(ref)
    real = _real(given)
    found = [ref, given]
    for name in sorted({os.path.basename(given), os.path.basename(real)} - {""}):
        found += [row["path"] for row in conn.execute(db.query("files_named"), {"name": name})]
    return [p for p in dict.fromkeys(found) if p in (ref, given) or _real(p) == real]


def _by_path(conn: sqlite3.Connection, ref: str) -> Reference | None:
    "The document at a path given any way a file can be named (see :func:`reference`)."
    given = os.path.abspath(ref)  # relative to the current folder; ".." and "//" folded
    if given != ref and (doc_id := _by_ref(conn, given)) is not None:
        return Reference(doc_id)
    real = _real(given)
    names = {os.path.basename(given), os.path.basename(real)} - {""}
    for name in sorted(names):  # the same file, reached or held through a symlink
        for row in conn.execute(db.query("files_named"), {"name": name}):
            if _real(row["path"]) == real and (doc_id := _by_ref(conn, row["path"])) is not None:
                return Reference(doc_id)
    parts = given.split(os.sep)
    tails = [os.sep.join(parts[i:]) for i in range(1, len(parts))]
    for row in conn.execute(db.query("chunk_files_named"), {"names": json.dumps(tails)}):
        if os.path.join(os.path.dirname(row["path"]), row["file"]) in (given, real):
            return Reference(row["document_id"], chunk=row["id"])
    return None


def _by_ref(conn: sqlite3.Connection, ref: str) -> int | None:
    rows = conn.execute(db.query("document_refs"), {"ref": ref}).fetchall()
    if not rows:
        return None
    if len(rows) > 1 and rows[0]["path"] == ref and rows[1]["path"] == ref:
        listed = ", ".join(f"{r['id']} ({r['title']}; key {r['key']})" for r in rows[:10])
        count = f"{len(rows)}+" if len(rows) == 20 else str(len(rows))
        raise InvalidParameter(f"{ref} holds {count} documents; give one id, or {ref}#KEY: {listed}")
    return int(rows[0]["id"])


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def get_document(
    conn: sqlite3.Connection,
    ref: int | str,
    *,
    line_start: int | None = None,
    line_end: int | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """A document's text, or lines ``line_start``-``line_end`` of it (1-based, inclusive),
    cut at a line boundary before ``max_tokens``; ``next_line`` says where to go on.

    ``ref`` is any form :func:`reference` takes; the part it points at (``path:12-30``, a
    conversation's messages, an archive's chunk file) is read unless lines are given."""
    named = reference(conn, ref)
    if line_start is None and line_end is None:
        line_start, line_end = named.line_start, named.line_end
    for name, value in (("line_start", line_start), ("line_end", line_end), ("max_tokens", max_tokens)):
        if value is not None and value < 1:
            raise InvalidParameter(f"{name} must be 1 or more, not {value}.")
    if line_start is not None and line_end is not None and line_end < line_start:
        raise InvalidParameter(f"line_end {line_end} is before line_start {line_start}.")
    doc = conn.execute(db.query("document_get"), {"id": named.id}).fetchone()
    text, source, blocks = _text(conn, doc)
    if line_start is None and line_end is None and (named.messages or named.chunk):
        line_start, line_end = _part(named, blocks)
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
        "source_deleted": doc["deleted_at"],  # when memdex noticed its file was deleted; kept since
        "line_start": first,
        "line_end": shown_last,
        "total_lines": len(lines),
        "size_bytes": len(body.encode("utf-8")),
        "est_tokens": est_tokens(len(body.encode("utf-8"))),
        "truncated": truncated,
        "next_line": shown_last + 1 if shown_last < last else None,
        "text": body,
    }


@dataclass(frozen=True)
class _Block:
    "Where one chunk sits in a document read from the index: its lines there, its messages."

    chunk: int
    first: int
    last: int
    messages: tuple[int, int] | None  # 1-based, inclusive


def _text(conn: sqlite3.Connection, doc: sqlite3.Row) -> tuple[str, str, list[_Block]]:
    "(text, where it was read: file | index, and the chunks' places in a text from the index)."
    # A file deleted and kept is read from the index: what its path holds now is not it.
    if traits_of(doc["kind"]).one_document_per_file and doc["deleted_at"] is None:
        try:
            with open_inside(doc["path"], roots(conn)) as f:  # OutsideRoots if it resolves elsewhere
                text = f.read().decode("utf-8", "replace")
            # masked as the index is (unless its root keeps secrets), its lines where they were
            return text if doc["keep_secrets"] else mask(text, keep_lines=True).text, "file", []
        except OSError:
            pass  # gone or unreadable since it was indexed: the index still has its text
    chunks = conn.execute(db.query("hit_chunks"), {"ids": json.dumps([doc["id"]])}).fetchall()
    parts: list[str] = []
    blocks: list[_Block] = []
    line = 1
    for c in chunks:
        meta = json.loads(c["meta"] or "{}")
        messages = None
        if "msg_start" in meta:
            messages = (meta["msg_start"] + 1, meta["msg_end"] + 1)
            parts.append(f"--- messages {messages[0]}-{messages[1]} ---\n{c['text']}\n")
        else:
            parts.append(c["text"].rstrip("\n") + "\n")
        last = line + parts[-1].count("\n") - 1
        blocks.append(_Block(c["id"], line, last, messages))
        line = last + 2  # a blank line between chunks
    return "\n".join(parts), "index", blocks


def _part(named: Reference, blocks: list[_Block]) -> tuple[int | None, int | None]:
    "The lines of the chunks a reference's messages or chunk file are in; the whole text if none."
    if named.chunk is not None:
        chosen = [b for b in blocks if b.chunk == named.chunk]
    else:
        start, end = named.messages or (0, 0)
        chosen = [b for b in blocks if b.messages and b.messages[0] <= end and b.messages[1] >= start]
    if not chosen:
        return None, None
    return chosen[0].first, chosen[-1].last
