"""``memdex embed``: give every chunk a vector from one model, resumably, and keep them current.

Chunks are embedded in id order, a batch at a time, each batch committed on its own: a run
killed at any moment keeps what it committed, and the next run starts where it stopped. A
chunk whose exact text already has a vector (a file re-written with an unchanged section
gets new chunk ids) reuses it instead of running the model. Nothing here takes the writer
lock: vectors are a pure function of the chunk text, so a watcher and ``memdex embed`` may
both write them; SQLite's WAL keeps readers from waiting on either.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memdex.errors import InvalidParameter
from memdex.query.meaning.vectors import forget, quantize, text_hash
from memdex.store import db
from memdex.utils import utc_stamp

if TYPE_CHECKING:
    from memdex.query.meaning.encoder import Encoder
    from memdex.query.meaning.model import ModelSpec

BATCH = 64  # chunks per transaction: a kill loses at most this much work
# A chunk's vector is made from its first PASSAGE_WORD_PIECES word pieces: the heading path
# (document title and section) and the section's opening; all-MiniLM-L6-v2 was trained on 128
# at most. The model's cost grows with the word pieces it reads. On the Serena queries
# (scripts/eval.py --set serena --word-pieces N), meaning alone found recall@10 0.767 at 64
# and 0.831 at 128, and fused with words 0.846 and 0.869 (words alone 0.841).
PASSAGE_WORD_PIECES = 128
MAX_TEXT_CHARS = 2000  # more than 128 word pieces ever need; no need to tokenise the rest

Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class EmbedReport:
    model: str
    embedded: int = 0  # chunks the model ran on
    reused: int = 0  # chunks whose text already had a vector
    removed: int = 0  # vectors of chunks that are gone
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def passage_text(heading: str, text: str) -> str:
    "What a chunk's vector is made from: its heading path (the document's title first) and text."
    body = f"{heading}\n{text}" if heading and not text.startswith(heading) else text
    return body[:MAX_TEXT_CHARS]


def vector_model(spec: ModelSpec) -> str:
    "The name a model's chunk vectors are stored under: the model and the passage length."
    return f"{spec.name}@{PASSAGE_WORD_PIECES}"


def passage_encoder(spec: ModelSpec, **options: Any) -> Encoder:
    "An encoder for chunk texts: the model, reading at most PASSAGE_WORD_PIECES of each."
    from memdex.query.meaning.encoder import Encoder

    return Encoder(replace(spec, max_length=min(spec.max_length, PASSAGE_WORD_PIECES)), **options)


def missing(conn: sqlite3.Connection, model: str) -> int:
    "How many chunks have no vector of ``model``."
    return int(conn.execute(db.query("vectors_missing_count"), {"model": model}).fetchone()[0])


def embed(
    conn: sqlite3.Connection,
    encoder: Encoder,
    *,
    progress: Progress | None = None,
    limit: int | None = None,
) -> EmbedReport:
    """Embed every chunk of the index that has no vector of the encoder's model.

    :param encoder: from :func:`passage_encoder`
    :param limit: stop after this many chunks (the watcher embeds in slices)
    """
    if encoder.spec.max_length > PASSAGE_WORD_PIECES:
        raise InvalidParameter(
            "embed() takes an encoder from passage_encoder(), which reads passages as stored"
        )
    model = vector_model(encoder.spec)
    report = EmbedReport(model)
    started = time.perf_counter()
    total = missing(conn, model) if progress else 0
    if limit is not None:
        total = min(total, limit)
    # Where the model is, absolute: searches run from any folder read it there.
    about = {"name": model, "dim": encoder.spec.dim, "source": str(encoder.spec.path.resolve())}
    known = conn.execute(db.query("embedding_model_known"), {"name": model}).fetchone()
    if known is None or known["source"] != about["source"]:
        # First: the vectors of a run killed early are usable, and found. Again when the
        # model was moved (or stored relative by an older memdex) and named anew.
        _record(conn, about)
    after = 0
    while limit is None or report.embedded + report.reused < limit:
        size = BATCH if limit is None else min(BATCH, limit - report.embedded - report.reused)
        rows = conn.execute(
            db.query("vectors_missing"), {"model": model, "after": after, "limit": size}
        ).fetchall()
        if not rows:
            break
        after = rows[-1]["id"]
        _embed_batch(conn, encoder, model, rows, report)
        if progress:
            progress(report.embedded + report.reused, total)
    with db.transaction(conn):
        report.removed = conn.execute(db.query("vectors_orphans_delete")).rowcount
    if report.embedded or report.reused or report.removed:
        _record(conn, about)  # the model of the newest vectors is the one searches use
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _record(conn: sqlite3.Connection, about: dict[str, object]) -> None:
    with db.transaction(conn):
        conn.execute(db.query("embedding_model_upsert"), {**about, "now": utc_stamp()})


def _embed_batch(
    conn: sqlite3.Connection, encoder: Encoder, model: str, rows: list[sqlite3.Row], report: EmbedReport
) -> None:
    texts = {r["id"]: passage_text(r["heading"], r["text"]) for r in rows}
    hashes = {cid: text_hash(t) for cid, t in texts.items()}
    found: dict[int, tuple[float, bytes]] = {}
    for cid, h in hashes.items():
        old = conn.execute(db.query("vector_by_hash"), {"model": model, "text_hash": h}).fetchone()
        if old is not None:
            found[cid] = (old["scale"], old["vector"])
    todo = [cid for cid in texts if cid not in found]
    if todo:
        vectors = encoder.encode_passages([texts[cid] for cid in todo])
        for cid, vector in zip(todo, vectors, strict=True):
            found[cid] = quantize(vector)
    with db.transaction(conn):
        conn.executemany(
            db.query("vector_upsert"),
            [
                {"chunk_id": cid, "model": model, "text_hash": hashes[cid], "scale": s, "vector": v}
                for cid, (s, v) in found.items()
            ],
        )
    report.embedded += len(todo)
    report.reused += len(found) - len(todo)


def drop(conn: sqlite3.Connection, model: str | None = None) -> int:
    "Remove the vectors of ``model`` (every model when None); returns how many."
    with db.transaction(conn):
        removed = conn.execute(db.query("vectors_drop"), {"model": model}).rowcount
        conn.execute(db.query("embedding_models_drop"), {"model": model})
    forget(conn)
    return int(removed)


def models(conn: sqlite3.Connection) -> list[dict[str, object]]:
    "The models this index has vectors of, newest first, with their counts."
    return [dict(r) for r in conn.execute(db.query("embedding_models"))]
