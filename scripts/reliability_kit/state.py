"""What an index holds, compared by natural keys; its checks; running memdex."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memdex.ingest.pipeline import index_paths
from memdex.store import db

HERE = Path(__file__).resolve().parent.parent  # scripts/
sys.path.insert(0, str(HERE))  # scripts/synth.py, the corpus generator
SCRIPT = HERE / "reliability.py"
DATA = HERE.parent.parent / "shared" / "data"
SAMPLE = HERE.parent / "memdex" / "sample-corpus"
MEMDEX = [sys.executable, "-m", "memdex"]


# -- what an index holds, by natural keys (row ids differ between two indexes of one tree) ----
CANONICAL = {
    "roots": "SELECT path, kind, detected_kind, scope, chunk_tokens FROM roots",
    "files": "SELECT path, rel_path, kind, size, mtime_ns, sha256 FROM files",
    "documents": """SELECT f.path, d.key, d.kind, d.title, d.description, d.tags, d.topics, d.namespace,
        d.type, d.scope, d.platform, d.date, d.created, d.modified, d.line_count, d.size_bytes,
        d.est_tokens, d.meta FROM documents d JOIN files f ON f.id = d.file_id""",
    "chunks": """SELECT f.path, d.key, c.seq, c.heading, c.text, c.line_start, c.line_end, c.size_bytes,
        c.meta FROM chunks c JOIN documents d ON d.id = c.document_id JOIN files f ON f.id = d.file_id""",
    "topics": """SELECT f.path, d.key, t.topic, t.source, s.path, t.line FROM topics t
        JOIN documents d ON d.id = t.document_id JOIN files f ON f.id = d.file_id
        LEFT JOIN files s ON s.id = t.source_file_id""",
    "index_links": """SELECT f.path, l.line, l.keywords, l.target, l.label FROM index_links l
        JOIN files f ON f.id = l.file_id""",
    "ingest_errors": "SELECT path, reason, size, mtime_ns FROM ingest_errors",
    "record_errors": """SELECT f.path, r.record, r.reason FROM record_errors r
        JOIN files f ON f.id = r.file_id""",
    "synonyms": "SELECT term, synonym, source FROM synonyms",
}


def canonical(db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    "Every row a search or `memdex status` can see, sorted, without ids or timestamps."
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {
            name: sorted(conn.execute(sql).fetchall(), key=lambda r: json.dumps(r, default=str))
            for name, sql in CANONICAL.items()
        }
    finally:
        conn.close()


def differences(got: dict[str, list[Any]], expected: dict[str, list[Any]]) -> dict[str, int]:
    "Rows missing or extra, per table; empty when the two indexes hold the same."
    out = {}
    for table in expected:
        a, b = Counter(map(tuple, got[table])), Counter(map(tuple, expected[table]))
        if a != b:
            out[table] = sum(((a - b) + (b - a)).values())
    return out


def problems(db_path: Path) -> list[str]:
    "PRAGMA integrity_check and FTS5's integrity-check (memdex.store.db.check) on a fresh connection."
    conn = db.connect(db_path, create=False)
    try:
        return db.check(conn)
    finally:
        conn.close()


def committed(db_path: Path, under: Path | None = None) -> int:
    """Documents a reader sees now, all or those of files ``under`` a folder (0 while the
    database does not exist or is being created)."""
    sql = "SELECT count(*) FROM documents d JOIN files f ON f.id = d.file_id WHERE f.path LIKE :prefix"
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute(sql, {"prefix": f"{under}{os.sep}%" if under else "%"}).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def fresh_index(root: Path | list[Path], db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    "What a clean index of the tree as it is now holds."
    for p in db_path.parent.glob(db_path.name + "*"):
        p.unlink()
    conn = db.connect(db_path)
    index_paths(conn, root if isinstance(root, list) else [root])
    conn.close()
    return canonical(db_path)


def memdex_cli(db_path: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MEMDEX, "--db", str(db_path), *args], capture_output=True, text=True, **kwargs)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


@contextmanager
def workdir(keep: Path | None = None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="memdex-reliability-") as tmp:
        yield Path(tmp)
