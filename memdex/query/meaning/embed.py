"""``memdex embed``: give every chunk a vector from one model, resumably, and keep them current.

Chunks are embedded newest document first, BATCH at a time, each batch committed on its own: a
run killed at any moment keeps what it committed, and the next run starts where it stopped. A
chunk whose exact text already has a vector (a file re-written with an unchanged section
gets new chunk ids) reuses it instead of running the model. Nothing here takes the writer
lock: vectors are a pure function of the chunk text, so a watcher and ``memdex embed`` may
both write them; SQLite's WAL keeps readers from waiting on either. Whoever writes vectors
then writes the matrix file searches read them from (vectors.refresh).

With coverage ``whole`` (query/meaning/windows.py) a chunk longer than one window gets one
vector per window, stored one after another in its row's ``vector``, sharing its ``scale``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdex.errors import InvalidParameter, MemdexError
from memdex.query.meaning import EmbedReport
from memdex.query.meaning.model import PRECISIONS, Precision, precision_of
from memdex.query.meaning.vectors import quantize, refresh, remove_file, text_hash
from memdex.query.meaning.windows import COVERAGES, DEFAULT_COVERAGE, Coverage, Windows, check_coverage
from memdex.store import db
from memdex.utils import utc_stamp

if TYPE_CHECKING:
    from memdex.query.meaning.encoder import Encoder
    from memdex.query.meaning.model import ModelSpec

# Chunks per transaction: a kill loses at most this much work. Their texts go to the encoder
# together, which sorts them by length over the whole pool: texts of a length share a model
# run, and little of it is padding.
BATCH = 256
# A chunk's (first) vector is made from its first PASSAGE_WORD_PIECES word pieces: the heading
# path (document title and section) and the section's opening; all-MiniLM-L6-v2 was trained on
# 128 at most. The model's cost grows with the word pieces it reads. On the Serena queries
# (scripts/eval.py --set serena --word-pieces N), meaning alone found recall@10 0.767 at 64
# and 0.831 at 128, and fused with words 0.846 and 0.869 (words alone 0.841).
PASSAGE_WORD_PIECES = 128
# Enough text for the windows of any chunk; the first coverage needs no more than 128 pieces.
MAX_TEXT_CHARS = {"first": 2000, "whole": 40_000}
_SUFFIX = {"first": "", "whole": "w"}

Progress = Callable[[int, int], None]  # (done, total)


def passage_text(heading: str, text: str, coverage: Coverage = "first") -> str:
    "What a chunk's vector is made from: its heading path (the document's title first) and text."
    body = f"{heading}\n{text}" if heading and not text.startswith(heading) else text
    return body[: MAX_TEXT_CHARS[coverage]]


def vector_model(spec: ModelSpec, coverage: Coverage = "first") -> str:
    "The name a model's chunk vectors are stored under: the model, the window and the coverage."
    return f"{spec.name}@{PASSAGE_WORD_PIECES}{_SUFFIX[check_coverage(coverage)]}"


def coverage_of(model: str) -> Coverage:
    "The coverage of vectors stored under ``model`` (a name vector_model gave)."
    return "whole" if model.rpartition("@")[2].endswith("w") else "first"


def _every_coverage(model: str) -> tuple[str, ...]:
    "The names of one model's vectors at each coverage, given one of them."
    base = model.removesuffix(_SUFFIX[coverage_of(model)]) if _SUFFIX[coverage_of(model)] else model
    return tuple(base + suffix for suffix in _SUFFIX.values())


def same_model(stored: str, spec: ModelSpec) -> bool:
    "Are vectors stored under ``stored`` from this model (at any coverage)?"
    return stored in {vector_model(spec, c) for c in COVERAGES}


def passage_encoder(spec: ModelSpec, **options: Any) -> Encoder:
    "An encoder for chunk texts: the model, reading at most PASSAGE_WORD_PIECES of each."
    from memdex.query.meaning.encoder import Encoder

    return Encoder(replace(spec, max_length=min(spec.max_length, PASSAGE_WORD_PIECES)), **options)


def index_model(conn: sqlite3.Connection) -> Path | None:
    "The folder of the model the index's newest vectors come from, when it is still there."
    from memdex.query.meaning import current_model, model_path

    row = current_model(conn)
    if row is None:
        return None
    try:
        return model_path(row["source"], row["name"])
    except MemdexError:  # its files are gone: the default model embeds anew
        return None


def missing(conn: sqlite3.Connection, model: str) -> int:
    "How many chunks have no vector of ``model``."
    return int(conn.execute(db.query("vectors_missing_count"), {"model": model}).fetchone()[0])


def index_precision(conn: sqlite3.Connection, spec: ModelSpec) -> Precision | None:
    "The precision this index has vectors of ``spec``'s model at (the newest), None when it has none."
    precisions = ("int8",) if spec.packed else PRECISIONS  # a packed model runs at int8 only
    name = _newest(conn, {vector_model(spec.at(p), c) for p in precisions for c in COVERAGES})
    return precision_of(name) if name else None


def index_coverage(conn: sqlite3.Connection, spec: ModelSpec) -> Coverage | None:
    "The coverage this index has vectors of ``spec`` at (the newest), None when it has none."
    name = _newest(conn, {vector_model(spec, c) for c in COVERAGES})
    return coverage_of(name) if name else None


def _newest(conn: sqlite3.Connection, names: set[str]) -> str | None:
    "Of these vector names, the one this index has the newest vectors under"
    for row in conn.execute(db.query("embedding_model_names")):
        if row["name"] in names:
            return str(row["name"])
    return None


def embed_index(
    conn: sqlite3.Connection,
    model: str | None = None,
    *,
    precision: str | None = None,
    coverage: str | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
) -> EmbedReport:
    """What ``memdex embed`` does: the model (a folder, or a name in the Hugging Face cache; None:
    the one the index's newest vectors come from, while its files are there, else the one
    memdex ships) at the precision asked, else the one the index's vectors have (a default
    that changed never embeds an index again), else the default; every chunk without its
    vector embedded."""
    return embed_spec(
        conn,
        chosen_spec(conn, model, precision),
        coverage=coverage,
        batch_size=batch_size,
        threads=threads,
        progress=progress,
    )


def embed_spec(
    conn: sqlite3.Connection,
    spec: ModelSpec,
    *,
    coverage: str | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
) -> EmbedReport:
    """Every chunk without a vector of this model embedded, at ``coverage``, else the one the
    index has of it, else the default; the model is loaded only when some chunk lacks one."""
    chosen = check_coverage(coverage) if coverage else index_coverage(conn, spec) or DEFAULT_COVERAGE
    name = vector_model(spec, chosen)
    if not missing(conn, name):  # nothing to embed: no model loaded
        return up_to_date(conn, spec, name)
    encoder = passage_encoder(spec, batch_size=batch_size, threads=threads)
    return embed(conn, encoder, progress=progress, coverage=chosen)


def following_spec(conn: sqlite3.Connection) -> ModelSpec:
    """The model new chunks get vectors of without being asked (``memdex index``, the watcher):
    $MEMDEX_EMBED_MODEL, as searches use it; else the index's own; else the one memdex ships.
    Never a silent switch: when the index's model cannot be found (its folder gone, a drive not
    mounted), MemdexError says so, and `memdex embed` decides."""
    import os

    from memdex.query.meaning import current_model, model_path
    from memdex.query.meaning.model import MODEL_ENV

    override = os.environ.get(MODEL_ENV)
    if override:
        return chosen_spec(conn, override)
    row = current_model(conn)
    if row is None:
        return chosen_spec(conn)
    spec = chosen_spec(conn, str(model_path(row["source"], row["name"])))
    if not same_model(row["name"], spec):
        raise MemdexError(
            f"the index's vectors are from {row['name']}, the model at {spec.path} is "
            f"{vector_model(spec)}: run `memdex embed --model PATH` with the model you want"
        )
    return spec


def chosen_spec(
    conn: sqlite3.Connection, model: str | None = None, precision: str | None = None
) -> ModelSpec:
    """The model ``embed_index`` embeds with: ``model`` (a folder or a hub name), else the one the
    index's newest vectors come from while its files are there, else the one memdex ships; at
    ``precision``, else the one the index has vectors of it at, else the default."""
    from memdex.query.meaning.model import DEFAULT_PRECISION, check_precision, load_spec, resolve_model

    path = resolve_model(model) if model is not None else index_model(conn) or resolve_model(None)
    spec = load_spec(path, check_precision(precision) if precision else None)
    return spec.at(
        check_precision(precision) if precision else index_precision(conn, spec) or DEFAULT_PRECISION
    )


def embed(
    conn: sqlite3.Connection,
    encoder: Encoder,
    *,
    progress: Progress | None = None,
    limit: int | None = None,
    coverage: Coverage | None = None,
    write_matrix: bool = True,
) -> EmbedReport:
    """Embed every chunk of the index that has no vector of the encoder's model.

    :param encoder: from :func:`passage_encoder`
    :param limit: stop after this many chunks (the watcher embeds in slices)
    :param coverage: how much of each chunk to read; None: what the index has of this model,
        else DEFAULT_COVERAGE
    :param write_matrix: write the matrix file searches read when done (the watcher does it
        once after its slices)
    """
    if encoder.spec.max_length > PASSAGE_WORD_PIECES:
        raise InvalidParameter(
            "embed() takes an encoder from passage_encoder(), which reads passages as stored"
        )
    chosen = coverage or index_coverage(conn, encoder.spec) or DEFAULT_COVERAGE
    model = vector_model(encoder.spec, chosen)
    windows = Windows(encoder.spec, encoder.spec.max_length, chosen)
    report = EmbedReport(model)
    started, cpu = time.perf_counter(), time.process_time()
    total = missing(conn, model) if progress else 0
    if limit is not None:
        total = min(total, limit)
    about = _recorded(conn, encoder.spec, model)
    done: set[int] = set()
    while limit is None or report.embedded + report.reused < limit:
        size = BATCH if limit is None else min(BATCH, limit - report.embedded - report.reused)
        found = conn.execute(db.query("vectors_missing"), {"model": model, "limit": size}).fetchall()
        # A chunk embedded in this run whose vector is gone again (masked, or dropped by another
        # process meanwhile) is left for the next run: no run loops on it.
        rows = [r for r in found if r["id"] not in done]
        if not rows:
            break
        done.update(r["id"] for r in rows)
        _embed_batch(conn, encoder, windows, model, rows, report)
        if progress:
            progress(report.embedded + report.reused, total)
    _settle(conn, about, report, write_matrix)
    report.seconds = round(time.perf_counter() - started, 3)
    report.cpu_seconds = round(time.process_time() - cpu, 3)
    return report


def up_to_date(
    conn: sqlite3.Connection, spec: ModelSpec, model: str, write_matrix: bool = True
) -> EmbedReport:
    """What ``embed`` does when no chunk lacks a vector of ``model``, without loading the model:
    record where its files are, remove the vectors of chunks that are gone, write the matrix."""
    report = EmbedReport(model)
    _settle(conn, _recorded(conn, spec, model), report, write_matrix)
    return report


def _recorded(conn: sqlite3.Connection, spec: ModelSpec, model: str) -> dict[str, object]:
    "The row ``embedding_models`` holds for ``model``, written when it has none or another place."
    # Where the model is, absolute: searches run from any folder read it there.
    about: dict[str, object] = {"name": model, "dim": spec.dim, "source": str(spec.path.resolve())}
    known = conn.execute(db.query("embedding_model_known"), {"name": model}).fetchone()
    if known is None or known["source"] != about["source"]:
        # First: the vectors of a run killed early are usable, and found. Again when the
        # model was moved (or stored relative by an older memdex) and named anew.
        _record(conn, about)
    return about


def _settle(
    conn: sqlite3.Connection, about: dict[str, object], report: EmbedReport, write_matrix: bool
) -> None:
    "After the batches: vectors of chunks that are gone removed, the model recorded, the matrix written."
    with db.transaction(conn):
        report.removed = conn.execute(db.query("vectors_orphans_delete")).rowcount
    if report.embedded or report.reused or report.removed:
        _record(conn, about)  # the model of the newest vectors is the one searches use
    if write_matrix:
        report.matrix = refresh(conn, str(about["name"]))


def _record(conn: sqlite3.Connection, about: dict[str, object]) -> None:
    with db.transaction(conn):
        conn.execute(db.query("embedding_model_upsert"), {**about, "now": utc_stamp()})


def _embed_batch(
    conn: sqlite3.Connection,
    encoder: Encoder,
    windows: Windows,
    model: str,
    rows: list[sqlite3.Row],
    report: EmbedReport,
) -> None:
    passages = {
        r["id"]: (r["heading"], passage_text(r["heading"], r["text"], windows.coverage)) for r in rows
    }
    hashes = {cid: text_hash(passage) for cid, (_, passage) in passages.items()}
    found: dict[int, tuple[float, bytes]] = {}
    for cid, h in hashes.items():
        old = conn.execute(db.query("vector_by_hash"), {"model": model, "text_hash": h}).fetchone()
        if old is not None:
            found[cid] = (old["scale"], old["vector"])
    todo = [cid for cid in passages if cid not in found]
    if todo:
        texts = windows.split([passages[cid] for cid in todo])
        flat = [text for chunk in texts for text in chunk]
        vectors = encoder.encode_passages(flat)  # the whole batch at once: the encoder sorts it
        at = 0
        for cid, chunk in zip(todo, texts, strict=True):
            found[cid] = quantize(vectors[at : at + len(chunk)])
            at += len(chunk)
        report.windows += len(flat)
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
    """Remove the vectors of ``model`` at every coverage (every model when None); returns how
    many."""
    names: list[str | None] = [None] if model is None else list(_every_coverage(model))
    removed = 0
    with db.transaction(conn):
        for name in names:
            removed += conn.execute(db.query("vectors_drop"), {"model": name}).rowcount
            conn.execute(db.query("embedding_models_drop"), {"model": name})
    remove_file(conn)
    return int(removed)


def models(conn: sqlite3.Connection) -> list[dict[str, object]]:
    "The models this index has vectors of, newest first, with their counts."
    return [dict(r) for r in conn.execute(db.query("embedding_models"))]
