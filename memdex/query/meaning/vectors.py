"""Chunk vectors in the index: how they are stored (int8), and the matrix searches read them as.

SQLite is the source of truth: ``chunk_vectors`` holds each chunk's vector (or its windows'),
and ``vectors_version`` a number drawn anew whenever what a search by meaning reads changes
(migration 0010's triggers). The matrix of the current model is also kept in a file beside
the index, ``<index>.vectors`` (query/meaning/matrix.py), made for one version: whoever writes
vectors writes it (:func:`refresh`, called by ``memdex embed`` and the watcher), and a search
memory-maps it only while the index still has that version. A search that finds it missing,
stale or corrupt reads the vectors from SQLite as before, and writes the file for the next
search when it can (a search of an index on read-only media cannot, and need not).

Each process keeps the matrix it has read; one read of ``vectors_version`` per search says
whether it is still current, so a resident process (the MCP server, the watcher) pays nothing
more until the index changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import stat
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from memdex.errors import DatabaseError
from memdex.query.meaning.matrix import Matrix, build, kept_rows, merge, open_file, save
from memdex.query.meaning.matrix_file import SUFFIX, current_version, matrix_path
from memdex.store import db

FloatArray = NDArray[np.float32]
log = logging.getLogger("memdex.meaning")


def text_hash(text: str) -> str:
    "The key of what was embedded: a changed text gets a new vector, an unchanged one never."
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def quantize(vectors: FloatArray) -> tuple[float, bytes]:
    """One vector, or a chunk's vectors (one per window, a row each), as (scale, int8 bytes):
    value = byte x scale, one scale for them all."""
    peak = float(np.max(np.abs(vectors))) or 1.0
    scale = peak / 127.0
    return scale, np.round(vectors / scale).astype(np.int8).tobytes()


def row_keys(scales: NDArray[np.float64]) -> NDArray[np.uint64]:
    """Which vector a matrix holds for each chunk, in 64 bits: the bits of its stored scale. A
    chunk's text never changes (a changed text is a new chunk), so its vector of a model is
    the same unless made again by another encoder, whose vector's scale differs; a chunk whose
    key is unchanged still has the rows a matrix holds for it."""
    return np.ascontiguousarray(scales, dtype=np.float64).view(np.uint64)


def current(conn: sqlite3.Connection, model: str, dim: int, version: int, kept: Matrix | None) -> Matrix:
    """The vectors of ``model`` at ``version``: the matrix file's, memory-mapped, when it is of
    that version; else read anew (only the vectors ``kept`` -- a matrix of another version,
    or the stale file -- lacks) and written to the file for the next search. The engine
    (``query.engine``) keeps what this returns."""
    path = matrix_path(conn)
    found, state = open_file(path, model, version) if path else (None, "missing")
    if found is None:
        found = load(conn, model, dim, kept or _stale_file(path, model, state))
        if path is not None and found.version == version and _writable(path):
            found = _save(path, found, f"the matrix file was {state}")[1]
    return found


def _stale_file(path: Path | None, model: str, state: str) -> Matrix | None:
    "The matrix file of another version, whole: what a new matrix can copy unchanged rows from."
    return open_file(path, model, None)[0] if path is not None and state == "stale" else None


def load(conn: sqlite3.Connection, model: str, dim: int, base: Matrix | None = None) -> Matrix:
    """Every vector of ``model`` whose chunk is still in the index, read from SQLite at one
    version; given ``base`` (a matrix of another version), only the vectors it lacks are read
    (their keys say which: row_keys), the rest copied from it."""
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: a 100,000-row read is a third faster
    usable = base is not None and base.model == model and base.dim == dim
    # The version before and after the reads: equal, the rows are of that version (a version
    # is never drawn twice). No transaction of our own: the connection may be shared by threads.
    for _ in range(3):
        version = current_version(conn)
        query = "vectors_keys" if usable else "vectors_load"
        rows = cursor.execute(db.query(query), {"model": model}).fetchall()
        ids, documents, keys = _columns(rows)
        fresh: dict[int, bytes] = {}
        if usable:
            assert base is not None
            kept, _ = kept_rows(base, ids, documents, keys)
            wanted = json.dumps(ids[~kept].tolist())
            fresh = dict(cursor.execute(db.query("vectors_of_chunks"), {"model": model, "ids": wanted}))
        if current_version(conn) == version:
            break
    else:  # written to all the while: one read, good for this search, kept for none
        version, usable = None, False
        rows = cursor.execute(db.query("vectors_load"), {"model": model}).fetchall()
        ids, documents, keys = _columns(rows)
    try:
        if usable:
            assert base is not None
            return merge(base, version, ids, documents, keys, fresh, dim)
        return build(model, version, ids, documents, keys, [r[3] for r in rows], dim)
    except ValueError as exc:
        raise DatabaseError(
            f"{db.path_of(conn)}: {exc} ({model}): run `memdex embed --drop` and `memdex embed` again"
        ) from None


def _columns(rows: list[tuple]) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.uint64]]:
    "Chunk ids, document ids and row keys of rows (chunk_id, document_id, scale, ...)."
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    documents = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    scales = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
    return ids, documents, row_keys(scales)


def refresh(conn: sqlite3.Connection, model: str) -> str:
    """Make the matrix file current for ``model`` (after vectors were written); say what became
    of it: "current" (it was), "written", or "not written: why" (searches then read SQLite).
    Only the vectors that changed are read: the rest come from the matrix before."""
    path = matrix_path(conn)
    if path is None:
        return "not written: the index is in memory"
    row = conn.execute(db.query("embedding_model_dim"), {"name": model}).fetchone()
    if row is None:
        return "not written: no vectors of this model"
    found, state = open_file(path, model, current_version(conn))  # the whole file checked
    if found is not None:
        return "current"
    loaded = load(conn, model, row[0], _stale_file(path, model, state))
    if loaded.version is None:
        return "not written: vectors were being written all the while"
    return _save(path, loaded, "vectors changed")[0]


def _save(path: Path, m: Matrix, why: str) -> tuple[str, Matrix]:
    """Write ``m`` to the matrix file; say how it went, and give the matrix to keep: the file,
    memory-mapped, once written (its pages are the page cache's, not this process's)."""
    index = path.with_name(path.name.removesuffix(SUFFIX))
    try:
        # Readable by whoever may read the index: its own permissions, less execute.
        save(path, m, stat.S_IMODE(index.stat().st_mode) & 0o666)
    except OSError as exc:  # a full disk or a folder we may not write: searches read SQLite
        log.warning("matrix file %s not written (%s): %s", path, why, exc)
        return f"not written: {exc.strerror or exc}", m
    _remove_leftovers(path)
    mapped, _ = open_file(path, m.model, m.version)
    return "written", mapped or m


LEFTOVER_SECONDS = 3600  # a temporary matrix file this old was a writer's killed mid-write


def _remove_leftovers(path: Path) -> None:
    "Temporary files of writers killed while writing (save writes one, then renames it)."
    now = time.time()
    for old in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            if now - old.stat().st_mtime > LEFTOVER_SECONDS:
                old.unlink()
        except OSError:  # gone already, or another's to remove: it is only a leftover
            continue


def _writable(path: Path) -> bool:
    return os.access(path.parent, os.W_OK)


def remove_file(conn: sqlite3.Connection) -> None:
    "Remove this index's matrix file (after ``memdex embed --drop``)."
    path = matrix_path(conn)
    if path is not None:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:  # in use elsewhere (Windows): stale now, so never read again
            log.warning("matrix file %s not removed: %s", path, exc)
