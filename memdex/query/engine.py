"""What a process keeps from one search to the next: the engine, one object the caller owns.

A search by meaning needs a query encoder (a model's weights, loaded) and the index's vectors
(a matrix, memory-mapped from the file beside the index). Loading them is most of a one-shot
search's cost, so a process that keeps searching keeps them, in an :class:`Engine`: the
command line makes one for a command, ``memdex serve`` one for its life (warmed up before
its first caller), the MCP server one for its session, :class:`memdex.Index` one for its own.
Nothing of it is module-wide: two engines share nothing, and an engine that is closed has
no thread left running.

An engine that ``stays`` (a server, an MCP session, a program that says it keeps searching)
moves its query encoder from numpy, which loads in milliseconds, to onnxruntime, which
encodes a query in 4 ms at int8 and 7 at fp32 instead of 21: after its ``RESIDENT_AFTER``-th
search by meaning, on a thread of its own started when that search is done, or at once when
:meth:`Engine.warm` asks (``memdex serve``'s warm-up). An engine that does not stay never
starts a thread.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memdex.query.meaning.encoder import Encoder
    from memdex.query.meaning.matrix import Matrix
    from memdex.query.meaning.model import Precision

RESIDENT_AFTER = 2  # searches by meaning after which an engine that stays builds onnxruntime's
Key = tuple[Path, "Precision"]  # a model's folder, and the precision its vectors were made at


class Engine:
    "The query encoders and vector matrices of one process (or one Index), and how it warms up."

    def __init__(self, *, stays: bool = False) -> None:
        self.stays = stays
        self._lock = threading.Lock()
        self._encoders: dict[Key, Encoder] = {}
        self._searches: dict[Key, int] = {}
        self._due: list[Key] = []  # encoders onnxruntime's build is due for, not yet started
        self._building: set[Key] = set()
        self._threads: list[threading.Thread] = []
        self._matrices: dict[tuple[str, str], Matrix] = {}

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- query encoders ------------------------------------------------------------------
    def encoder(self, path: Path, precision: Precision = "fp32") -> Encoder:
        """The encoder for queries from the model at ``path``, at the precision the vectors
        searched were made at (a query is compared with vectors of its own precision): loaded
        once, on numpy; onnxruntime's once it is built."""
        from memdex.query.meaning.encoder import Encoder
        from memdex.query.meaning.model import load_spec

        key = (path, precision)
        with self._lock:
            if key not in self._encoders:
                self._encoders[key] = Encoder(load_spec(path, precision), backend="numpy")
            return self._encoders[key]

    def backends(self) -> list[str]:
        "The backend of each query encoder loaded: numpy, or onnx once built."
        with self._lock:
            return [e.backend for e in self._encoders.values()]

    def searched(self, path: Path, precision: Precision) -> None:
        """A search by meaning with this encoder is done: for an engine that stays, the
        RESIDENT_AFTER-th makes onnxruntime's encoder due (built by ``after_search``)."""
        key = (path, precision)
        with self._lock:  # searches at once (a server's threads): the build is due once
            self._searches[key] = self._searches.get(key, 0) + 1
            numpy = key in self._encoders and self._encoders[key].backend == "numpy"
            if self.stays and self._searches[key] >= RESIDENT_AFTER and numpy and key not in self._building:
                self._building.add(key)
                self._due.append(key)

    def after_search(self) -> None:
        """Start building the encoders a search made due, each on a thread of this engine
        (``close`` joins them). Started when the search is done, not inside it, the build runs
        while the caller reads its results (an agent, between its calls): begun in the search,
        as it once was, it made that search 0.2 s instead of 35 ms."""
        with self._lock:
            due, self._due = self._due, []
        if not due:
            return
        from memdex.query.meaning.encoder import onnxruntime_available

        if not onnxruntime_available():
            return
        for key in due:
            spec = self._encoders[key].spec
            thread = threading.Thread(target=self._faster, args=(key, spec), name="memdex-query-encoder")
            with self._lock:
                self._threads.append(thread)
            thread.start()

    def warm(self, conn: sqlite3.Connection) -> str | None:
        """Load the query encoder of the index's vectors now, and build it on onnxruntime when
        that is installed, on the caller's thread (``memdex serve``'s warm-up): rather than
        after the RESIDENT_AFTER-th search, on a thread that shares the cores with the first
        callers' searches. The encoder's backend, or None when meaning cannot run here (the
        searches will say why)."""
        from memdex.errors import MemdexError
        from memdex.query.meaning import available, current_model
        from memdex.query.meaning.encoder import onnxruntime_available

        row = current_model(conn) if available() is None else None
        if row is None:
            return None
        try:
            key = encoder_key(row)
            encoder = self.encoder(*key)
        except MemdexError:
            return None
        if encoder.backend == "numpy" and onnxruntime_available():
            self._faster(key, encoder.spec)
        return self._encoders[key].backend

    def _faster(self, key: Key, spec: Any) -> None:
        "Build onnxruntime's query encoder and put it in the numpy one's place"
        from memdex.query.meaning.encoder import Encoder

        try:
            faster = Encoder(spec, backend="onnx", threads=1)
        except Exception as exc:  # the numpy encoder goes on: slower, not wrong
            import logging

            why = "meaning: onnxruntime's query encoder could not be built (%s); numpy goes on"
            logging.getLogger(__name__).warning(why, exc)
            return
        with self._lock:
            self._encoders[key] = faster

    # -- vectors -------------------------------------------------------------------------
    def matrix(self, conn: sqlite3.Connection, model: str, dim: int) -> Matrix:
        """The vectors of ``model`` in this index as it is now: the one kept, while the index's
        vectors are of its version; else the file's, memory-mapped; else read anew from
        SQLite (only the vectors the last one lacks) and written to the file for the next."""
        from memdex.query.meaning import vectors
        from memdex.query.meaning.matrix_file import current_version
        from memdex.store import db

        path = db.path_of(conn)
        key = (str(path.resolve()) if path else f"memory:{id(conn)}", model)
        version = current_version(conn)
        with self._lock:
            kept = self._matrices.get(key)
        if kept is not None and kept.version == version:
            return kept
        found = vectors.current(conn, model, dim, version, kept)
        with self._lock:
            self._matrices[key] = found
        return found

    # -- the end -------------------------------------------------------------------------
    def close(self) -> None:
        "Wait for the builds this engine started; let go of its encoders and matrices."
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()
        with self._lock:
            self._encoders.clear()
            self._matrices.clear()


def encoder_key(row: sqlite3.Row) -> Key:
    """The query encoder a row of ``embedding_models`` needs: its model's folder, and the
    precision its vectors were made at. MemdexError when the model's files are gone."""
    from memdex.query.meaning import model_path
    from memdex.query.meaning.model import precision_of

    return model_path(row["source"], row["name"]), precision_of(row["name"])


@contextmanager
def given_or_own(engine: Engine | None) -> Iterator[Engine]:
    """The engine a caller was given, or one of its own for the block, closed when it ends: a
    search, an answer's rounds or a batch's lines without an engine share one among them."""
    if engine is not None:
        yield engine
        return
    with Engine() as own:
        yield own
