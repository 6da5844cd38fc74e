"""Chunk vectors in the index: how they are stored (int8), loaded, and searched (brute force).

A search loads every vector of its model once per process into one float32 matrix, kept
while the index's vectors and chunks are unchanged (:func:`matrix` checks a cheap stamp on
each call), so the nearest chunks of a query cost one matrix-vector product.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdex.store import db

FloatArray = NDArray[np.float32]


def text_hash(text: str) -> str:
    "The key of what was embedded: a changed text gets a new vector, an unchanged one never."
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def quantize(vector: FloatArray) -> tuple[float, bytes]:
    "One vector as (scale, int8 bytes): value = byte x scale."
    peak = float(np.max(np.abs(vector))) or 1.0
    scale = peak / 127.0
    return scale, np.round(vector / scale).astype(np.int8).tobytes()


def dequantize(scale: float, data: bytes) -> FloatArray:
    return np.frombuffer(data, dtype=np.int8).astype(np.float32) * np.float32(scale)


@dataclass
class Matrix:
    "Every vector of one model: chunk ids and their unit vectors, row for row."

    chunk_ids: NDArray[np.int64]
    vectors: FloatArray
    stamp: tuple[Any, ...]

    def nearest(self, query: FloatArray, k: int) -> list[tuple[int, float]]:
        "The ``k`` chunks most similar to ``query`` (a unit vector), as (chunk id, cosine)."
        if not len(self.chunk_ids):
            return []
        scores = self.vectors @ query
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(self.chunk_ids[i]), float(scores[i])) for i in top]


_cache: dict[tuple[str, str], Matrix] = {}
_lock = threading.Lock()


def _stamp(conn: sqlite3.Connection, model: str) -> tuple[Any, ...]:
    return tuple(conn.execute(db.query("vectors_stamp"), {"model": model}).fetchone())


def _database(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(Path(row[2]).resolve()) if row and row[2] else f"memory:{id(conn)}"


def matrix(conn: sqlite3.Connection, model: str) -> Matrix:
    "The vectors of ``model`` in this index, loaded once and reloaded only when they change."
    key = (_database(conn), model)
    stamp = _stamp(conn, model)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached.stamp == stamp:
            return cached
    rows = conn.execute(db.query("vectors_load"), {"model": model}).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if rows:
        dim = len(rows[0][2])
        raw = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int8).reshape(len(rows), dim)
        scales = np.fromiter((r[1] for r in rows), dtype=np.float32, count=len(rows))
        vectors = raw.astype(np.float32) * scales[:, None]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms == 0, 1, norms)
    else:
        vectors = np.zeros((0, 0), dtype=np.float32)
    loaded = Matrix(ids, vectors, stamp)
    with _lock:
        _cache[key] = loaded
    return loaded


def forget(conn: sqlite3.Connection) -> None:
    "Drop this index's cached matrices (after --drop, or a test that rewrites the file)."
    path = _database(conn)
    with _lock:
        for key in [k for k in _cache if k[0] == path]:
            del _cache[key]
