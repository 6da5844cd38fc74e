"""The matrix file's place and layout, and whether it is current, read without numpy.

What ``memdex index`` asks after the words when it has nothing new to embed (an index's
vectors complete, its matrix file at their version) needs no array: this module reads the
file's header and size only, so such a run imports neither numpy nor a model
(``query.meaning.embed_after_index``). ``matrix.py`` reads and writes the arrays themselves;
its module docstring describes the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import struct
from pathlib import Path
from typing import Any

from memdex.store import db

SUFFIX = ".vectors"  # the matrix file: the index's file name and this
MAGIC = b"MDXVECS1"
FORMAT = 1
ALIGN = 64
# The file's arrays in order: (name, dtype, bytes an item).
ARRAYS = (
    ("vectors", "i1", 1),
    ("factors", "<f4", 4),
    ("starts", "<i8", 8),
    ("chunk_ids", "<i8", 8),
    ("document_ids", "<i8", 8),
    ("keys", "<u8", 8),
)


def matrix_path(conn: sqlite3.Connection) -> Path | None:
    "Where the index's matrix file is (None for an in-memory index)."
    path = db.path_of(conn)
    return path.with_name(path.name + SUFFIX) if path else None


def current_version(conn: sqlite3.Connection) -> int:
    "The version of the index's vectors: it changes whenever what a search would read does."
    return int(conn.execute(db.query("vectors_version")).fetchone()[0])


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def layout(rows: int, chunks: int, dim: int, start: int) -> list[tuple[str, str, int, int]]:
    "(name, dtype, offset, count) of each array, the first at ``start``."
    sizes = (rows * dim, rows, chunks, chunks, chunks, chunks)
    out, at = [], start
    for (name, dtype, width), size in zip(ARRAYS, sizes, strict=True):
        out.append((name, dtype, at, size))
        at = aligned(at + size * width)
    return out


def file_size(about: dict[str, Any]) -> int:
    "The size a file with this header has: the end of its last array."
    *_, (_, _, offset, count) = layout(about["rows"], about["chunks"], about["dim"], about["begin"])
    return offset + count * ARRAYS[-1][2]


def read_header(data: Any) -> dict[str, Any]:
    if bytes(data[: len(MAGIC)]) != MAGIC:
        raise ValueError("not a memdex matrix file")
    (length,) = struct.unpack("<I", data[len(MAGIC) : len(MAGIC) + 4])
    start = len(MAGIC) + 4
    about = json.loads(bytes(data[start : start + length]).decode("utf-8"))
    if about["format"] != FORMAT:
        raise ValueError(f"matrix file format {about['format']}")
    if not isinstance(about["version"], int):  # any 64-bit integer: SQLite's random()
        raise ValueError("bad version")
    for key in ("rows", "chunks", "dim"):
        if not isinstance(about[key], int) or about[key] < 0:
            raise ValueError(f"bad {key}")
    if not isinstance(about["model"], str) or about["dim"] < 1:
        raise ValueError("bad model or dim")
    about["begin"] = aligned(start + length)
    return about


def file_state(path: Path, model: str, version: int) -> str:
    """current, missing, stale or corrupt: what ``matrix.open_file`` would find, from the
    header and the file's size (not the arrays' contents)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(MAGIC) + 4)
            about = read_header(head + f.read(struct.unpack("<I", head[len(MAGIC) :])[0]))
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return "corrupt"
    if about["model"] != model or about["version"] != version:
        return "stale"
    return "current" if size == file_size(about) else "corrupt"
