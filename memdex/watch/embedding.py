"""The watcher's meaning follower: chunks the watcher writes get their vectors in the background.

Words are searchable as soon as a batch commits; this thread then embeds the new chunks --
newest documents first -- with the model the index already has vectors of (else the one memdex
ships), in slices, on a connection of its own, so a long embedding never delays the next batch
of file changes, and a kill loses at most a slice. With $MEMDEX_INDEX_SEMANTIC=0 it costs
nothing: the thread says why and waits.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdex.errors import MemdexError
from memdex.store import db
from memdex.utils import utc_stamp

if TYPE_CHECKING:
    from memdex.query.meaning.encoder import Encoder
    from memdex.query.meaning.model import ModelSpec

SLICE = 256  # chunks embedded between two looks at the stop flag
log = logging.getLogger("memdex.watch")


class MeaningFollower:
    "Embeds what the watcher wrote, after it wrote it; ``poke()`` after every batch."

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.state: dict[str, Any] = {
            "model": None,
            "embedded": 0,
            "reused": 0,
            "at": None,
            "off": None,
            "matrix": None,  # what became of the matrix file last time (vectors.refresh)
        }
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memdex-meaning", daemon=True)
        self._encoder: Encoder | None = None
        self._model: str | None = None

    def start(self) -> None:
        self._thread.start()
        self.poke()

    def poke(self) -> None:
        "New chunks may be waiting."
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        conn = db.connect(self.db_path)
        try:
            while not self._stop.is_set():
                self._wake.wait()
                self._wake.clear()
                if self._stop.is_set():
                    break
                try:
                    self._follow(conn)
                except (MemdexError, OSError, sqlite3.Error) as exc:  # expected: say so, go on
                    self.state["off"] = str(exc)
                    log.warning("meaning: %s", exc)
                except Exception:  # the thread's boundary: a bug here must not stop the watcher
                    from memdex.errors import raise_errors

                    log.exception("meaning: unexpected error (a memdex bug: please report it)")
                    if raise_errors():
                        raise
        finally:
            conn.close()

    def _follow(self, conn: sqlite3.Connection) -> None:
        from memdex.query.meaning import INDEX_ENV, available, vectors_follow

        missing = available()
        if missing:
            self.state["off"] = missing
            return
        if not vectors_follow():
            self.state["off"] = f"turned off (${INDEX_ENV}); `memdex embed` makes vectors"
            return
        from memdex.query.meaning.embed import (
            embed,
            following_spec,
            index_coverage,
            up_to_date,
            vector_model,
        )
        from memdex.query.meaning.embed import missing as unembedded
        from memdex.query.meaning.vectors import refresh
        from memdex.query.meaning.windows import DEFAULT_COVERAGE

        # The index's own model, precision and coverage, else the model memdex ships; never a
        # silent switch when the index's model cannot be found (MemdexError: said, and waited on).
        spec = following_spec(conn)
        coverage = index_coverage(conn, spec) or DEFAULT_COVERAGE
        model = vector_model(spec, coverage)
        self.state["model"] = model
        if not unembedded(conn, model):  # nothing new: the model is not even loaded
            # Chunks of a batch that removed them leave vectors behind, and the matrix with them.
            self.state["matrix"] = up_to_date(conn, spec, model).matrix
            self.state["off"] = None
            return
        encoder = self._encoder_for(spec)
        while not self._stop.is_set():
            report = embed(conn, encoder, limit=SLICE, coverage=coverage, write_matrix=False)
            self.state["embedded"] += report.embedded
            self.state["reused"] += report.reused
            if report.embedded or report.reused:
                self.state["at"] = utc_stamp()
                log.info("meaning: %d chunks embedded, %d reused", report.embedded, report.reused)
            if report.embedded + report.reused < SLICE:
                break
        # Once the slices are done (or stopping), not after each: the file is the whole matrix.
        self.state["matrix"] = refresh(conn, model)
        self.state["off"] = None

    def _encoder_for(self, spec: ModelSpec) -> Encoder:
        "The passage encoder of this model, loaded once (again if the model changes)."
        if self._encoder is None or self._model != spec.name:
            from memdex.query.meaning.embed import passage_encoder

            self._encoder, self._model = passage_encoder(spec), spec.name
        return self._encoder
