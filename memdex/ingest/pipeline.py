"""index_paths() and index_changes(): find what changed under the roots, parse it, write it.

- An unchanged file costs one stat: its size and mtime match the ``files`` row.
- A file whose stat changed is read and hashed; same hash, only the stat is updated.
- A changed file is read and parsed with no transaction open; its writes are queued and
  applied with other files' in short transactions that commit only between files (see
  ``writer``): all of its new documents, chunks and topics land, or none do. There is no
  savepoint per file (it slows FTS5 down): if a file's writes fail, the run rolls back the
  open transaction and stops; files committed before stay, and the next run redoes the rest.
- A file that cannot be read or parsed is recorded in ``ingest_errors`` and skipped; if it was
  indexed before, its last good version stays searchable.
- A file that is gone is deleted with everything derived from it -- unless its root keeps
  deleted files (``departures``: a session log, by default): then it is marked and kept. One
  that moved (its bytes arrived at another path) is not a deletion.
- A run handles each file once, however many ways it is reached (a new folder and the file
  in it are both in a watcher's batch): its writes are queued, so a second look would not
  see the first one's and would write the file twice.

``index_paths`` walks whole roots (``memdex index``, and the watcher's catch-up on start);
``index_changes`` looks only at the paths a watcher saw change.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from memdex.errors import DatabaseError, IngestError, InvalidParameter, raise_errors
from memdex.ingest import INGEST_VERSION, companion_owner, detect_root_kind, get_kind, session_kinds, sources
from memdex.ingest.base import MB, SNIFF_BYTES, SourceFile, SourceKind, Tail
from memdex.ingest.decide import Append, Broken, KnownBroken, Problem, TooLarge, Unchanged, decide, same_stat
from memdex.ingest.departures import Arrivals, keeps
from memdex.ingest.report import IndexReport, Skipped, root_kind
from memdex.ingest.roots import Root, Zones, detect_scope, nested_roots, owning_root, roots_to_index
from memdex.ingest.sessions import TAIL_BYTES, WHOLE_READ_GROWTH, WholeReadNeeded, tail_hash
from memdex.ingest.walk import Found, IgnoreList, stat_file, walk
from memdex.ingest.writer import BATCH_FILES, WATCH_BATCH_FILES, StoredFile, Writer
from memdex.store import db

QUEUE_BYTES = 32 * MB  # parsed data held before it is written

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]


@dataclass
class Options:
    kind: str | None = None
    scope: str | None = None
    max_file_size: int | None = None
    chunk_tokens: int | None = None
    keep_deleted: bool | None = None
    keep_secrets: bool | None = None


def index_paths(
    conn: sqlite3.Connection,
    paths: Iterable[str | os.PathLike[str]],
    *,
    kind: str | None = None,
    scope: str | None = None,
    max_file_size: int | None = None,
    chunk_tokens: int | None = None,
    keep_deleted: bool | None = None,
    keep_secrets: bool | None = None,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> IndexReport:
    """Index files and folders into the open database; return what was done.

    :param kind: force a source kind for every file (default: detected per root and file)
    :param scope: ``user`` or ``project`` (default: project inside a git work tree)
    :param max_file_size: skip larger files (default: per kind; 5 MB for markdown)
    :param chunk_tokens: bound of a chunk in estimated tokens (default: per kind)
    :param keep_deleted: keep the documents of files deleted from these roots (False: drop
        them); remembered per root. None: as set before, else kept for session logs only
    :param keep_secrets: index these roots' secrets as they were typed (True), or mask them
        (False, the default: ``memdex.secrets``); remembered per root, and a root whose
        setting changes is read again in full. None: as set before, else masked
    :param progress: called as ``progress(done, total)`` per file of each root
    :param should_stop: checked between files; when it returns true the run commits what it
        has done and returns early (``report.stopped``)
    """
    if kind is not None:
        get_kind(kind)
    if scope not in (None, "user", "project"):
        raise InvalidParameter(f"Unknown scope {scope!r}: use user or project.")
    options = Options(kind, scope, max_file_size, chunk_tokens, keep_deleted, keep_secrets)
    run = _Run(conn, options, progress, should_stop)
    roots, notes = roots_to_index(conn, [Path(os.path.abspath(p)) for p in paths], kind)
    run.report.notes += notes

    def work() -> None:
        for root in roots:
            if run.stop():
                return
            run.index_root(root)

    return run.run(work)


def index_known_roots(
    conn: sqlite3.Connection,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    *,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> IndexReport:
    """Re-index remembered roots (all, or those given), each with the kind and scope it was
    first indexed with; a root that no longer exists is reported, not emptied."""
    wanted = {os.path.abspath(r) for r in roots} if roots is not None else None
    rows = [r for r in conn.execute(db.query("roots_all")) if wanted is None or r["path"] in wanted]
    # A root stored by its real path first: of two roots that are one folder (registered by
    # two paths before roots were resolved), it is the one indexed.
    rows.sort(key=lambda r: os.path.realpath(r["path"]) != r["path"])
    total = IndexReport()
    indexed: dict[str, str] = {}  # real path -> the root indexed as it
    for row in rows:
        if should_stop is not None and should_stop():
            total.stopped = True
            break
        if not os.path.exists(row["path"]):
            total.missing_roots.append(row["path"])
            continue
        real = os.path.realpath(row["path"])
        if real in indexed:
            total.notes.append(
                f"{row['path']} is {indexed[real]}, indexed too: its documents are in the index "
                f"twice; `memdex roots remove {row['path']}` drops the second copy"
            )
            continue
        indexed[real] = row["path"]
        report = index_paths(
            conn,
            [row["path"]],
            kind=row["kind"],
            scope=row["scope"],
            chunk_tokens=row["chunk_tokens"],
            progress=progress,
            should_stop=should_stop,
        )
        total.merge(report)
    return total


def index_changes(
    conn: sqlite3.Connection,
    paths: Iterable[str | os.PathLike[str]],
    *,
    should_stop: ShouldStop | None = None,
) -> IndexReport:
    """Bring some paths under indexed roots up to date: files, whole folders, or paths gone.

    What ``memdex watch`` calls with the paths its filesystem events named. Each root keeps
    the kind and scope it was indexed with; paths under no indexed root are ignored.
    """
    roots = [dict(r) for r in conn.execute(db.query("roots_all"))]
    run = _Run(conn, Options(), None, should_stop, batch_files=WATCH_BATCH_FILES)

    def work() -> None:
        # A database's -wal changed: the database did (SourceKind.companions).
        wanted = {companion_owner(p) or p for p in (os.path.abspath(p) for p in paths)}
        # Paths that exist first: a file moved here is indexed before its old path is seen
        # gone, so the move is known for one (departures), not taken for a deletion.
        for path in sorted(wanted, key=lambda p: (not os.path.lexists(p), p)):
            if run.stop():
                return
            row = owning_root(path, roots)
            if row is not None:
                run.index_path(run.known_root(row, roots), Path(path))

    return run.run(work)


class _Run:
    def __init__(
        self,
        conn: sqlite3.Connection,
        options: Options,
        progress: Progress | None,
        should_stop: ShouldStop | None,
        batch_files: int = BATCH_FILES,
    ) -> None:
        self.conn = conn
        self.batch_files = batch_files
        self.options = options
        self.progress = progress
        self.should_stop = should_stop
        self.report = IndexReport()
        self.writer = Writer(conn, batch_files)
        self.raise_errors = raise_errors()
        self.roots: dict[str, Root] = {}
        self.ignored = IgnoreList()
        self.record_errors: dict[str, list[Skipped]] | None = None  # preloaded per whole root
        self.errors_before: dict[str, sqlite3.Row] | None = None  # ingest_errors, per whole root
        self.handled: set[str] = set()  # files this run has dealt with (see the module's doc)
        self.arrivals = Arrivals(conn)  # files new to this run: a file gone may have moved there
        self.holds: Counter[str] = Counter()  # files per kind of the root being walked
        self.queue: list[Callable[[], None]] = []
        self.queued_bytes = 0

    def stop(self) -> bool:
        if self.should_stop is not None and self.should_stop():
            self.report.stopped = True
        return self.report.stopped

    def run(self, work: Callable[[], object]) -> IndexReport:
        "Do ``work`` (walk roots, or changed paths), apply what it queued; the run's report."
        started = time.perf_counter()
        try:
            work()
            self.flush()
            # one session kept once, whichever roots lead to it (migration 0012)
            self.writer.execute("session_copies_mark", {"kinds": json.dumps(session_kinds())})
        except BaseException as exc:
            self.queue.clear()
            self.writer.rollback()  # the caller's connection is left with no transaction open
            if isinstance(exc, sqlite3.OperationalError):
                raise DatabaseError(db.problem(exc, db.path_of(self.conn))) from exc
            raise
        self.report.seconds = round(time.perf_counter() - started, 3)
        return self.report

    # -- writes: queued while files are read and parsed, applied in short batches ----------
    def queue_write(self, write: Callable[[], None], size: int = 0) -> None:
        "Queue a file's writes; apply the queue when it holds a batch of files or of bytes."
        self.queue.append(write)
        self.queued_bytes += size
        if len(self.queue) >= self.batch_files or self.queued_bytes >= QUEUE_BYTES:
            self.flush()

    def flush(self) -> None:
        "Apply the queued writes, whole files at a time (``Writer.unit``), then commit."
        queue, self.queue, self.queued_bytes = self.queue, [], 0
        for write in queue:
            write()
        self.writer.commit()

    # -- roots ---------------------------------------------------------------------------
    def _all_roots(self) -> list[str]:
        return [r["path"] for r in self.conn.execute(db.query("root_paths"))]

    def new_root(self, root: Path) -> Root:
        forced = self.options.kind
        root_kind = None if forced else detect_root_kind(root)
        scope = self.options.scope or detect_scope(root)
        tokens = self.options.chunk_tokens
        root_id, version, keep, keep_secrets = self.writer.register_root(
            str(root),
            forced,
            root_kind or "files",
            scope,
            tokens,
            self.options.keep_deleted,
            self.options.keep_secrets,
        )
        self.writer.commit()
        self.report.roots.append({"path": str(root), "kind": forced or root_kind, "scope": scope})
        zones = Zones(root, root_kind, not forced)
        nested = nested_roots(str(root), self._all_roots())
        stale = version < INGEST_VERSION
        return Root(
            root_id,
            root,
            forced,
            scope,
            zones,
            nested,
            tokens,
            stale=stale,
            keep_deleted=keep,
            keep_secrets=keep_secrets,
        )

    def known_root(self, row: dict[str, object], roots: list[dict[str, object]]) -> Root:
        "A root as it was registered by `memdex index` (for the watcher's changes)."
        path = str(row["path"])
        if path not in self.roots:
            root_kind = None if row["detected_kind"] in (None, "files") else str(row["detected_kind"])
            forced = str(row["kind"]) if row["kind"] else None
            tokens = int(str(row["chunk_tokens"])) if row.get("chunk_tokens") else None
            keep = None if row.get("keep_deleted") is None else bool(row["keep_deleted"])
            self.roots[path] = Root(
                int(str(row["id"])),
                Path(path),
                forced,
                str(row["scope"]),
                Zones(Path(path), root_kind, not forced),
                nested_roots(path, [str(r["path"]) for r in roots]),
                tokens,
                keep_deleted=keep,
                keep_secrets=bool(row.get("keep_secrets")),
            )
        return self.roots[path]

    # -- whole roots ---------------------------------------------------------------------
    def index_root(self, path: Path) -> None:
        # What the roots before this one wrote is applied first: a root inside one of them
        # takes its files over (adopt), and must find them stored.
        self.flush()
        self.handled.clear()
        self.holds = Counter()
        root = self.new_root(path)
        existing = {
            r["path"]: StoredFile.row(r) for r in self.writer.execute("files_of_root", {"root_id": root.id})
        }
        broken = {r["path"]: r for r in self.writer.execute("errors_of_root", {"root_id": root.id})}
        self.errors_before = broken
        self.record_errors = {}
        for r in self.writer.execute("record_errors_of_root", {"root_id": root.id}):
            skipped = Skipped(_record(r["path"], r["kind"], r["record"]), r["reason"], True, r["path"])
            self.record_errors.setdefault(r["path"], []).append(skipped)
        seen, unlisted = self._walk(root, root.path, existing)
        entry = self.report.roots[-1]
        entry["holds"] = dict(sorted(self.holds.items()))
        entry["kind"] = root_kind(root.forced, str(entry["kind"] or ""), sorted(self.holds))
        if self.report.stopped:
            return
        self._remove_unseen(root, existing, seen, unlisted)
        for file_path in broken:
            if file_path not in seen:
                self.queue_write(partial(self.writer.clear_error, file_path))
        self.queue_write(partial(self.writer.root_indexed, root.id))

    def _remove_unseen(
        self, root: Root, existing: dict[str, StoredFile], seen: set[str], unlisted: list[str]
    ) -> None:
        """Files indexed before but not found now are gone -- unless their folder could not be
        listed -- or kept, marked deleted, if the root keeps them and they did not move."""
        for file_path, stored in existing.items():
            if (
                file_path in seen
                or file_path in self.handled
                or any(file_path.startswith(u) for u in unlisted)
            ):
                continue
            self.handled.add(file_path)
            if stored.deleted_at is not None:
                continue  # gone before, kept since
            if keeps(root.keep_deleted, stored.kind) and not self.arrivals.moved(stored):
                self.queue_write(partial(self.writer.mark_deleted, stored.id))
                self.report.kept_deleted += 1
            else:
                self.queue_write(partial(self.writer.delete, stored.id))
                self.report.removed += 1

    # -- one changed path ----------------------------------------------------------------
    def index_path(self, root: Root, path: Path) -> None:
        rel = os.path.relpath(path, root.path).replace(os.sep, "/")
        # A path that is gone is tested as the folder it may have been: what is stored under
        # it goes, and an ignored file never was stored.
        folder = not os.path.lexists(path) or (path.is_dir() and not path.is_symlink())
        if rel != "." and self.ignored(rel, is_dir=folder):
            return
        if root.path.is_dir() and path != root.path:
            zone, zone_kind = root.zones.of(path.parent)
            manifest = sources()[zone_kind].manifest(zone) if zone_kind and not root.forced else None
            if manifest is not None and sources()[str(zone_kind)].aggregate:
                path = manifest  # any change inside an archive is a change of the archive
                rel = os.path.relpath(path, root.path).replace(os.sep, "/")
        if path.is_dir() and not path.is_symlink():
            existing = {
                r["path"]: StoredFile.row(r) for r in self.writer.execute("files_under", {"path": str(path)})
            }
            seen, unlisted = self._walk(root, path, existing)
            self._remove_unseen(root, existing, seen, unlisted)
        elif os.path.lexists(path):
            if str(path) in self.handled:
                return
            self.handled.add(str(path))
            found = stat_file(path, rel, root.path)
            candidates = root.candidates(found) if found is not None else None
            if candidates:
                zone, kinds, found = candidates
                self.report.seen += 1
                self._file(root, zone, found, kinds, self.writer.stored(str(path)), self._broken(str(path)))
        else:
            gone = {
                r["path"]: StoredFile.row(r) for r in self.writer.execute("files_under", {"path": str(path)})
            }
            self._remove_unseen(root, gone, set(), [])
            for r in self.writer.execute("errors_under", {"path": str(path)}).fetchall():
                self.queue_write(partial(self.writer.clear_error, r["path"]))

    def _broken(self, path: str) -> sqlite3.Row | None:
        "The problem recorded for this file before this run, if any."
        if self.errors_before is not None:
            return self.errors_before.get(path)
        return self.writer.execute("error_by_path", {"path": path}).fetchone()

    # -- files ---------------------------------------------------------------------------
    def _walk(self, root: Root, start: Path, existing: dict[str, StoredFile]) -> tuple[set[str], list[str]]:
        "Process every source file under ``start``; return the paths seen and unlistable folders."
        plan: list[tuple[Found, Path, list[SourceKind]]] = []
        seen: set[str] = set()
        unlisted: list[str] = []
        for found in walk(root.path, root.nested, start=start, ignored=self.ignored):
            seen.add(str(found.path))
            if str(found.path) in self.handled:
                continue
            self.handled.add(str(found.path))
            if found.problem and found.problem.startswith("cannot list folder"):
                unlisted.append(str(found.path) + os.sep)
                self._skip(root, found, found.problem, remember_stat=False)
                continue
            candidates = root.candidates(found)
            if candidates:
                zone, kinds, found = candidates
                plan.append((found, zone, kinds))
        for done, (found, zone, kinds) in enumerate(plan, 1):
            if self.stop():
                break
            self.report.seen += 1
            path = str(found.path)
            self._file(root, zone, found, kinds, existing.get(path), self._broken(path))
            if self.progress:
                self.progress(done, len(plan))
        return seen, unlisted

    def _file(
        self,
        root: Root,
        zone: Path,
        found: Found,
        candidates: list[SourceKind],
        stored: StoredFile | None,
        broken: sqlite3.Row | None,
    ) -> None:
        "Carry out what ``decide`` says one file needs; its writes are queued."
        if stored is None and not found.problem:
            stored = self._adopted(root, found)
        names = {k.name for k in candidates}
        limit = self.options.max_file_size or max(k.max_bytes for k in candidates)
        recorded = (
            Broken(broken["reason"], broken["size"], broken["mtime_ns"]) if broken is not None else None
        )
        match decide(found, stored, recorded, names, limit, root.stale):
            case Problem(reason):
                self._skip(root, found, reason)
            case Unchanged(kind):
                self._unchanged(kind, stored)
            case KnownBroken(reason):
                self.report.skipped.append(Skipped(str(found.path), reason, known=True))
            case TooLarge(reason):
                self._skip(root, found, reason, remember_stat=False)
            case Append() if stored is not None and self._append(root, zone, found, stored, names):
                pass
            case _:  # Read, or an Append that must read the file whole after all
                self._read(root, zone, found, candidates, stored, limit)

    def _adopted(self, root: Root, found: Found) -> StoredFile | None:
        "The file's row when another root indexed it before: this root's from now on."
        stored = self.writer.stored(str(found.path))
        if stored is not None:
            self.queue_write(partial(self.writer.adopt, stored, root.id, found.rel_path))
        return stored

    def _unchanged(self, kind: str, stored: StoredFile | None) -> None:
        "Count a file that needs nothing: its kind's, and the records still skipped in it (known)."
        self.report.unchanged += 1
        self.holds[kind] += 1
        if stored is not None:
            self.report.skipped += self._record_errors(stored)

    def _read(
        self,
        root: Root,
        zone: Path,
        found: Found,
        candidates: list[SourceKind],
        stored: StoredFile | None,
        limit: int,
    ) -> None:
        "Read a file and hash it; parse it when its bytes changed; queue what it writes."
        names = {k.name for k in candidates}
        # A kind that opens the file itself (a database) is handed its head alone; its change
        # is its stat's (with its companions': roots.Root.candidates), not its bytes'.
        opens_itself = any(k.opens_itself for k in candidates)
        try:
            with open(found.path, "rb") as f:
                # Sized by the stat (read(limit + 1) allocates 5 MB for every small file), and
                # only the head first: a file no kind recognises there is not read whole.
                data = f.read(min(found.size + 1, SNIFF_BYTES))
                if stored is None and not any(k.sniff(data) for k in candidates):
                    return  # named like a source, is not one (a JSONL dataset)
                if not opens_itself:
                    data += f.read(min(found.size, limit) + 1 - len(data))
                    if len(data) > found.size:  # it grew since the stat: read on, to the limit
                        data += f.read(limit + 1 - len(data))
        except OSError as exc:  # permissions can be fixed without touching the file: re-check next run
            self._skip(root, found, f"cannot read file: {exc.strerror}", remember_stat=False)
            return
        seen = f"{found.size}:{found.mtime_ns}".encode() if opens_itself else data
        sha = hashlib.sha256(seen).hexdigest()
        # its manifest's bytes (an archive's), or its head (a database), are not all of it
        whole_folder = any(k.aggregate for k in candidates) or opens_itself
        same_bytes = stored is not None and stored.sha256 == sha and stored.kind in names
        if same_bytes and stored is not None and not whole_folder and not root.stale:
            self.queue_write(partial(self.writer.touch, stored, found))
            self._unchanged(stored.kind, stored)
            return
        kind = next((k for k in candidates if k.sniff(data)), None)
        if kind is None:  # named like a source, but is not one (a JSON that is no chat export)
            if stored is not None and stored.kind in names:
                # It was one: emptied or cut short, perhaps mid-rewrite. Keep its last good
                # version and say so, as for any file that stops parsing.
                why = f"no longer reads as a {stored.kind} file (empty or cut short?)"
                self._skip(root, found, why + "; its last good version stays indexed")
            elif stored is not None:
                self.queue_write(partial(self.writer.delete, stored.id))
                self.report.removed += 1
            return
        rel = os.path.relpath(found.path, zone).replace(os.sep, "/")
        source = SourceFile(found.path, rel, zone, data, root.scope, root.chunk_tokens)
        if kind.opens_itself and stored is not None and stored.kind == kind.name and not root.stale:
            tail = self.writer.tail(stored.id)  # what it read last time: it reads what changed since
            source.state = tail.state if tail is not None and not stored.deleted_at else None
        try:
            parsed = kind.parse(source)
        except IngestError as exc:
            self._skip(root, found, str(exc))
            return
        except Exception as exc:  # a parser bug must not stop the run; under test it must show
            if self.raise_errors:
                raise
            self._skip(
                root, found, f"unexpected {type(exc).__name__}: {exc} (a memdex bug: please report it)"
            )
            return
        # Records skipped as before in a file read again with its stat unchanged (by newer
        # parsers) are known; in a file that changed, they are news.
        before = (
            {(s.path, s.reason) for s in self._record_errors(stored)}
            if same_stat(found, stored) and stored
            else set()
        )
        self.queue_write(
            partial(
                self.writer.replace, root.id, found, kind.name, sha, stored, parsed, not root.keep_secrets
            ),
            len(data),
        )
        if stored is None:
            self.arrivals.add(found, sha)
        self.holds[kind.name] += 1
        self.report.documents += len(parsed.documents)
        for rec, why in parsed.skipped:
            name = _record(str(found.path), kind.name, rec)
            self.report.skipped.append(Skipped(name, why, (name, why) in before, str(found.path)))
        if stored is None:
            self.report.added += 1
        else:
            self.report.updated += 1

    def _append(self, root: Root, zone: Path, found: Found, stored: StoredFile, names: set[str]) -> bool:
        """A session log that only grew: read the new bytes on from where it stopped. False
        when it must be read whole: no saved place, its prefix changed, grown past
        ``WHOLE_READ_GROWTH`` times its last whole read, or records the reader cannot follow."""
        kind = sources().get(stored.kind)
        if kind is None or not kind.appendable or stored.kind not in names:
            return False
        tail = self.writer.tail(stored.id)
        if tail is None or found.size > WHOLE_READ_GROWTH * tail.whole_size or tail.offset > found.size:
            return False
        start = max(0, tail.offset - TAIL_BYTES)
        try:
            with open(found.path, "rb") as f:
                f.seek(start)
                prefix_end = f.read(tail.offset - start)
                data = f.read(found.size - tail.offset)
        except OSError:
            return False
        if tail_hash(prefix_end) != tail.tail_sha:
            return False  # rewritten, not appended to
        rel = os.path.relpath(found.path, zone).replace(os.sep, "/")
        source = SourceFile(found.path, rel, zone, data, root.scope, root.chunk_tokens)
        try:
            appended = kind.parse_append(source, tail)
        except (WholeReadNeeded, IngestError):
            return False
        except Exception:
            if self.raise_errors:
                raise
            return False  # the whole read reports it
        new_tail = Tail(
            appended.offset,
            appended.lines,
            tail.whole_size,
            tail_hash(prefix_end + data[: appended.offset - tail.offset]),
            appended.state,
        )
        # Not the file's SHA-256 (that would read it all): a hash chained from the last one.
        sha = hashlib.sha256(stored.sha256.encode() + data).hexdigest()
        if appended.offset == tail.offset:  # only a line still being written: nothing yet
            self._unchanged(stored.kind, None)
            return True
        # Written now, not queued: if the document is not there to add to, read it whole.
        self.flush()
        if not self.writer.append(root.id, stored, found, sha, appended, new_tail, not root.keep_secrets):
            return False
        self.writer.commit()
        self.report.updated += 1
        self.holds[stored.kind] += 1
        self.report.documents += 1 if appended.document.chunks else 0
        self.report.skipped += [
            Skipped(_record(str(found.path), kind.name, rec), why, file=str(found.path))
            for rec, why in appended.skipped
        ]
        return True

    def _record_errors(self, stored: StoredFile) -> list[Skipped]:
        "Records still skipped inside an unchanged file: known problems."
        if self.record_errors is not None:
            return list(self.record_errors.get(stored.path, []))
        rows = self.writer.execute("record_errors_of_file", {"file_id": stored.id})
        return [
            Skipped(_record(stored.path, stored.kind, r["record"]), r["reason"], True, stored.path)
            for r in rows
        ]

    def _skip(self, root: Root, found: Found, reason: str, remember_stat: bool = True) -> None:
        """Record a file that cannot be indexed. Known when it was recorded before for the same
        reason with the same stat (a reason checked every run, the size limit, keeps none)."""
        before = self._broken(str(found.path))
        known = (
            before is not None
            and before["reason"] == reason
            and (
                before["size"] is None or (before["size"], before["mtime_ns"]) == (found.size, found.mtime_ns)
            )
        )
        self.report.skipped.append(Skipped(str(found.path), reason, known))
        self.queue_write(partial(self.writer.record_error, root.id, found, reason, remember_stat))


def _record(path: str, kind: str, record: str) -> str:
    "A record inside a file, named as its kind names them: ``path#conversation``, ``path:line``."
    source = sources().get(kind)
    return f"{path}{source.record_separator if source else '#'}{record}"


__all__ = ["IndexReport", "Skipped", "detect_scope", "index_changes", "index_known_roots", "index_paths"]
