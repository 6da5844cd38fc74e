"""Every write of an index run: short transactions of whole files.

A file's replacement -- its documents, chunks, topics, whole-text entries, index rows and
the topics those rows give other files -- commits with the transaction it is in, never in
part, so every committed state is consistent on its own: a crash between two transactions
loses nothing a re-run does not redo. Transactions hold at most ``batch_files`` files or
``BATCH_SECONDS``, so the write lock is short and readers (WAL) never wait.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from memdex import secrets
from memdex.ingest import INGEST_VERSION, sources
from memdex.ingest.base import Appended, Tail
from memdex.ingest.walk import Found
from memdex.models import Chunk, Document, ParsedFile, est_tokens
from memdex.secrets import mask_document
from memdex.store import db
from memdex.store.masking import mask_stored
from memdex.tokens import index_text
from memdex.utils import utc_stamp

# Files per transaction: a bulk run writes 1,000 (each commit makes FTS5 write a segment;
# 200 made 20,000 notes 25% slower), the watcher's small runs 200, which keeps a burst of new
# files searchable within a third of a second instead of two (scripts/bench.py watch).
BATCH_FILES = 1000
WATCH_BATCH_FILES = 200
BATCH_SECONDS = 1.0


@dataclass
class StoredFile:
    "The ``files`` row of a file, as ingest compares it with a fresh stat."

    id: int
    path: str
    kind: str
    size: int
    mtime_ns: int
    sha256: str
    deleted_at: str | None = None  # gone, its documents kept (ingest/departures.py)

    @classmethod
    def row(cls, r: sqlite3.Row) -> StoredFile:
        return cls(r["id"], r["path"], r["kind"], r["size"], r["mtime_ns"], r["sha256"], r["deleted_at"])


class Writer:
    def __init__(self, conn: sqlite3.Connection, batch_files: int = BATCH_FILES) -> None:
        self.conn = conn
        self.batch_files = batch_files
        self.now = utc_stamp()
        self.files_in_transaction = 0
        self.opened = 0.0
        self.next_chunk_id = 0  # read from the chunks sequence when a transaction opens

    def execute(self, name: str, params: Mapping[str, object] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(db.query(name), params or {})

    @contextmanager
    def unit(self) -> Iterator[None]:
        """One file's writes, inside the current short transaction.

        A transaction commits only between units, so it never holds part of a file. A unit
        that fails leaves the transaction to be rolled back by the run (``_Run.go``), which
        then stops: files committed before stay, and the next run redoes the rest. There is
        no savepoint per file: FTS5 writes its pending terms to disk at every savepoint, and
        one per file made a 20,000-note index a third slower (tiny segments, endless merges).
        """
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self.files_in_transaction, self.opened = 0, time.monotonic()
            self.next_chunk_id = int(self.execute("chunk_next_id").fetchone()[0])
        yield
        self.files_in_transaction += 1
        if self.files_in_transaction >= self.batch_files or time.monotonic() - self.opened > BATCH_SECONDS:
            self.commit()

    def commit(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- roots and errors ----------------------------------------------------------------
    def register_root(
        self,
        path: str,
        kind: str | None,
        detected: str,
        scope: str,
        chunk_tokens: int | None,
        keep_deleted: bool | None = None,
        keep_secrets: bool | None = None,
    ) -> tuple[int, int, bool | None, bool]:
        """The root's id, the ingest version that last read it in full (0: never: a root whose
        ``keep_secrets`` changed is one), whether it keeps deleted files' documents (None: as
        their kind says) and whether it keeps secrets; ``keep_deleted`` or ``keep_secrets``
        None leaves that as it was."""
        with self.unit():
            params = {
                "path": path,
                "kind": kind,
                "detected_kind": detected,
                "scope": scope,
                "chunk_tokens": chunk_tokens,
                "keep_deleted": keep_deleted,
                "keep_secrets": keep_secrets,
                "now": self.now,
                "version": INGEST_VERSION,
            }
            before = self.execute("root_keep_secrets", {"path": path}).fetchone()
            row = self.execute("root_upsert", params).fetchone()
            if before is not None and before["keep_secrets"] and not row["keep_secrets"]:
                # --mask-secrets after --keep-secrets: the files are read again (ingest_version
                # 0), and what they no longer hold (files deleted and kept) is masked here.
                mask_stored(self.conn, db.query, int(row["id"]))
            keeps = None if row["keep_deleted"] is None else bool(row["keep_deleted"])
            return int(row["id"]), int(row["ingest_version"]), keeps, bool(row["keep_secrets"])

    def root_indexed(self, root_id: int) -> None:
        with self.unit():
            self.execute("root_indexed", {"id": root_id, "now": self.now, "version": INGEST_VERSION})

    def record_error(self, root_id: int, found: Found, reason: str, remember_stat: bool = True) -> None:
        """Record a file that cannot be indexed.

        With its stat remembered, an unchanged broken file is reported again without being
        re-read; a reason that depends on options (the size limit) is checked every run.
        """
        with self.unit():
            self.execute(
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
            self.execute("error_delete", {"path": path})

    def forget_root(self, root_id: int) -> None:
        """A root is forgotten: its vectors, then the root with all that cascades from it
        (files, documents, chunks, full-text entries, topics, problems); documents of other
        roots that its index rows gave topics to get their topics back as they are now."""
        with self.unit():
            targets = {r[0] for r in self.execute("link_targets_of_root", {"root_id": root_id})}
            self.execute("vectors_of_root_delete", {"root_id": root_id})
            self.execute("root_delete", {"id": root_id})
            self._refresh_topics(targets)

    # -- files ---------------------------------------------------------------------------
    def stored(self, path: str) -> StoredFile | None:
        row = self.execute("file_by_path", {"path": path}).fetchone()
        return None if row is None else StoredFile.row(row)

    def adopt(self, stored: StoredFile, root_id: int, rel_path: str) -> None:
        with self.unit():
            self.execute("file_adopt", {"id": stored.id, "root_id": root_id, "rel_path": rel_path})

    def touch(self, stored: StoredFile, found: Found) -> None:
        "Same bytes, new stat: remember the stat, keep the documents."
        with self.unit():
            self.execute("file_touch", {"id": stored.id, "size": found.size, "mtime_ns": found.mtime_ns})
            self.execute("error_delete", {"path": str(found.path)})

    def mark_deleted(self, file_id: int) -> None:
        "A file is gone and its root keeps its documents: only the date memdex noticed is written."
        with self.unit():
            self.execute("file_mark_deleted", {"id": file_id, "now": self.now})

    def delete(self, file_id: int) -> None:
        "A file is gone: its documents, chunks and index rows go, and its rows' topics."
        with self.unit():
            targets = self._link_targets(file_id)
            self.execute("file_delete", {"id": file_id})
            self._refresh_topics(targets)

    def replace(
        self,
        root_id: int,
        found: Found,
        kind: str,
        sha: str,
        stored: StoredFile | None,
        parsed: ParsedFile,
        mask: bool = True,
    ) -> None:
        """Write a parsed file in place of its previous version, keeping document ids; with
        ``mask`` (its root does not keep secrets), every secret in its text masked first."""
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
            keys: set[str] = set()
            if stored is None:
                cursor = self.execute("file_insert", params)
                file_id = int(cursor.lastrowid or 0)
            else:
                file_id = stored.id
                old_ids = {r["key"]: r["id"] for r in self.execute("documents_of_file", {"file_id": file_id})}
                targets = self._link_targets(file_id)
                if parsed.kept is None:
                    self.execute("documents_delete_of_file", {"file_id": file_id})
                else:  # read in part: the documents it kept stay as they are, untouched
                    keys = set(parsed.kept) & set(old_ids)
                    for key, doc_id in old_ids.items():
                        if key not in keys:
                            self.execute("document_delete", {"id": doc_id})
                self.execute("links_delete_of_file", {"file_id": file_id})
                self.execute("file_update", {**params, "id": file_id})
            for link in parsed.links:
                self.execute(
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
            # A document that grows (a session log) is ranked by its chunks alone: its whole
            # text is not indexed again after every appended line (migration 0006).
            source = sources().get(kind)
            whole_text = not (source is not None and source.appendable)
            for doc in parsed.documents:
                doc.key = _unique(doc.key, keys)
                self._insert_document(file_id, str(found.path), doc, old_ids.get(doc.key), whole_text, mask)
            self.execute("error_delete", {"path": str(found.path)})
            self.execute("record_errors_delete_of_file", {"file_id": file_id})
            for record, reason in parsed.skipped:
                self.execute("record_error_insert", {"file_id": file_id, "record": record, "reason": reason})
            self._refresh_topics(targets)
            if parsed.tail is not None:
                self._save_tail(file_id, parsed.tail, mask)
            elif stored is not None:
                self.execute("file_tail_delete", {"file_id": file_id})

    # -- session logs, read on from where they stopped ------------------------------------
    def tail(self, file_id: int) -> Tail | None:
        row = self.execute("file_tail_get", {"file_id": file_id}).fetchone()
        if row is None:
            return None
        return Tail(row["offset"], row["lines"], row["whole_size"], row["tail_sha"], json.loads(row["state"]))

    def _save_tail(self, file_id: int, tail: Tail, mask: bool = True) -> None:
        """Where a session log's reader stopped, with its state: the session's title, folder
        and branch so far among it, masked as the document's are (with ``mask``)."""
        state = json.dumps(tail.state, default=str)
        if mask:
            state = json.dumps(secrets.mask_value(json.loads(state), Counter()))
        params = {
            "file_id": file_id,
            "offset": tail.offset,
            "lines": tail.lines,
            "whole_size": tail.whole_size,
            "tail_sha": tail.tail_sha,
            "state": state,
        }
        self.execute("file_tail_upsert", params)

    def append(
        self,
        root_id: int,
        stored: StoredFile,
        found: Found,
        sha: str,
        appended: Appended,
        tail: Tail,
        mask: bool = True,
    ) -> bool:
        """Add what a session log gained to its document: new chunks, its fields moved on (with
        ``mask``, their secrets masked). False when the document is not there to add to (the
        caller reads the file whole)."""
        doc = appended.document
        masked = mask_document(doc) if mask else None
        with self.unit():
            row = self.execute("document_by_file_key", {"file_id": stored.id, "key": doc.key}).fetchone()
            if row is None:
                return False
            doc_id = int(row["id"])
            params = {
                "id": doc_id,
                "title": doc.title,
                "platform": doc.platform,
                "date": doc.date,
                "created": doc.created,
                "modified": doc.modified,
                "added_bytes": doc.size_bytes,
                "meta": json.dumps(doc.meta, default=str),
            }
            next_seq = int(self.execute("document_append", params).fetchone()["next_seq"])
            rows = self._chunk_rows(doc_id, doc.chunks, next_seq)
            self.conn.executemany(db.query("chunk_insert"), rows)
            self.conn.executemany(db.query("chunks_fts_insert"), rows)
            self._count_secrets(doc_id, masked)
            self.execute(
                "file_update",
                {
                    "id": stored.id,
                    "root_id": root_id,
                    "rel_path": found.rel_path,
                    "kind": stored.kind,
                    "size": found.size,
                    "mtime_ns": found.mtime_ns,
                    "sha256": sha,
                    "now": self.now,
                },
            )
            for record, reason in appended.skipped:
                self.execute(
                    "record_error_insert", {"file_id": stored.id, "record": record, "reason": reason}
                )
            self.execute("error_delete", {"path": str(found.path)})
            self._save_tail(stored.id, tail, mask)
        return True

    def _link_targets(self, file_id: int) -> set[str]:
        return {r[0] for r in self.execute("link_targets_of_file", {"file_id": file_id})}

    def _refresh_topics(self, targets: set[str]) -> None:
        "Topics that index rows give other files, recomputed for the files those rows point at."
        if not targets:
            return
        paths = {"paths": json.dumps(sorted(targets))}
        for statement in db.statements(db.query("refresh_index_topics")):
            self.conn.execute(statement, paths)
        by_document: dict[int, list[str]] = {}
        for row in self.execute("topics_of_files", paths):
            topics = by_document.setdefault(row["document_id"], [])
            if row["topic"] is not None:
                topics.append(row["topic"])
        for document_id, topics in by_document.items():
            self.execute("document_set_topics", {"id": document_id, "topics": topics_json(topics)})

    def _insert_document(
        self,
        file_id: int,
        path: str,
        doc: Document,
        doc_id: int | None,
        whole_text: bool = True,
        mask: bool = True,
    ) -> None:
        masked = mask_document(doc) if mask else None
        topics = [(t, s, None, None) for t, s in doc.topics]
        for r in self.execute("links_to_target", {"target": path}):
            topics += [(k, "index", r["file_id"], r["line"]) for k in json.loads(r["keywords"])]
        fields = {
            "title": doc.title,
            "description": doc.description,
            "tags": json.dumps(doc.tags),
            "topics": topics_json([t for t, *_ in topics]),
        }
        doc_id = self.execute(
            "document_insert",
            {
                "id": doc_id,
                "file_id": file_id,
                "key": doc.key,
                "kind": doc.kind,
                **fields,
                "namespace": doc.namespace,
                "type": doc.type,
                "scope": doc.scope,
                "platform": doc.platform,
                "date": doc.date,
                "date_source": doc.date_source,
                "created": doc.created,
                "modified": doc.modified,
                "line_count": doc.line_count,
                "size_bytes": doc.size_bytes,
                "est_tokens": est_tokens(doc.size_bytes),
                "meta": json.dumps(doc.meta, default=str),
                "whole_text": whole_text,
            },
        ).lastrowid
        self.execute("documents_fts_insert", {"id": doc_id, **{k: index_text(v) for k, v in fields.items()}})
        self.conn.executemany(
            db.query("topic_insert"),
            [
                {"document_id": doc_id, "topic": t, "source": s, "source_file_id": f, "line": ln}
                for t, s, f, ln in topics
            ],
        )
        rows = self._chunk_rows(int(doc_id or 0), doc.chunks)
        self.conn.executemany(db.query("chunk_insert"), rows)
        self.conn.executemany(db.query("chunks_fts_insert"), rows)
        self._count_secrets(int(doc_id or 0), masked)
        if rows and whole_text:
            # the tokens of the text the document_bodies view joins (a token never spans a line)
            body = " ".join(f"{r['heading_words']} {r['text_words']}" for r in rows)
            self.execute("document_body_insert", {"document_id": doc_id, "body": body})

    def _count_secrets(self, doc_id: int, masked: Counter[str] | None) -> None:
        "What was masked in a document, by kind, for `memdex status`."
        if masked:
            self.conn.executemany(
                db.query("secrets_masked_add"),
                [{"document_id": doc_id, "kind": k, "count": n} for k, n in masked.items()],
            )

    def _chunk_rows(self, doc_id: int, chunks: list[Chunk], first_seq: int = 0) -> list[dict[str, object]]:
        """Chunk rows with their ids given here (past every id the sequence has seen), so the
        chunks and their full-text entries go in as two batches: 3x faster than a trigger
        per row."""
        first = self.next_chunk_id
        self.next_chunk_id += len(chunks)
        rows: list[dict[str, object]] = []
        for n, c in enumerate(chunks):
            size = len(c.text.encode("utf-8"))
            rows.append(
                {
                    "id": first + n,
                    "document_id": doc_id,
                    "seq": first_seq + n,
                    "heading": c.heading,
                    "text": c.text,
                    "line_start": c.line_start,
                    "line_end": c.line_end,
                    "size_bytes": size,
                    "est_tokens": est_tokens(size),
                    "meta": json.dumps(c.meta),
                    # what chunks_fts is given: the tokens of each (memdex.tokens)
                    "heading_words": index_text(c.heading),
                    "text_words": index_text(c.text),
                }
            )
        return rows


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
