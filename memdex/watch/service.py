"""``memdex watch``: keep an index current as files change, until told to stop.

The service owns the writer lock for as long as it runs. On start it watches every root, then
catches up with what changed while it was off (a stat per file; a hash only where size or
mtime changed). Then it applies each debounced batch of changed paths with
``index_changes``, in short transactions, serves ``memdex index`` requests handed to it, and
every few seconds re-watches roots that were deleted and came back. A failed batch does not
stop it: it logs, waits, and resynchronises by catch-up. SIGTERM (and SIGHUP) stop it with
exit code 0, SIGINT with 130; the batch in flight is committed first. A ``kill -9`` loses
at most the uncommitted transaction, which the next start's catch-up redoes.

What it is doing is written to ``<db>.watch.json`` for ``memdex status``.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from memdex.errors import MemdexError, raise_errors
from memdex.ingest.pipeline import IndexReport, index_changes, index_known_roots, index_paths
from memdex.store import db
from memdex.store.lock import WriterLock
from memdex.utils import atomic_write, utc_stamp
from memdex.watch import handoff
from memdex.watch.embedding import MeaningFollower
from memdex.watch.events import Watcher

RECHECK_SECONDS = 2.0
POLL_FALLBACK_SECONDS = 10.0  # roots the OS will not watch are re-scanned this often
RETRY_SECONDS = 1.0
MAX_ERRORS = 20
log = logging.getLogger("memdex.watch")


def state_path(db_path: Path) -> Path:
    return Path(f"{db_path}.watch.json")


def read_state(db_path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(state_path(db_path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class WatchService:
    def __init__(
        self,
        db_path: Path,
        new_roots: list[Path],
        *,
        debounce: float = 0.15,
        kind: str | None = None,
        scope: str | None = None,
    ) -> None:
        self.db_path = db_path
        self.new_roots = new_roots
        self.kind, self.scope = kind, scope
        self.debounce = debounce
        self.exit_code = 0
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._first_seen: float | None = None
        self._resync = False
        self._polled: dict[str, float] = {}  # roots the OS refused to watch -> last scan
        self._opened: tuple[sqlite3.Connection, WriterLock] | None = None  # open() until run()
        self.meaning = MeaningFollower(db_path)  # embeds what was written, when the index has vectors
        self.state: dict[str, Any] = {
            "pid": os.getpid(),
            "db": str(db_path),
            "started_at": utc_stamp(),
            "last_event_at": None,
            "queue": 0,
            "last_batch": None,
            "catch_up": None,
            "errors": [],
        }

    # -- lifecycle -------------------------------------------------------------------------
    def stop(self, exit_code: int = 0) -> None:
        "Ask the service to finish: the batch in flight is committed, then run() returns."
        self.exit_code = exit_code
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def wait_ready(self, timeout: float) -> bool:
        "True once the start-up catch-up is done and events are being followed."
        return self._ready.wait(timeout)

    def open(self) -> None:
        """The index and its writer lock, before anything else (``run`` calls it, or whoever runs
        the service first, as the server does): a --db that is no index, or one in a folder that
        cannot be written, fails here, before a lock, state file or socket is left beside it."""
        if self._opened is not None:
            return
        conn = db.connect(self.db_path)
        lock = WriterLock(self.db_path, "watch")
        try:
            lock.acquire()
        except BaseException:
            conn.close()
            raise
        self._opened = (conn, lock)

    def release(self) -> None:
        "Give back what ``open`` took, when ``run`` is not going to."
        if self._opened is not None:
            conn, lock = self._opened
            self._opened = None
            conn.close()
            lock.release()

    def run(self) -> int:
        self.open()
        assert self._opened is not None
        conn, lock = self._opened
        self._opened = None
        skip = [str(self.db_path), str(handoff.requests_dir(self.db_path))]
        watcher = Watcher(self._changed, self.debounce, skip=skip)
        try:
            self.meaning.start()
            if self.new_roots:
                report = index_paths(conn, self.new_roots, kind=self.kind, scope=self.scope)
                log.info("indexed new roots: %s", _summary(report))
            watcher.start()
            self.watcher, self.conn = watcher, conn
            self._check_roots(catch_up=False)
            self._catch_up()
            self._save()
            self._ready.set()
            self._loop()
        finally:
            self._ready.set()
            watcher.stop()
            self.meaning.stop()
            conn.close()
            self.state["stopped_at"] = utc_stamp()
            self._save()
            lock.release()
            log.info("stopped")
        return self.exit_code

    def _loop(self) -> None:
        last_check = time.monotonic()
        while not self._stop.is_set():
            batch, first = self._take(timeout=0.5)
            if self._resync and not self._stop.is_set():
                self._catch_up()
            if batch:
                self._apply(batch, first)
            for request in handoff.pending(self.db_path):
                handoff.serve(self.conn, request, self._watch_new)
                self.meaning.poke()  # what `memdex index` handed over gets its vectors here
            if time.monotonic() - last_check >= RECHECK_SECONDS:
                self._check_roots(catch_up=True)
                last_check = time.monotonic()
            self._save()

    def _stopping(self) -> bool:
        return self._stop.is_set()

    # -- events ----------------------------------------------------------------------------
    def _changed(self, paths: set[str], first_seen: float) -> None:
        "Called from the watcher's thread with each debounced batch."
        with self._cond:
            self._pending |= paths
            self._first_seen = min(self._first_seen or first_seen, first_seen)
            self.state["last_event_at"] = utc_stamp(time.time())
            self._cond.notify()

    def _take(self, timeout: float) -> tuple[set[str], float | None]:
        "Everything pending (bursts that arrived while the last batch ran come as one)."
        with self._cond:
            if not self._pending and not self._stop.is_set():
                self._cond.wait(timeout)
            batch, self._pending = self._pending, set()
            first, self._first_seen = self._first_seen, None
            self.state["queue"] = 0
            return batch, first

    def _apply(self, batch: set[str], first_seen: float | None) -> None:
        try:
            report = index_changes(self.conn, batch, should_stop=self._stopping)
        except Exception as exc:  # the daemon's boundary: no batch may stop it
            self._failed(f"could not apply {len(batch)} changed paths", exc)
            return
        lag = time.time() - first_seen if first_seen else 0.0
        self.state["last_batch"] = {
            "at": utc_stamp(),
            "paths": len(batch),
            **_counts(report),
            "seconds": report.seconds,
            "lag_s": round(lag, 3),
        }
        if report.changed or report.new_problems:
            log.info("%s (lag %.2f s)", _summary(report), lag)
        if report.changed:
            self.meaning.poke()
        _log_problems(report)

    def _catch_up(self, roots: list[str] | None = None) -> None:
        self._resync = False
        try:
            report = index_known_roots(self.conn, roots, should_stop=self._stopping)
        except Exception as exc:  # the daemon's boundary
            self._failed("catch-up failed", exc)
            return
        self.state["catch_up"] = {"at": utc_stamp(), **_counts(report), "seconds": report.seconds}
        log.info("caught up: %s", _summary(report))
        self.meaning.poke()
        _log_problems(report)

    def _failed(self, what: str, exc: Exception) -> None:
        """Log it (with the traceback if it is not an expected failure), wait, catch up later.

        Under MEMDEX_RAISE_ERRORS a bug is not survived: it is recorded, then propagates out of
        ``run()`` (which still stops the watcher and releases the lock), so no test passes
        over it.
        """
        if isinstance(exc, (MemdexError, sqlite3.Error, OSError)):
            self._error(f"{what}: {exc}; will catch up")
        elif raise_errors():
            self._error(f"{what}: unexpected {type(exc).__name__}: {exc}; stopping (MEMDEX_RAISE_ERRORS)")
            raise exc
        else:
            log.exception("%s: unexpected %s (a memdex bug: please report it)", what, type(exc).__name__)
            self._error(f"{what}: unexpected {type(exc).__name__}: {exc}; will catch up")
        self._resync = True
        self._stop.wait(RETRY_SECONDS)

    # -- roots -----------------------------------------------------------------------------
    def _roots(self) -> list[str]:
        return [r["path"] for r in self.conn.execute(db.query("root_paths"))]

    def _watch_new(self, roots: list[str]) -> None:
        for root in roots:
            self._watch(Path(root))

    def _watch(self, root: Path) -> bool:
        try:
            self.watcher.watch(root)
        except OSError as exc:
            if str(root) not in self._polled:
                self._error(
                    f"cannot watch {root} ({exc.strerror or exc}); re-scanning it every "
                    f"{POLL_FALLBACK_SECONDS:g} s instead"
                )
            self._polled.setdefault(str(root), 0.0)
            return False
        self._polled.pop(str(root), None)
        return True

    def _check_roots(self, catch_up: bool) -> None:
        """Watch roots that are not watched (new, or deleted and back); poll those the OS
        refuses; stop watching roots that were forgotten (`memdex roots remove`)."""
        self.state["roots"] = self._roots()
        for gone in set(self.watcher.watches) - set(self.state["roots"]):
            self.watcher.unwatch(Path(gone))
            log.info("stopped watching %s: it is no longer a root", gone)
        for gone in set(self._polled) - set(self.state["roots"]):
            del self._polled[gone]
        for path in self.state["roots"]:
            root = Path(path)
            if not root.exists():
                if str(root) in self.watcher.watches:
                    self.watcher.unwatch(root)
                    log.warning("root %s is gone; watching for it to come back", root)
                continue
            if str(root) in self._polled:
                if time.monotonic() - self._polled[str(root)] >= POLL_FALLBACK_SECONDS:
                    if not self._watch(root):
                        self._polled[str(root)] = time.monotonic()
                    self._catch_up([str(root)])
                continue
            if not self.watcher.is_alive(root):
                was_watched = str(root) in self.watcher.watches
                if self._watch(root) and catch_up:
                    log.info("watching %s%s", root, " again" if was_watched else "")
                    self._catch_up([str(root)])

    # -- status ----------------------------------------------------------------------------
    def _error(self, message: str) -> None:
        log.error(message)
        self.state["errors"] = [*self.state["errors"], {"at": utc_stamp(), "message": message}][-MAX_ERRORS:]

    def _save(self) -> None:
        with self._cond:
            self.state["queue"] = len(self._pending)
            lag = time.time() - self._first_seen if self._first_seen else 0.0
        self.state["lag_s"] = round(lag, 3)
        self.state["heartbeat_at"] = utc_stamp()
        self.state["meaning"] = dict(self.meaning.state)
        path = state_path(self.db_path)
        try:
            atomic_write(path, json.dumps(self.state, indent=1, default=str))
        except OSError as exc:  # a full disk must not stop the watcher; status will look stale
            log.warning("cannot write %s: %s", path, exc)


def _counts(report: IndexReport) -> dict[str, int]:
    "``skipped``: problems found by this run; ``known``: those found before, unchanged."
    return {
        "added": report.added,
        "updated": report.updated,
        "removed": report.removed,
        "kept_deleted": report.kept_deleted,  # gone, kept marked 'source deleted'
        "unchanged": report.unchanged,
        "skipped": len(report.new_problems),
        "known": len(report.known_problems),
    }


def _summary(report: IndexReport) -> str:
    c = _counts(report)
    known = f" ({c['known']} known problems: memdex status lists them)" if c["known"] else ""
    return (
        f"{report.seen} files: {c['added']} added, {c['updated']} updated, {c['removed']} removed, "
        + (f"{c['kept_deleted']} deleted and kept, " if c["kept_deleted"] else "")
        + f"{c['unchanged']} unchanged, {c['skipped']} skipped in {report.seconds:.2f} s{known}"
    )


def _log_problems(report: IndexReport) -> None:
    "New problems one by one; known ones are in the summary's count, and in `memdex status`."
    for skipped in report.new_problems:
        log.warning("skipped %s: %s", skipped.path, skipped.reason)
    for root in report.missing_roots:
        log.warning(
            "root %s is missing; its documents are kept until it returns (`memdex roots remove %s` "
            "forgets it)",
            root,
            root,
        )
