"""Search by meaning: a local sentence-embedding model, vectors in the index, the nearest.

Everything here needs numpy and tokenizers (dependencies of memdex; onnxruntime, of the
``semantic`` extra, when it is there) and a model: the one memdex ships (memdex/models/)
unless another is named. Importing this package imports none of it: :func:`available` says
whether it can run, and why not.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

EXTRA = "pip install 'memdex[semantic]'"
REQUIRED = ("numpy", "tokenizers")  # memdex's own dependencies: missing only from a broken install


@cache  # asked once per search; looking the packages up costs a millisecond each time
def available() -> str | None:
    "None when search by meaning can run here, else why not (which package is missing)."
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed ({EXTRA})"
    return None


# `memdex index` and the watcher make vectors after the words unless this is 0 (or false, no,
# off): then the index stays words only until `memdex embed` (or `memdex index --semantic`).
INDEX_ENV = "MEMDEX_INDEX_SEMANTIC"


def vectors_follow() -> bool:
    "Do ``memdex index`` and the watcher embed what they wrote? Yes, unless $MEMDEX_INDEX_SEMANTIC says no."
    return os.environ.get(INDEX_ENV, "").strip().lower() not in ("0", "false", "no", "off")


@dataclass
class EmbedReport:
    "What a run of ``memdex embed`` (or one after the words) did."

    model: str
    embedded: int = 0  # chunks the model ran on
    reused: int = 0  # chunks whose text already had a vector
    removed: int = 0  # vectors of chunks that are gone
    windows: int = 0  # texts the model read: a chunk's first window and any more
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # of this process, every thread (the model's own included)
    matrix: str = ""  # what became of the matrix file searches read (vectors.refresh)

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def embed_after_index(
    conn: sqlite3.Connection, progress: Callable[[int, int], None] | None = None
) -> dict[str, object]:
    """What ``memdex index`` and ``Index.index`` add after the words: vectors for the chunks
    that have none, with ``embed.following_spec``'s model; or, instead of failing the run
    whose words are written, why not (``skipped``). A run with nothing new to embed is told so
    here, without numpy or the model (``_nothing_new``): 60 ms of a `memdex index` that found
    nothing changed."""
    missing = available()
    if missing:
        return {"skipped": f"search by meaning cannot run here: {missing}"}
    done = _nothing_new(conn)
    if done is not None:
        return done.to_dict()
    from memdex.errors import MemdexError
    from memdex.query.meaning.embed import embed_spec, following_spec

    try:
        return embed_spec(conn, following_spec(conn), progress=progress).to_dict()
    except (MemdexError, OSError) as exc:
        return {"skipped": f"no vectors made: {exc}"}


def _nothing_new(conn: sqlite3.Connection) -> EmbedReport | None:
    """The report of a run after the words that finds nothing to do -- the index's model where
    it recorded it (no $MEMDEX_EMBED_MODEL to switch to), every chunk with its vector, none
    left of a chunk that is gone, the matrix file at their version -- else None (then
    ``embed`` decides, and may load the model)."""
    from memdex.query.meaning.matrix_file import current_version, file_state, matrix_path
    from memdex.query.meaning.model import MODEL_ENV
    from memdex.store import db

    row = current_model(conn)
    if os.environ.get(MODEL_ENV) or row is None or not Path(row["source"]).is_dir():
        return None
    if conn.execute(db.query("vectors_pending"), {"model": row["name"]}).fetchone()[0]:
        return None
    path = matrix_path(conn)
    if path is None or file_state(path, row["name"], current_version(conn)) != "current":
        return None
    return EmbedReport(row["name"], matrix="current")


BLAS_ENV = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """Hold OpenBLAS to one thread in this process, before it first imports numpy: OpenBLAS
    then starts no threads of its own, which a search never uses (the query and the product
    run on one thread; the encoder's runs are its threads). Starting them cost a CLI search
    40 ms of CPU, and holding them to one thread afterwards through threadpoolctl another 8
    ms. Only the ``memdex`` command asks, for its own process, at its start (``doors.main``):
    a library never writes its user's environment. A setting of the user's own is kept."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(BLAS_ENV, "1")


def blas_pinned() -> bool:
    """Is BLAS held to one thread (its variable says so, as ``one_blas_thread`` set it before
    numpy loaded)? Else a search holds it there for its product itself (threadpoolctl)."""
    return os.environ.get(BLAS_ENV, "").strip() == "1" and _openblas()


@cache
def _openblas() -> bool:
    "Is numpy built with OpenBLAS (the only BLAS that reads the variable)?"
    import numpy as np

    name = str(np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {}).get("name", ""))
    return "openblas" in name.lower()


def current_model(conn: sqlite3.Connection) -> sqlite3.Row | None:
    "The model the index's newest vectors come from."
    from memdex.store import db

    return conn.execute(db.query("embedding_model_current")).fetchone()


def model_path(source: str, name: str | None = None) -> Path:
    """Where the model's files are: $MEMDEX_EMBED_MODEL when set, else where `memdex embed` read
    them; else the model memdex ships, when its vectors are the ones stored (``name``: the
    packaged model runs the full all-MiniLM-L6-v2 at int8 bit for bit, so a hub cache cleared or
    a folder deleted costs nothing), or when those files were the packaged model of another
    install (a search compares the names before it trusts the files)."""
    from memdex.errors import MemdexError
    from memdex.query.meaning.model import MODEL_ENV, PACKAGED_MODEL, resolve_model

    override = os.environ.get(MODEL_ENV)
    if override:
        return resolve_model(override)
    path = Path(source)
    if path.is_dir():
        return path
    if path.name == PACKAGED_MODEL and path.parent.name == "models":
        return resolve_model(None)
    if name is not None and _packaged_makes(name):
        return resolve_model(None)
    raise MemdexError(
        f"the embedding model is no longer at {path}: set {MODEL_ENV} to its folder, "
        "or run `memdex embed --model PATH` again"
    )


@cache  # asked by every search while the folder is gone; the package's model does not change
def _packaged_makes(name: str) -> bool:
    "Are vectors stored under ``name`` the packaged model's own?"
    from memdex.errors import MemdexError
    from memdex.query.meaning.embed import same_model
    from memdex.query.meaning.model import load_spec, resolve_model

    try:
        return same_model(name, load_spec(resolve_model(None)))
    except MemdexError:  # an install without its model: nothing to fall back on
        return False
