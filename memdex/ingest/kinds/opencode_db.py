"""opencode-db: OpenCode's sessions in ``~/.local/share/opencode/opencode.db`` (OpenCode 1.2
and later; ``opencode-<channel>.db`` for other release channels).

The database holds what the file tree of older versions held (``kinds.opencode``), one row a
thing: ``session`` (title, directory, version, parent_id, time_created/updated), ``message``
(its info as JSON in ``data``) and ``part`` (each part as JSON in ``data``). Each session is
one document of kind ``opencode``, made by the file tree's own reader
(``opencode.conversation``), so the two layouts give the same fields: title, project, model,
times, roles, tool calls, and the same resume command. Other tables (accounts, credentials,
permissions) are never read.

- Read without disturbing OpenCode: opened read-only (``mode=ro``; never ``immutable``, which
  would miss what sits in the write-ahead log), in one read transaction, which in WAL mode
  neither blocks OpenCode's writes nor is blocked by them. A database that stays busy
  (locked by a checkpoint in exclusive mode, a recovery) is retried briefly, then reported
  and read again at its next change. Reading writes nothing to the database; like any reader of
  a WAL database, SQLite makes an empty ``-wal`` and a ``-shm`` beside it when OpenCode has
  not (docs/opencode.md).
- A change is known by the stat of the file and its ``-wal`` together (a commit lands in the
  WAL, not in the file, until a checkpoint); the watcher's events on the ``-wal`` are the
  database's (``companions``).
- Read in part: each session's fingerprint -- its ``time_updated``, and the count and newest
  ``time_updated`` of its messages and of its parts (OpenCode sets ``time_updated`` on every
  insert and update; its ``import`` adds messages without touching the session's) -- is saved
  with the file; a later read reads and writes only the sessions whose fingerprint changed,
  and drops the documents of sessions that are gone.
- A message or part whose JSON does not parse is reported as ``opencode.db#<session>/<id>``;
  the rest of the session is indexed, and the session is read again at the next change.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from memdex.errors import IngestError
from memdex.ingest.base import MB, SourceFile, SourceKind, Tail
from memdex.ingest.chat import to_document
from memdex.ingest.kinds.opencode import conversation
from memdex.models import ParsedFile

DOCUMENT_KIND = "opencode"  # the sessions are OpenCode's, whichever layout kept them
_NAME = re.compile(r"opencode(-[\w.-]+)?\.db", re.I)
BUSY_SECONDS = 2.0  # SQLite's own wait for a lock, each attempt
BUSY_ATTEMPTS = 3  # attempts before the database is reported busy

SESSIONS_SQL = """
SELECT id, parent_id, directory, title, version, time_created, time_updated FROM session
ORDER BY time_created, id
"""
MESSAGE_STAMPS_SQL = "SELECT session_id, count(*), max(time_updated) FROM message GROUP BY session_id"
PART_STAMPS_SQL = "SELECT session_id, count(*), max(time_updated) FROM part GROUP BY session_id"
MESSAGES_SQL = "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id"
PARTS_SQL = "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id"


class OpenCodeDbKind(SourceKind):
    name = "opencode-db"
    description = "OpenCode 1.2+ sessions: ~/.local/share/opencode/opencode.db (SQLite, read-only)"
    max_bytes = 16 * 1024 * MB
    suffixes = (".db",)
    record_separator = "#"
    opens_itself = True
    companions = ("-wal",)
    locations = ("$XDG_DATA_HOME/opencode/opencode.db | ~/.local/share/opencode/opencode.db",)

    def claims(self, rel_path: str) -> bool:
        return _NAME.fullmatch(rel_path.rpartition("/")[2]) is not None

    def sniff(self, data: bytes) -> bool:
        return data.startswith(b"SQLite format 3\x00")

    def parse(self, source: SourceFile) -> ParsedFile:
        known: dict[str, str] = dict((source.state or {}).get("sessions") or {})
        for attempt in range(1, BUSY_ATTEMPTS + 1):
            try:
                return self._read(source, known)
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise IngestError(f"cannot read it as OpenCode's database: {exc}") from None
                if attempt == BUSY_ATTEMPTS:
                    raise IngestError(
                        f"the database stayed busy ({exc}) for {BUSY_ATTEMPTS} tries of "
                        f"{BUSY_SECONDS:g} s; it is read again at its next change"
                    ) from None
                time.sleep(0.1 * attempt)
            except sqlite3.DatabaseError as exc:
                raise IngestError(f"not a readable SQLite database ({exc})") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _read(self, source: SourceFile, known: dict[str, str]) -> ParsedFile:
        parsed = ParsedFile(kind=self.name, kept=[])
        read: dict[str, str] = {}
        conn = open_read_only(source.path)
        try:
            conn.execute("BEGIN")  # one snapshot: the fingerprints and the rows agree
            if not _has_tables(conn):
                raise IngestError(
                    "no session, message and part tables: not OpenCode's database (OpenCode 1.2 "
                    "and later keep their sessions in ~/.local/share/opencode/opencode.db)"
                )
            stamps = _stamps(conn)
            for row in conn.execute(SESSIONS_SQL).fetchall():
                ident = str(row[0])
                mark = f"{row[6]}|{stamps.get(ident, '')}"
                if known.get(ident) == mark:
                    read[ident] = mark
                    assert parsed.kept is not None
                    parsed.kept.append(ident)
                    continue
                problems = len(parsed.skipped)
                found = self._session(conn, row, parsed)
                if found is not None:
                    parsed.documents.append(to_document(found, source, DOCUMENT_KIND))
                if len(parsed.skipped) == problems:  # one with a broken record is read again
                    read[ident] = mark
        finally:
            conn.close()
        parsed.tail = Tail(0, 0, 0, "", {"sessions": read})
        return parsed

    def _session(self, conn: sqlite3.Connection, row: tuple[Any, ...], parsed: ParsedFile) -> Any:
        ident, parent, directory, title, version, created, updated = row
        info = {
            "title": title,
            "directory": directory,
            "version": version,
            "parentID": parent,
            "time": {"created": created, "updated": updated},
        }
        messages: list[dict[str, Any]] = []
        for message_id, message_created, data in conn.execute(MESSAGES_SQL, (ident,)):
            message = _json(data, f"{ident}/{message_id}", parsed)
            if message is not None:
                message["id"] = message_id
                if not isinstance(message.get("time"), dict):
                    message["time"] = {}
                message["time"].setdefault("created", message_created)
                messages.append(message)
        parts: dict[str, list[dict[str, Any]]] = {}
        for part_id, message_id, data in conn.execute(PARTS_SQL, (ident,)):
            part = _json(data, f"{ident}/{part_id}", parsed)
            if part is not None:
                parts.setdefault(str(message_id), []).append(part)
        return conversation(str(ident), info, messages, lambda m: parts.get(m, []))


def open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection that sees what OpenCode committed, its WAL included: never
    ``immutable``, never a write; SQLite waits ``BUSY_SECONDS`` for a lock."""
    uri = f"file:{quote(str(path))}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)


def _busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _has_tables(conn: sqlite3.Connection) -> bool:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {"session", "message", "part"} <= names


def _stamps(conn: sqlite3.Connection) -> dict[str, str]:
    "Each session's messages and parts: how many, and the newest ``time_updated``."
    counts: dict[str, list[str]] = {}
    for query in (MESSAGE_STAMPS_SQL, PART_STAMPS_SQL):
        for session, count, newest in conn.execute(query):
            counts.setdefault(str(session), ["0:", "0:"])[query is PART_STAMPS_SQL] = f"{count}:{newest}"
    return {k: "|".join(v) for k, v in counts.items()}


def _json(data: Any, where: str, parsed: ParsedFile) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except (TypeError, ValueError, RecursionError) as exc:
        parsed.skipped.append((where, f"not valid JSON ({exc}); the rest of the session is indexed"))
        return None
    if not isinstance(value, dict):
        parsed.skipped.append((where, "not a JSON object; the rest of the session is indexed"))
        return None
    return value
