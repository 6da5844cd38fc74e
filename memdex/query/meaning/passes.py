"""The meaning pass of a search: the chunks nearest the query, filtered like the words' layers.

:func:`meaning_pass` never fails a search: when meaning cannot run (no extra, no vectors,
model files gone) it returns a pass that says why, and the search is the words' alone.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from memdex.errors import MemdexError
from memdex.query import ranking
from memdex.query.meaning import available, blas_pinned
from memdex.store import db

if TYPE_CHECKING:
    from memdex.query.engine import Engine
    from memdex.query.meaning.matrix import Matrix


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
    embedded: int = 0  # chunks with a vector of the model: what meaning could find
    chunks: int = 0  # chunks in the index

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"used": self.used, "model": self.model, "ms": self.ms}
        if self.reason:
            out["reason"] = self.reason
        if self.used:
            out["found"] = len(self.near)
            out["embedded"] = {"chunks": self.embedded, "of": self.chunks}
        return out

    @property
    def note(self) -> str | None:
        """A line for the results' notes: only when meaning was asked for, or could have run;
        or when it ran over part of the index (chunks written since `memdex embed`)."""
        if self.used and self.embedded < self.chunks:
            share = self.embedded * 100 // max(self.chunks, 1)
            return (
                f"meaning covers {self.embedded:,} of {self.chunks:,} chunks ({share}%): "
                "`memdex embed` adds the rest (a running `memdex watch` does it itself)"
            )
        if self.used or not self.reason:
            return None
        if self.asked or self.model is not None:
            return f"meaning off: {self.reason}"
        return None


def meaning_pass(
    conn: sqlite3.Connection,
    text: str,
    semantic: bool | None,
    filter_params: dict[str, Any],
    engine: Engine,
) -> MeaningPass:
    """The chunks nearest ``text`` that pass the filters, when meaning is on, with the query
    encoder and the vectors ``engine`` keeps (``query.engine``).

    :param semantic: True (asked for), False (turned off) or None (on when vectors exist)
    """
    if semantic is False:
        return MeaningPass(False, "turned off (--no-semantic)")
    asked = semantic is True
    missing = available()
    if missing:
        return MeaningPass(False, missing, asked=asked)
    from memdex.query.meaning import current_model

    row = current_model(conn)
    if row is None:
        return MeaningPass(False, "no vectors in this index (run `memdex embed`)", asked=asked)
    from memdex.query.engine import encoder_key

    model = row["name"]
    started = time.perf_counter()
    try:
        key = encoder_key(row)
        encoder = engine.encoder(*key)
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
    vectors = engine.matrix(conn, model, row["dim"])
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
    engine.searched(*key)
    embedded = len(vectors.chunk_ids)
    return MeaningPass(
        True, model=model, ms=ms, near=near, asked=asked, embedded=embedded, chunks=db.chunk_count(conn)
    )


def _one_thread() -> Any:
    """One BLAS thread for the query and the product: a dozen word pieces and a few hundred
    rows at a time are too little work to share, and OpenBLAS threads spinning on a busy
    machine made a search 6x slower (750 ms against 120 ms, load average 4 on two cores).
    Nothing to do when BLAS was held to one thread before numpy loaded it (one_blas_thread)."""
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
    if not len(vectors.document_ids):
        return None
    if all(value is None for value in chosen) and not db.has_copies(conn):
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
