"""index_paths(): walk roots, compare with the stored state, parse what changed, write it.

- An unchanged file costs one stat: its size and mtime match the ``files`` row.
- A file whose stat changed is read and hashed; same hash, only the stat is updated.
- A changed file is parsed outside any transaction, then replaced inside one savepoint:
  either all of its new documents, chunks and topics land, or none do.
- A file that cannot be read or parsed is recorded in ``ingest_errors`` and skipped; if it was
  indexed before, its last good version stays searchable.
- A file that is gone is deleted with everything derived from it.

Writes are grouped into short transactions (at most ``BATCH_FILES`` files or
``BATCH_SECONDS``), so readers in WAL mode always see whole files and a crash loses at
most the batch in flight, which the next run redoes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import db
from ..errors import DatabaseError, IngestError, MemdexError
from ..models import Document, ParsedFile, est_tokens
from . import detect_root_kind, get_kind, kinds_for
from .base import MB, SourceFile, SourceKind
from .files import Found, walk

BATCH_FILES = 200
BATCH_SECONDS = 0.25
RAISE_ENV = "MEMDEX_RAISE_ERRORS"

Progress = Callable[[int, int], None]


@dataclass
class Skipped:
    path: str
    reason: str


@dataclass
class IndexReport:
    "What one run did. ``skipped`` lists every file that could not be indexed, with why."

    roots: list[dict[str, str | None]] = field(default_factory=list)
    seen: int = 0
    unchanged: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    documents: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Options:
    kind: str | None = None
    scope: str | None = None
    max_file_size: int | None = None
    chunk_tokens: int = 800


def detect_scope(root: Path) -> str:
    "project when the root is inside a git work tree, else user."
    folder = root if root.is_dir() else root.parent
    for candidate in [folder, *folder.parents]:
        if (candidate / ".git").exists():
            return "project"
    return "user"


def index_paths(
    conn: sqlite3.Connection,
    paths: Iterable[str | os.PathLike[str]],
    *,
    kind: str | None = None,
    scope: str | None = None,
    max_file_size: int | None = None,
    chunk_tokens: int = 800,
    progress: Progress | None = None,
) -> IndexReport:
    """Index files and folders into the open database; return what was done.

    :param kind: force a source kind for every file (default: detected per root and file)
    :param scope: ``user`` or ``project`` (default: project inside a git work tree)
    :param max_file_size: skip larger files (default: per kind; 5 MB for markdown)
    :param progress: called as ``progress(done, total)`` per file of each root
    """
    if kind is not None:
        get_kind(kind)
    if scope not in (None, "user", "project"):
        raise MemdexError(f"Unknown scope {scope!r}: use user or project.")
    run = _Run(conn, Options(kind, scope, max_file_size, chunk_tokens), progress)
    started = time.perf_counter()
    try:
        for path in paths:
            run.index_root(Path(os.path.abspath(path)))
        run.batch.commit()
    except sqlite3.OperationalError as exc:
        run.batch.rollback()
        raise DatabaseError(_db_problem(exc, conn)) from exc
    run.report.seconds = round(time.perf_counter() - started, 3)
    return run.report


def _db_problem(exc: sqlite3.OperationalError, conn: sqlite3.Connection) -> str:
    message = str(exc)
    if "full" in message:
        return "The disk is full: nothing of the last batch was written. Free space and run again."
    if "readonly" in message or "read-only" in message:
        return "The index is read-only: check the permissions of the database file and its folder."
    if "locked" in message or "busy" in message:
        return "The index is locked by another writer: wait for it, or stop it, and run again."
    return f"The index could not be written: {message}"


class _Batch:
    "Short write transactions, one savepoint per file inside them."

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.files = 0
        self.opened = 0.0

    @contextmanager
    def unit(self) -> Iterator[None]:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self.files, self.opened = 0, time.monotonic()
        self.conn.execute("SAVEPOINT file")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO file")
            self.conn.execute("RELEASE file")
            raise
        self.conn.execute("RELEASE file")
        self.files += 1
        if self.files >= BATCH_FILES or time.monotonic() - self.opened > BATCH_SECONDS:
            self.commit()

    def commit(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


class _Run:
    def __init__(self, conn: sqlite3.Connection, options: Options, progress: Progress | None) -> None:
        self.conn = conn
        self.options = options
        self.progress = progress
        self.report = IndexReport()
        self.batch = _Batch(conn)
        self.now = db.utcnow()
        self.raise_errors = bool(os.environ.get(RAISE_ENV))

    def q(self, name: str, params: dict[str, object] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(db.query(name), params or {})

    def index_root(self, root: Path) -> None:
        if not os.path.lexists(root):
            raise MemdexError(f"{root}: no such file or folder.")
        forced = self.options.kind
        root_kind = None if forced else detect_root_kind(root)
        scope = self.options.scope or detect_scope(root)
        with self.batch.unit():
            root_id = self.q(
                "root_upsert",
                {
                    "path": str(root),
                    "kind": forced,
                    "detected_kind": root_kind or "files",
                    "scope": scope,
                    "now": self.now,
                },
            ).fetchone()[0]
        self.report.roots.append({"path": str(root), "kind": forced or root_kind or "files", "scope": scope})
        existing = {r["path"]: r for r in self.q("files_of_root", {"root_id": root_id})}
        broken = {r["path"]: r for r in self.q("errors_of_root", {"root_id": root_id})}
        nested = {r["path"] for r in self.q("root_paths") if r["path"] != str(root)}
        nested = {p for p in nested if p.startswith(str(root) + os.sep)}

        plan: list[tuple[Found, Path, list[SourceKind]]] = []
        seen: set[str] = set()
        unlisted: list[str] = []
        zones = _Zones(root, root_kind if not forced else None, detect=not forced)
        for found in walk(root, nested):
            seen.add(str(found.path))
            if found.problem and found.problem.startswith("cannot list folder"):
                unlisted.append(str(found.path) + os.sep)
                self._skip(root_id, found, found.problem)
                continue
            zone, zone_kind = zones.of(found.path.parent) if root.is_dir() else (root.parent, None)
            rel = os.path.relpath(found.path, zone).replace(os.sep, "/")
            candidates = kinds_for(rel, forced, zone_kind)
            if candidates:
                plan.append((found, zone, candidates))

        self.targets: set[str] = set()
        total = len(plan)
        for done, (found, zone, candidates) in enumerate(plan, 1):
            self.report.seen += 1
            self._file(
                root_id,
                zone,
                scope,
                found,
                candidates,
                existing.get(str(found.path)),
                broken.get(str(found.path)),
            )
            if self.progress:
                self.progress(done, total)

        for path, row in existing.items():
            if path not in seen and not any(path.startswith(u) for u in unlisted):
                with self.batch.unit():
                    self.targets |= self._link_targets(row["id"])
                    self.q("file_delete", {"id": row["id"]})
                self.report.removed += 1
        for path in broken:
            if path not in seen:
                with self.batch.unit():
                    self.q("error_delete", {"path": path})
        if self.targets:
            with self.batch.unit():
                for statement in db.statements(db.query("refresh_index_topics")):
                    self.conn.execute(statement, {"paths": json.dumps(sorted(self.targets))})
        with self.batch.unit():
            self.q("root_indexed", {"id": root_id, "now": self.now})

    def _file(
        self,
        root_id: int,
        zone: Path,
        scope: str,
        found: Found,
        candidates: list[SourceKind],
        row: sqlite3.Row | None,
        broken: sqlite3.Row | None,
    ) -> None:
        if found.problem:
            self._skip(root_id, found, found.problem)
            return
        names = {k.name for k in candidates}
        if (
            row is not None
            and row["size"] == found.size
            and row["mtime_ns"] == found.mtime_ns
            and row["kind"] in names
            and broken is None
        ):
            self.report.unchanged += 1
            return
        if broken is not None and broken["size"] == found.size and broken["mtime_ns"] == found.mtime_ns:
            self.report.skipped.append(Skipped(str(found.path), broken["reason"]))
            return
        limit = self.options.max_file_size or max(k.max_bytes for k in candidates)
        if found.size > limit:
            reason = (
                f"file is {found.size / MB:.1f} MB, over the {limit / MB:g} MB limit; "
                "raise it with --max-file-size"
            )
            self._skip(root_id, found, reason, remember_stat=False)
            return
        try:
            with open(found.path, "rb") as f:
                data = f.read(limit + 1)
        except OSError as exc:
            self._skip(root_id, found, f"cannot read file: {exc.strerror}")
            return
        sha = hashlib.sha256(data).hexdigest()
        if row is not None and row["sha256"] == sha and row["kind"] in names:
            with self.batch.unit():
                self.q("file_touch", {"id": row["id"], "size": found.size, "mtime_ns": found.mtime_ns})
                if broken is not None:
                    self.q("error_delete", {"path": str(found.path)})
            self.report.unchanged += 1
            return
        kind = next((k for k in candidates if k.sniff(data)), None)
        if kind is None:  # named like a source, but is not one (a JSON that is no chat export)
            if row is not None:
                with self.batch.unit():
                    self.targets |= self._link_targets(row["id"])
                    self.q("file_delete", {"id": row["id"]})
                self.report.removed += 1
            return
        rel = os.path.relpath(found.path, zone).replace(os.sep, "/")
        source = SourceFile(found.path, rel, zone, data, scope, self.options.chunk_tokens)
        try:
            parsed = kind.parse(source)
        except (IngestError, ValueError, RecursionError) as exc:
            self._skip(root_id, found, str(exc))
            return
        except Exception as exc:  # a parser bug must not stop the run; under test it must show
            if self.raise_errors:
                raise
            self._skip(
                root_id, found, f"unexpected {type(exc).__name__}: {exc} (a memdex bug: please report it)"
            )
            return
        with self.batch.unit():
            self._write(root_id, found, kind.name, sha, row, parsed)
        if row is None:
            self.report.added += 1
        else:
            self.report.updated += 1

    def _skip(self, root_id: int, found: Found, reason: str, remember_stat: bool = True) -> None:
        """Record a file that cannot be indexed.

        With its stat remembered, an unchanged broken file is reported again without being
        re-read; a reason that depends on options (the size limit) is checked every run.
        """
        self.report.skipped.append(Skipped(str(found.path), reason))
        with self.batch.unit():
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

    def _link_targets(self, file_id: int) -> set[str]:
        return {r[0] for r in self.q("link_targets_of_file", {"file_id": file_id})}

    def _write(
        self, root_id: int, found: Found, kind: str, sha: str, row: sqlite3.Row | None, parsed: ParsedFile
    ) -> None:
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
        if row is None:
            other = self.q("file_by_path", {"path": str(found.path)}).fetchone()
            row = other  # the file moved here from another root: take it over
        if row is None:
            file_id = self.q("file_insert", params).fetchone()[0]
        else:
            file_id = row["id"]
            old_ids = {r["key"]: r["id"] for r in self.q("documents_of_file", {"file_id": file_id})}
            self.targets |= self._link_targets(file_id)
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
            self.targets.add(link.target)
        keys: set[str] = set()
        for doc in parsed.documents:
            doc.key = _unique(doc.key, keys)
            self._insert_document(file_id, str(found.path), doc, old_ids.get(doc.key))
        self.q("error_delete", {"path": str(found.path)})
        self.report.documents += len(parsed.documents)

    def _insert_document(self, file_id: int, path: str, doc: Document, doc_id: int | None) -> None:
        index_rows = self.q("links_to_target", {"target": path}).fetchall()
        topics = [(t, s, None, None) for t, s in doc.topics]
        for r in index_rows:
            topics += [(k, "index", r["file_id"], r["line"]) for k in json.loads(r["keywords"])]
        distinct: dict[str, str] = {}
        for topic, *_ in topics:
            distinct.setdefault(topic.casefold(), topic)
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
                "topics": json.dumps(list(distinct.values())),
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


class _Zones:
    """Which kind claims each folder: the outermost folder that claims a kind wins.

    A Serena memory folder inside a repository indexed as a whole (``repo/.serena/memories``)
    is read as Serena, keyed from that folder, while the rest of the repository stays notes.
    """

    def __init__(self, root: Path, root_kind: str | None, detect: bool) -> None:
        self.root = root
        self.cache: dict[Path, tuple[Path, str | None]] = {root: (root, root_kind)}
        self.detect = detect

    def of(self, folder: Path) -> tuple[Path, str | None]:
        if folder in self.cache:
            return self.cache[folder]
        if folder == folder.parent or not self.detect:
            return self.cache[self.root]
        outer = self.of(folder.parent)
        kind = None if outer[1] is not None else detect_root_kind(folder)
        zone = (folder, kind) if kind else outer
        self.cache[folder] = zone
        return zone


def _unique(key: str, taken: set[str]) -> str:
    candidate, n = key, 1
    while candidate in taken:
        n += 1
        candidate = f"{key}#{n}"
    taken.add(candidate)
    return candidate
