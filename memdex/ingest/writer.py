"""Every write of an index run: short transactions, one savepoint per source file.

A file's replacement -- its documents, chunks, topics, whole-text index, index rows and the
topics those rows give other files -- happens inside one savepoint, so every committed
state is consistent on its own: a crash between two files loses nothing a re-run does not
redo. Transactions hold at most ``BATCH_FILES`` files or ``BATCH_SECONDS``, so the write lock
is short and readers (WAL) never wait.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from .. import db
from ..models import Document, ParsedFile, est_tokens
from . import INGEST_VERSION
from .files import Found

BATCH_FILES = 200
BATCH_SECONDS = 0.25


@dataclass
class StoredFile:
    "The ``files`` row of a file, as ingest compares it with a fresh stat."

    id: int
    path: str
    kind: str
    size: int
    mtime_ns: int
    sha256: str


class Writer:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.now = db.utcnow()
        self.files_in_transaction = 0
        self.opened = 0.0

    def q(self, name: str, params: Mapping[str, object] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(db.query(name), params or {})

    @contextmanager
    def unit(self) -> Iterator[None]:
        "One file's writes: all or nothing, inside the current short transaction."
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self.files_in_transaction, self.opened = 0, time.monotonic()
        self.conn.execute("SAVEPOINT file")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO file")
            self.conn.execute("RELEASE file")
            raise
        self.conn.execute("RELEASE file")
        self.files_in_transaction += 1
        if self.files_in_transaction >= BATCH_FILES or time.monotonic() - self.opened > BATCH_SECONDS:
            self.commit()

    def commit(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- roots and errors ----------------------------------------------------------------
    def register_root(
        self, path: str, kind: str | None, detected: str, scope: str, chunk_tokens: int | None
    ) -> tuple[int, int]:
        "The root's id, and the ingest version that last read it in full (0: never)."
        with self.unit():
            params = {
                "path": path,
                "kind": kind,
                "detected_kind": detected,
                "scope": scope,
                "chunk_tokens": chunk_tokens,
                "now": self.now,
                "version": INGEST_VERSION,
            }
            row = self.q("root_upsert", params).fetchone()
            return int(row[0]), int(row[1])

    def root_indexed(self, root_id: int) -> None:
        with self.unit():
            self.q("root_indexed", {"id": root_id, "now": self.now, "version": INGEST_VERSION})

    def record_error(self, root_id: int, found: Found, reason: str, remember_stat: bool = True) -> None:
        """Record a file that cannot be indexed.

        With its stat remembered, an unchanged broken file is reported again without being
        re-read; a reason that depends on options (the size limit) is checked every run.
        """
        with self.unit():
            self.q(
                "error_upsert",
                {
                    "path": str(found.path),
                    "root_id": root_id,
                    "reason": reason,
                    "size": found.size if remember_stat else None,
                    "mtime_ns": found.mtime_ns if remember_stat else None,
                    "now": self.now,
                },
            )

    def clear_error(self, path: str) -> None:
        with self.unit():
            self.q("error_delete", {"path": path})

    # -- files ---------------------------------------------------------------------------
    def stored(self, path: str) -> StoredFile | None:
        row = self.q("file_by_path", {"path": path}).fetchone()
        if row is None:
            return None
        return StoredFile(row["id"], path, row["kind"], row["size"], row["mtime_ns"], row["sha256"])

    def adopt(self, stored: StoredFile, root_id: int, rel_path: str) -> None:
        with self.unit():
            self.q("file_adopt", {"id": stored.id, "root_id": root_id, "rel_path": rel_path})

    def touch(self, stored: StoredFile, found: Found) -> None:
        "Same bytes, new stat: remember the stat, keep the documents."
        with self.unit():
            self.q("file_touch", {"id": stored.id, "size": found.size, "mtime_ns": found.mtime_ns})
            self.q("error_delete", {"path": str(found.path)})

    def delete(self, file_id: int) -> None:
        "A file is gone: its documents, chunks and index rows go, and its rows' topics."
        with self.unit():
            targets = self._link_targets(file_id)
            self.q("file_delete", {"id": file_id})
            self._refresh_topics(targets)

    def replace(
        self, root_id: int, found: Found, kind: str, sha: str, stored: StoredFile | None, parsed: ParsedFile
    ) -> None:
        "Write a parsed file in place of its previous version, keeping document ids."
        with self.unit():
            params = {
                "root_id": root_id,
                "path": str(found.path),
                "rel_path": found.rel_path,
                "kind": kind,
                "size": found.size,
                "mtime_ns": found.mtime_ns,
                "sha256": sha,
                "now": self.now,
            }
            old_ids: dict[str, int] = {}
            targets: set[str] = set()
            if stored is None:
                file_id = int(self.q("file_insert", params).fetchone()[0])
            else:
                file_id = stored.id
                old_ids = {r["key"]: r["id"] for r in self.q("documents_of_file", {"file_id": file_id})}
                targets = self._link_targets(file_id)
                self.q("documents_delete_of_file", {"file_id": file_id})
                self.q("links_delete_of_file", {"file_id": file_id})
                self.q("file_update", {**params, "id": file_id})
            for link in parsed.links:
                self.q(
                    "link_insert",
                    {
                        "file_id": file_id,
                        "line": link.line,
                        "keywords": json.dumps(link.keywords),
                        "target": link.target,
                        "label": link.label,
                    },
                )
                targets.add(link.target)
            keys: set[str] = set()
            for doc in parsed.documents:
                doc.key = _unique(doc.key, keys)
                self._insert_document(file_id, str(found.path), doc, old_ids.get(doc.key))
            self.q("error_delete", {"path": str(found.path)})
            self.q("record_errors_delete_of_file", {"file_id": file_id})
            for record, reason in parsed.skipped:
                self.q("record_error_insert", {"file_id": file_id, "record": record, "reason": reason})
            self._refresh_topics(targets)

    def _link_targets(self, file_id: int) -> set[str]:
        return {r[0] for r in self.q("link_targets_of_file", {"file_id": file_id})}

    def _refresh_topics(self, targets: set[str]) -> None:
        "Topics that index rows give other files, recomputed for the files those rows point at."
        if not targets:
            return
        paths = {"paths": json.dumps(sorted(targets))}
        for statement in db.statements(db.query("refresh_index_topics")):
            self.conn.execute(statement, paths)
        by_document: dict[int, list[str]] = {}
        for row in self.q("topics_of_files", paths):
            topics = by_document.setdefault(row["document_id"], [])
            if row["topic"] is not None:
                topics.append(row["topic"])
        for document_id, topics in by_document.items():
            self.q("document_set_topics", {"id": document_id, "topics": topics_json(topics)})

    def _insert_document(self, file_id: int, path: str, doc: Document, doc_id: int | None) -> None:
        topics = [(t, s, None, None) for t, s in doc.topics]
        for r in self.q("links_to_target", {"target": path}):
            topics += [(k, "index", r["file_id"], r["line"]) for k in json.loads(r["keywords"])]
        doc_id = self.q(
            "document_insert",
            {
                "id": doc_id,
                "file_id": file_id,
                "key": doc.key,
                "kind": doc.kind,
                "title": doc.title,
                "description": doc.description,
                "tags": json.dumps(doc.tags),
                "topics": topics_json([t for t, *_ in topics]),
                "namespace": doc.namespace,
                "type": doc.type,
                "scope": doc.scope,
                "platform": doc.platform,
                "date": doc.date,
                "created": doc.created,
                "modified": doc.modified,
                "line_count": doc.line_count,
                "size_bytes": doc.size_bytes,
                "est_tokens": est_tokens(doc.size_bytes),
                "meta": json.dumps(doc.meta, default=str),
            },
        ).fetchone()[0]
        self.conn.executemany(
            db.query("topic_insert"),
            [
                {"document_id": doc_id, "topic": t, "source": s, "source_file_id": f, "line": ln}
                for t, s, f, ln in topics
            ],
        )
        self.conn.executemany(
            db.query("chunk_insert"),
            [
                {
                    "document_id": doc_id,
                    "seq": seq,
                    "heading": c.heading,
                    "text": c.text,
                    "line_start": c.line_start,
                    "line_end": c.line_end,
                    "size_bytes": len(c.text.encode("utf-8")),
                    "est_tokens": est_tokens(len(c.text.encode("utf-8"))),
                    "meta": json.dumps(c.meta),
                }
                for seq, c in enumerate(doc.chunks)
            ],
        )
        self.q("document_body_insert", {"document_id": doc_id})


def topics_json(topics: list[str]) -> str:
    """A document's ``topics`` column: its topic rows in order, each spelling once (the first,
    case aside). The one place it is made, whether a document is written or its index rows
    change, so a rebuilt index and a maintained one hold the same text."""
    distinct: dict[str, str] = {}
    for topic in topics:
        distinct.setdefault(topic.casefold(), topic)
    return json.dumps(list(distinct.values()), ensure_ascii=False)


def _unique(key: str, taken: set[str]) -> str:
    candidate, n = key, 1
    while candidate in taken:
        n += 1
        candidate = f"{key}#{n}"
    taken.add(candidate)
    return candidate
