"""``memdex index`` while ``memdex watch`` runs: the indexer hands its work to the watcher.

Only one process writes to an index. An indexer that finds the writer lock held by a watcher
drops a request (a JSON file) into ``<db>.requests/``; the watcher picks it up within half a
second, runs it exactly as ``memdex index`` would -- registering and watching new roots --
and writes its report beside the request as ``<name>.done.json``, which the indexer prints.
``memdex roots remove`` hands its work over the same way (a request with ``forget``), as does
``memdex roots purge-deleted`` (``purge_deleted``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdex.errors import MemdexError
from memdex.ingest.departures import purge_deleted
from memdex.ingest.pipeline import Progress, index_known_roots, index_paths
from memdex.ingest.roots import forget_root
from memdex.store import db
from memdex.store.lock import WriterBusy, WriterLock, holder
from memdex.utils import atomic_write

POLL_SECONDS = 0.1


def requests_dir(db_path: Path) -> Path:
    return Path(f"{db_path}.requests")


def submit(db_path: Path, request: dict[str, Any]) -> Path:
    "Leave a request for the watcher; returns the path its answer will take."
    folder = requests_dir(db_path)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{time.time():.6f}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    atomic_write(folder / f"{name}.json", json.dumps(request))  # the watcher never reads half of one
    return folder / f"{name}.done.json"


def wait(db_path: Path, answer: Path, watcher_pid: int | None) -> dict[str, Any]:
    "Wait for the watcher's answer; fail clearly if the watcher goes away first."
    while not answer.exists():
        current = holder(db_path)
        if not current or current.get("pid") != watcher_pid:
            raise MemdexError(
                f"memdex watch (pid {watcher_pid}) stopped before it answered; run memdex index again."
            )
        time.sleep(POLL_SECONDS)
    result = json.loads(answer.read_text())
    answer.unlink()
    if "error" in result:
        raise MemdexError(result["error"])
    return dict(result["report"])


def pending(db_path: Path) -> list[Path]:
    "Requests waiting for the watcher, oldest first."
    folder = requests_dir(db_path)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if not p.name.endswith(".done.json"))


def serve(conn: sqlite3.Connection, request_path: Path, on_roots: Callable[[list[str]], None]) -> None:
    "Run one request as the watcher; ``on_roots`` learns the roots it indexed (to watch them)."
    answer = request_path.with_name(request_path.name[: -len(".json")] + ".done.json")
    try:
        request = json.loads(request_path.read_text())
        report = run_request(conn, request)
        on_roots([str(r["path"]) for r in report.get("roots", [])])
        result: dict[str, Any] = {"report": report}
    except (MemdexError, OSError, ValueError, KeyError) as exc:
        result = {"error": str(exc)}
    atomic_write(answer, json.dumps(result, default=str))
    request_path.unlink(missing_ok=True)


def run_request(
    conn: sqlite3.Connection, request: dict[str, Any], progress: Progress | None = None
) -> dict[str, Any]:
    """Run a request: ``forget`` a root, ``purge_deleted`` (the documents kept for deleted
    files, of ``root`` or every root), or index ``paths`` (none: every remembered root)."""
    if request.get("forget"):
        return forget_root(conn, request["forget"])
    if request.get("purge_deleted"):
        return purge_deleted(conn, request.get("root"))
    if request["paths"]:
        report = index_paths(
            conn,
            request["paths"],
            kind=request.get("kind"),
            scope=request.get("scope"),
            max_file_size=request.get("max_file_size"),
            chunk_tokens=request.get("chunk_tokens"),
            keep_deleted=request.get("keep_deleted"),
            keep_secrets=request.get("keep_secrets"),
            progress=progress,
        )
    else:
        report = index_known_roots(conn, progress=progress)
    return report.to_dict()


def index_exclusive(
    db_path: Path,
    request: dict[str, Any],
    progress: Progress | None = None,
    on_handoff: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Index as the only writer: under the writer lock, or through a running watcher.

    ``request`` holds ``paths`` (empty: every remembered root), ``kind``, ``scope`` and
    ``max_file_size`` (or ``forget``: a root to drop, see ``forget_exclusive``). Raises
    WriterBusy when another ``memdex index`` is writing.
    """
    # Opened first: a --db that is no index fails here, before a lock file is left beside it.
    conn = db.connect(db_path)
    try:
        lock = WriterLock(db_path, "index")
        try:
            lock.acquire()
        except WriterBusy as busy:
            if busy.holder.get("role") != "watch":
                raise
            if on_handoff is not None:
                on_handoff(busy.holder)
            return wait(db_path, submit(db_path, request), busy.holder.get("pid"))
        try:
            return run_request(conn, request, progress)
        finally:
            lock.release()
    finally:
        conn.close()


def forget_exclusive(
    db_path: Path, root: str, on_handoff: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    "Forget a root (``ingest.roots.forget_root``) as the only writer, or through a running watcher."
    return index_exclusive(db_path, {"forget": os.path.abspath(root)}, on_handoff=on_handoff)


def purge_exclusive(
    db_path: Path, root: str | None, on_handoff: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Drop the documents kept for deleted files (``ingest.departures.purge_deleted``), of one
    root or all, as the only writer, or through a running watcher."""
    request = {"purge_deleted": True, "root": os.path.abspath(root) if root else None}
    return index_exclusive(db_path, request, on_handoff=on_handoff)
