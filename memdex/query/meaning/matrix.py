"""The vectors of one model as one int8 matrix, searched by brute force, and its file.

Rows are int8 vectors, a chunk's rows together (one, or one per window of its text), chunks
in id order. A row's cosine to a unit query is (row . query) / |row|: the scale a vector was
stored with cancels out, so a row keeps only that one factor. The product runs BLOCK rows at
a time, each block widened to float32 into one reused buffer that stays in the CPU's cache,
then multiplied there. Filters come first: the rows they exclude are never multiplied when
they are most of the matrix, and score -inf otherwise. A chunk scores its best row.

The same arrays are kept in a file beside the index (vectors.py decides when), which a search
memory-maps: starting a process then costs nothing, however many vectors there are. The file
is one header and six arrays, each at a multiple of ALIGN bytes:

    MAGIC, header length (uint32 LE), JSON header {format, model, version, rows, chunks, dim}
    (matrix_file.py reads it, and says where each array is)
    vectors int8 (rows, dim) | factors float32 (rows) | starts int64 (chunks): first row of
    each chunk | chunk ids int64 (chunks) | document ids int64 (chunks) | keys uint64 (chunks):
    what each chunk's rows were made from, so that a matrix made again copies what is unchanged

It is written to a temporary name and renamed into place, so a reader sees a whole file or
the one before; one that fails any check here (size, header, order) is not used.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdex.query.meaning.matrix_file import FORMAT, MAGIC, aligned, file_size, layout, read_header

FloatArray = NDArray[np.float32]
BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]

# Rows multiplied at a time: 256 x 384 float32 is 384 KiB, inside a core's 1-2 MiB L2 cache.
# Over 100,000 x 384 rows of the matrix file, top 100, CPU ms on a quiet machine: blocks of
# 128 15.6, 256 13.9, 512 15.5, 1,024 18.6, 2,048 18.4; float32 rows in memory 16.1 (4x the
# bytes, read out of SQLite first). At load 10: 256 16.3, float32 16.5.
BLOCK = 256


@dataclass
class Matrix:
    "Every vector of one model in one state of the index (``version``), and how to search them."

    model: str
    version: int | None  # None: read while vectors were being written, current for no one
    vectors: NDArray[np.int8]  # (rows, dim)
    factors: FloatArray  # (rows,): 1 / |row|, 0 for a zero row
    starts: IntArray  # (chunks,): each chunk's first row
    chunk_ids: IntArray  # (chunks,), ascending
    document_ids: IntArray  # (chunks,)
    keys: NDArray[np.uint64]  # (chunks,): which vector each chunk's rows were made from (vectors.row_keys)
    source: str = "index"  # "file" when memory-mapped from the matrix file
    _counts: IntArray | None = field(default=None, repr=False)

    @property
    def rows(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def nearest(self, query: FloatArray, k: int, allowed: BoolArray | None = None) -> list[tuple[int, float]]:
        """The ``k`` chunks most similar to ``query`` (a unit vector), as (chunk id, cosine),
        nearest first; with ``allowed`` (a flag per chunk), only among the chunks it allows."""
        if not len(self.chunk_ids) or k < 1:
            return []
        query = np.ascontiguousarray(query, dtype=np.float32)
        rows = None if allowed is None else self._row_flags(allowed)
        scores = self._row_scores(query, rows)
        if self.rows != len(self.chunk_ids):
            scores = np.maximum.reduceat(scores, self.starts)
        candidates = len(scores) if allowed is None else int(np.count_nonzero(allowed))
        k = min(k, candidates)
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(self.chunk_ids[i]), float(scores[i])) for i in top]

    def _row_flags(self, allowed: BoolArray) -> BoolArray:
        if self.rows == len(self.chunk_ids):
            return allowed
        if self._counts is None:
            self._counts = np.diff(self.starts, append=self.rows)
        return np.repeat(allowed, self._counts)

    def _row_scores(self, query: FloatArray, rows: BoolArray | None) -> FloatArray:
        "Each row's cosine to the query; -inf where ``rows`` is False."
        buffer = _buffer(self.dim)
        if rows is not None and np.count_nonzero(rows) * 2 < self.rows:
            # Most rows are filtered out: multiply only the others, gathered a block at a time.
            scores = np.full(self.rows, -np.inf, dtype=np.float32)
            chosen = np.flatnonzero(rows)
            for start in range(0, len(chosen), BLOCK):
                part = chosen[start : start + BLOCK]
                block = buffer[: len(part)]
                np.copyto(block, self.vectors[part], casting="unsafe")
                scores[part] = (block @ query) * self.factors[part]
            return scores
        scores = np.empty(self.rows, dtype=np.float32)
        for start in range(0, self.rows, BLOCK):
            end = min(start + BLOCK, self.rows)
            block = buffer[: end - start]
            np.copyto(block, self.vectors[start:end], casting="unsafe")
            np.matmul(block, query, out=scores[start:end])
        scores *= self.factors
        if rows is not None:
            scores[~rows] = -np.inf
        return scores


_local = threading.local()


def _buffer(dim: int) -> FloatArray:
    "This thread's block buffer: one allocation per thread and dimension, reused by every search."
    held: FloatArray | None = getattr(_local, "buffer", None)
    if held is None or held.shape[1] != dim:
        held = _local.buffer = np.empty((BLOCK, dim), dtype=np.float32)
    return held


def build(
    model: str,
    version: int | None,
    chunk_ids: IntArray,
    document_ids: IntArray,
    keys: NDArray[np.uint64],
    blobs: list[bytes],
    dim: int,
) -> Matrix:
    """A matrix from stored vectors: per chunk (ascending ids), its int8 bytes, one or more
    vectors of ``dim`` one after another."""
    counts = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
    if len(blobs) and (counts.min() < dim or np.any(counts % dim)):
        bad = int(chunk_ids[np.flatnonzero((counts < dim) | (counts % dim != 0))[0]])
        raise ValueError(f"the vector of chunk {bad} is not a whole number of {dim}-dimension vectors")
    counts //= dim
    starts = np.zeros(len(blobs), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    vectors = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(-1, dim)
    factors = np.empty(len(vectors), dtype=np.float32)
    buffer = np.empty((4096, dim), dtype=np.float32)
    for start in range(0, len(vectors), len(buffer)):
        block = buffer[: min(len(buffer), len(vectors) - start)]
        np.copyto(block, vectors[start : start + len(block)], casting="unsafe")
        np.einsum("ij,ij->i", block, block, out=factors[start : start + len(block)])
    np.sqrt(factors, out=factors)
    np.divide(1, factors, out=factors, where=factors > 0)
    return Matrix(model, version, vectors, factors, starts, chunk_ids, document_ids, keys)


def merge(
    base: Matrix,
    version: int | None,
    chunk_ids: IntArray,
    document_ids: IntArray,
    keys: NDArray[np.uint64],
    fresh: dict[int, bytes],
    dim: int,
) -> Matrix:
    """The matrix of ``chunk_ids`` (ascending) as :func:`build` would make it, taking each chunk's
    rows from ``base`` where it holds the chunk with the same key and document, and from
    ``fresh`` (its stored bytes) where not: after a few vectors changed, the rest is copied
    rather than read out of SQLite again."""
    kept, where = kept_rows(base, chunk_ids, document_ids, keys)
    new = np.flatnonzero(~kept)
    added = build(
        base.model,
        version,
        chunk_ids[new],
        document_ids[new],
        keys[new],
        [fresh[int(chunk_ids[i])] for i in new],
        dim,
    )
    counts = np.empty(len(chunk_ids), dtype=np.int64)
    counts[kept] = np.diff(base.starts, append=base.rows)[where[kept]]
    counts[new] = np.diff(added.starts, append=added.rows)
    starts = np.zeros(len(chunk_ids), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    vectors = np.empty((int(counts.sum()), dim), dtype=np.int8)
    factors = np.empty(len(vectors), dtype=np.float32)
    parts = ((base, kept, base.starts[where[kept]]), (added, ~kept, added.starts))
    for source, chosen, their_starts in parts:
        sizes = counts[chosen]
        step = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        src = np.repeat(their_starts, sizes) + step
        dst = np.repeat(starts[chosen], sizes) + step
        vectors[dst] = source.vectors[src]
        factors[dst] = source.factors[src]
    return Matrix(base.model, version, vectors, factors, starts, chunk_ids, document_ids, keys)


def kept_rows(
    base: Matrix, chunk_ids: IntArray, document_ids: IntArray, keys: NDArray[np.uint64]
) -> tuple[BoolArray, IntArray]:
    "Which chunks ``base`` holds as they are now, and where in it (its index of each chunk)."
    if not len(base.chunk_ids):
        return np.zeros(len(chunk_ids), dtype=bool), np.zeros(len(chunk_ids), dtype=np.int64)
    where = np.minimum(np.searchsorted(base.chunk_ids, chunk_ids), len(base.chunk_ids) - 1)
    kept = (
        (base.chunk_ids[where] == chunk_ids)
        & (base.keys[where] == keys)
        & (base.document_ids[where] == document_ids)
    )
    return kept, where


# ---------------------------------------------------------------------------------------------
# The file


def _header(m: Matrix) -> bytes:
    about = {
        "format": FORMAT,
        "model": m.model,
        "version": m.version,
        "rows": m.rows,
        "chunks": len(m.chunk_ids),
        "dim": m.dim,
    }
    return json.dumps(about, sort_keys=True).encode("utf-8")


def save(path: Path, m: Matrix, mode: int = 0o644) -> None:
    """Write ``m`` to ``path`` whole or not at all (a temporary file renamed into place), with
    permissions ``mode``."""
    import tempfile  # a search only reads the file

    header = _header(m)
    begin = aligned(len(MAGIC) + 4 + len(header))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + struct.pack("<I", len(header)) + header)
            for name, dtype, offset, _ in layout(m.rows, len(m.chunk_ids), m.dim, begin):
                f.write(b"\0" * (offset - f.tell()))
                f.write(np.ascontiguousarray(getattr(m, name), dtype=dtype).data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def open_file(path: Path, model: str, version: int | None) -> tuple[Matrix | None, str]:
    """The matrix in ``path`` when it holds ``model`` at ``version``, memory-mapped; else None
    and why not: "missing", "stale" (another model or version) or "corrupt". With ``version``
    None, at whatever version it holds (a base for :func:`merge`: "current" then says only
    that it is whole)."""
    try:
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses an empty file)
        return None, "corrupt"
    try:
        about = read_header(mapped)
    except (ValueError, KeyError, TypeError, struct.error):
        mapped.close()
        return None, "corrupt"
    if about["model"] != model or (version is not None and about["version"] != version):
        mapped.close()
        return None, "stale"
    arrays = _arrays(mapped, about)
    if arrays is None:
        mapped.close()
        return None, "corrupt"
    return Matrix(model, about["version"], source="file", **arrays), "current"


def _arrays(mapped: mmap.mmap, about: dict[str, Any]) -> dict[str, Any] | None:
    "The arrays over the mapped file, or None when they do not fit it or do not make sense."
    rows, chunks, dim = about["rows"], about["chunks"], about["dim"]
    if len(mapped) != file_size(about):
        return None
    out: dict[str, Any] = {}
    for name, dtype, offset, count in layout(rows, chunks, dim, about["begin"]):
        out[name] = np.frombuffer(mapped, dtype=np.dtype(dtype), count=count, offset=offset)
    out["vectors"] = out["vectors"].reshape(rows, dim)
    starts, ids = out["starts"], out["chunk_ids"]
    if chunks and (
        starts[0] != 0
        or (rows < chunks)
        or np.any(np.diff(starts) < 1)
        or starts[-1] >= rows
        or np.any(np.diff(ids) < 1)
        or not np.all(np.isfinite(out["factors"]))
    ):
        return None
    if not chunks and rows:
        return None
    return out
