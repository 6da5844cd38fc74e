"""The meaning pass of a search: the chunks nearest the query, filtered like the words' layers.

:func:`meaning_pass` never fails a search: when meaning cannot run (no extra, no vectors,
model files gone) it returns a pass that says why, and the search is the words' alone.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdex.errors import MemdexError
from memdex.query import ranking
from memdex.query.meaning import available, blas_pinned, pin_blas
from memdex.store import db

if TYPE_CHECKING:
    from memdex.query.meaning.encoder import Encoder
    from memdex.query.meaning.matrix import Matrix
    from memdex.query.meaning.model import Precision


@dataclass
class Near:
    "A chunk the meaning pass found: its document, its cosine to the query, what it is from."

    chunk_id: int
    document_id: int
    similarity: float
    conversation: bool  # from a chat (its document has a platform), not a memory or note
    whole: bool = False  # its vector read all of the chunk (embed's coverage "whole")


@dataclass
class MeaningPass:
    used: bool
    reason: str | None = None  # why it was not used
    model: str | None = None
    ms: float = 0.0
    near: list[Near] = field(default_factory=list)  # nearest first, filters applied
    asked: bool = False  # --semantic given: a reason it is off is worth a note

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"used": self.used, "model": self.model, "ms": self.ms}
        if self.reason:
            out["reason"] = self.reason
        if self.used:
            out["found"] = len(self.near)
        return out

    @property
    def note(self) -> str | None:
        "A line for the results' notes: only when meaning was asked for, or could have run."
        if self.used or not self.reason:
            return None
        if self.asked or self.model is not None:
            return f"meaning off: {self.reason}"
        return None


RESIDENT_AFTER = 2  # searches by meaning after which a process is taken to stay
_encoders: dict[tuple[Path, str], Encoder] = {}
_searches: dict[tuple[Path, str], int] = {}
_building: set[tuple[Path, str]] = set()  # the encoders onnxruntime's build was due for
_due: list[tuple[Path, str]] = []  # ... and not yet started (after_search starts them)
_lock = threading.Lock()


def query_encoder(path: Path, precision: Precision = "fp32") -> Encoder:
    """The encoder for queries from the model at ``path``, at the precision the vectors searched
    were made at (a query is compared with vectors of its own precision), loaded once per process.

    It starts on numpy, which loads in a few milliseconds. A process that asks for it
    ``RESIDENT_AFTER`` times is taken to stay (an MCP session, a script; `memdex serve` says
    so itself, :func:`stay`): once that search is done, onnxruntime's encoder is built on a
    thread of its own (0.4 s of CPU, once, :func:`after_search`) and takes over when ready,
    encoding a query in 4 ms at int8 and 7 at fp32 instead of 21. A CLI search asks once and
    never pays for it.
    """
    from memdex.query.meaning.encoder import Encoder
    from memdex.query.meaning.model import load_spec

    key = (path, precision)
    with _lock:
        if key not in _encoders:
            _encoders[key] = Encoder(load_spec(path, precision), backend="numpy")
        _searches[key] = _searches.get(key, 0) + 1
        return _encoders[key]


def _after_pass(key: tuple[Path, str]) -> None:
    "After a pass: the RESIDENT_AFTER-th of the process makes onnxruntime's encoder due"
    with _lock:  # searches at once (a server's threads): the build is due once
        if _searches[key] >= RESIDENT_AFTER and _encoders[key].backend == "numpy" and key not in _building:
            _building.add(key)
            _due.append(key)


def after_search() -> None:
    """Start building the encoders a pass made due, each on a thread of its own (the search
    calls this when it is done). Started when the search is done, not inside it, the build runs
    while the caller reads its results (an agent, between its calls): begun in the search, as
    it was, it made that search 0.2 s instead of 35 ms, and begun at the end of the meaning
    pass 0.13 s."""
    from memdex.query.meaning.encoder import onnxruntime_available

    with _lock:
        due, _due[:] = list(_due), []
    if due and onnxruntime_available():
        for key in due:
            # Not a daemon: a process that ends while it builds waits for it, not crashes in it.
            threading.Thread(
                target=_faster, args=(key, _encoders[key].spec), name="memdex-query-encoder"
            ).start()


def stay(conn: sqlite3.Connection) -> str | None:
    """Say that this process stays (``memdex serve``, after its warm-up): the query encoder of
    the index's vectors is loaded now, and built on onnxruntime when it is installed, on the
    caller's thread -- rather than after the RESIDENT_AFTER-th search, on a thread that may
    share the cores with the searches of the first callers. Returns the encoder's backend,
    or None when meaning cannot run here (the searches will say why)."""
    from memdex.query.meaning.encoder import onnxruntime_available
    from memdex.query.meaning.model import precision_of

    row = current_model(conn) if available() is None else None
    if row is None:
        return None
    pin_blas()
    try:
        key = (model_path(row["source"]), precision_of(row["name"]))
        encoder = query_encoder(*key)
    except MemdexError:
        return None
    if encoder.backend == "numpy" and onnxruntime_available():
        _faster(key, encoder.spec)
    return _encoders[key].backend


def _faster(key: tuple[Path, str], spec: Any) -> None:
    "Build onnxruntime's query encoder and put it in the numpy one's place"
    from memdex.query.meaning.encoder import Encoder

    try:
        faster = Encoder(spec, backend="onnx", threads=1)
    except Exception as exc:  # the numpy encoder goes on: slower, not wrong
        import logging

        why = "meaning: onnxruntime's query encoder could not be built (%s); numpy goes on"
        logging.getLogger(__name__).warning(why, exc)
        return
    with _lock:
        _encoders[key] = faster


def current_model(conn: sqlite3.Connection) -> sqlite3.Row | None:
    "The model the index's newest vectors come from."
    return conn.execute(db.query("embedding_model_current")).fetchone()


def meaning_pass(
    conn: sqlite3.Connection, text: str, semantic: bool | None, filter_params: dict[str, Any]
) -> MeaningPass:
    """The chunks nearest ``text`` that pass the filters, when meaning is on.

    :param semantic: True (asked for), False (turned off) or None (on when vectors exist)
    """
    if semantic is False:
        return MeaningPass(False, "turned off (--no-semantic)")
    asked = semantic is True
    missing = available()
    if missing:
        return MeaningPass(False, missing, asked=asked)
    row = current_model(conn)
    if row is None:
        return MeaningPass(False, "no vectors in this index (run `memdex embed`)", asked=asked)
    from memdex.query.meaning.model import precision_of

    model = row["name"]
    started = time.perf_counter()
    pin_blas()
    try:
        key = (model_path(row["source"]), precision_of(model))
        encoder = query_encoder(*key)
    except MemdexError as exc:
        return MeaningPass(False, str(exc), model=model, asked=asked)
    from memdex.query.meaning.embed import coverage_of, same_model, vector_model

    if not same_model(model, encoder.spec):
        return MeaningPass(
            False,
            f"the index's vectors are from {model}, the model at {encoder.spec.path} is "
            f"{vector_model(encoder.spec)}: run `memdex embed --model {encoder.spec.path}`",
            model=model,
            asked=asked,
        )
    from memdex.query.meaning.vectors import matrix

    vectors = matrix(conn, model, row["dim"])
    allowed = _allowed(conn, vectors, filter_params)
    try:
        with _one_thread():
            query = encoder.encode_queries([text])[0]  # may load `tokenizers`: a file gone bad since
    except MemdexError as exc:
        return MeaningPass(False, str(exc), model=model, asked=asked)
    with _one_thread():
        found = vectors.nearest(query, ranking.MEANING_DEPTH, allowed)
    nearest = [(cid, sim) for cid, sim in found if sim >= ranking.MIN_SIMILARITY]
    similarity = dict(nearest)
    rows = conn.execute(
        db.query("semantic_chunks"), {**filter_params, "ids": json.dumps([cid for cid, _ in nearest])}
    ).fetchall()
    whole = coverage_of(model) == "whole"
    near = [
        Near(r["chunk_id"], r["document_id"], similarity[r["chunk_id"]], bool(r["conversation"]), whole)
        for r in rows
    ]
    ms = round((time.perf_counter() - started) * 1000, 3)
    _after_pass(key)
    return MeaningPass(True, model=model, ms=ms, near=near, asked=asked)


def _one_thread() -> Any:
    """One BLAS thread for the query and the product: a dozen word pieces and a few hundred
    rows at a time are too little work to share, and OpenBLAS threads spinning on a busy
    machine made a search 6x slower (750 ms against 120 ms, load average 4 on two cores).
    Nothing to do when BLAS was held to one thread before numpy loaded it (pin_blas)."""
    if blas_pinned():
        return nullcontext()
    return _threads().limit(limits=1, user_api="blas")


@cache
def _threads() -> Any:
    "The process's thread pools, looked up once (threadpool_limits looks every time: 0.4 ms)."
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@cache
def _filter_keys() -> tuple[str, ...]:
    "The parameters of document_filter.sql: a search that sets none of them is unfiltered."
    from memdex.query.request import Filters

    return tuple(Filters().params())


def _allowed(conn: sqlite3.Connection, vectors: Matrix, params: dict[str, Any]) -> Any:
    """A flag per chunk of the matrix: may the search's filters return it? None when the search
    has no filters. Asked of the documents, before the product, so the nearest chunks are the
    nearest that pass (not the nearest of all, then filtered)."""
    import numpy as np

    chosen = tuple(params.get(key) for key in _filter_keys())
    if all(value is None for value in chosen) or not len(vectors.document_ids):
        return None
    # The documents a filter allows, kept by the connection until the index changes (db.memo):
    # a resident process asked the same filter again skips the query (11 ms of 47 for a
    # namespace at 28,600 documents).
    known = db.memo(conn, "meaning_filters")
    ids = known.get(chosen)
    if ids is None:
        rows = conn.execute(db.query("documents_filtered"), params)
        ids = known[chosen] = np.fromiter((r[0] for r in rows), dtype=np.int64)
    top = int(vectors.document_ids.max())
    table = np.zeros(top + 1, dtype=bool)
    table[ids[ids <= top]] = True
    return table[vectors.document_ids]


def model_path(source: str) -> Path:
    "Where the model's files are: $MEMDEX_EMBED_MODEL when set, else where `memdex embed` read them."
    from memdex.query.meaning.model import MODEL_ENV, resolve_model

    override = os.environ.get(MODEL_ENV)
    if override:
        return resolve_model(override)
    path = Path(source)
    if not path.is_dir():
        raise MemdexError(
            f"the embedding model is no longer at {path}: set {MODEL_ENV} to its folder, "
            "or run `memdex embed --model PATH` again"
        )
    return path
