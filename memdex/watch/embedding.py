"""The watcher's meaning follower: chunks the watcher writes get their vectors in the background.

Words are searchable as soon as a batch commits; this thread then embeds the new chunks with
the model the index already has vectors of, in slices, on a connection of its own, so a
long embedding never delays the next batch of file changes. An index without vectors, or a
machine without the semantic extra, costs nothing: the thread says why and waits.
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
        from memdex.query.meaning import available, current_model

        missing = available()
        row = current_model(conn)
        if row is None:
            self.state["off"] = "no vectors in this index (run `memdex embed` once)"
            return
        if missing:
            self.state["off"] = missing
            return
        encoder = self._encoder_for(row["name"], row["source"])
        from memdex.query.meaning.embed import coverage_of, embed
        from memdex.query.meaning.vectors import refresh

        coverage = coverage_of(row["name"])  # the index's own: what its vectors were made with
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
        # Also when nothing was embedded: a batch that removed chunks with vectors changed it.
        self.state["matrix"] = refresh(conn, row["name"])
        self.state["off"] = None

    def _encoder_for(self, model: str, source: str) -> Encoder:
        "The passage encoder of the index's model, loaded once (again if the model changes)."
        if self._encoder is None or self._model != model:
            from memdex.query.meaning import model_path
            from memdex.query.meaning.embed import passage_encoder, same_model, vector_model
            from memdex.query.meaning.model import load_spec, precision_of

            # At the precision the index's vectors were made at: new ones must compare with them.
            encoder = passage_encoder(load_spec(model_path(source), precision_of(model)))
            if not same_model(model, encoder.spec):
                raise MemdexError(
                    f"the index's vectors are from {model}, the model found is {vector_model(encoder.spec)}"
                )
            self._encoder, self._model = encoder, model
            self.state["model"] = model
        return self._encoder
