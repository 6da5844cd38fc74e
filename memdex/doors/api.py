"""The Python door: ``memdex.Index``, one index as a program uses it.

What the command line does, as methods, through the same calls (``dispatch.run`` for a search
or an answer, ``watch.handoff`` for indexing as the only writer, ``query.options`` for the
names of the options)::

    import memdex

    with memdex.Index("memdex.db") as index:
        index.index("~/notes", "~/.claude/mnemonic")
        for hit in index.search("deploy key rotation", limit=5).hits:
            print(hit.title, hit.location)
        print(index.ask("What did we decide about the cache?").answer.summary)

An index keeps its own engine (``query.engine``): the query encoder and the vectors stay
loaded from one search to the next. It starts no thread unless it is made with
``stays=True`` (a program that searches again and again: onnxruntime's faster query encoder
is then built on a thread of the index, after its second search by meaning); ``close`` (or
the ``with`` block's end) waits for it.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdex.query.engine import Engine
from memdex.store import db

if TYPE_CHECKING:
    from memdex.doors.dispatch import Outcome
    from memdex.models import SearchResult
    from memdex.query.meaning import EmbedReport
    from memdex.query.request import SearchRequest


class Index:
    "One memdex index: index, search, ask, show, status and embed, as the command line does them."

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, stays: bool = False, engine: Engine | None = None
    ) -> None:
        """The index at ``path`` (default: ``$MEMDEX_DB``, else ``~/.local/share/memdex/memdex.db``),
        created on first use. ``stays``: this program keeps searching (see the module). ``engine``:
        one :class:`memdex.Engine` several indexes of a program share (its owner closes it)."""
        self.path = db.resolve_db_path(path)
        self._own_engine = engine is None
        self.engine = engine or Engine(stays=stays)
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<memdex.Index {self.path}>"

    @property
    def conn(self) -> sqlite3.Connection:
        "The index's connection, opened (and the index made or migrated) on first use."
        if self._conn is None:
            self._conn = db.connect(self.path)
        return self._conn

    def index(self, *paths: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
        """Index files and folders (every root indexed before, if none is given), as ``memdex
        index`` does: as the only writer, or through a running watcher. Options: ``kind``,
        ``scope``, ``max_file_size`` (bytes), ``chunk_tokens``, ``keep_deleted``,
        ``keep_secrets``, ``progress`` (called as ``progress(done, total)``), ``semantic``
        (then give new chunks vectors, as ``memdex index`` does: True unless
        $MEMDEX_INDEX_SEMANTIC=0; a running watcher embeds instead). Returns the report
        ``memdex index --json`` prints."""
        from memdex.query.meaning import embed_after_index, vectors_follow
        from memdex.watch.handoff import index_exclusive

        progress = options.pop("progress", None)
        semantic = options.pop("semantic", None)
        request = {"paths": [os.path.abspath(os.path.expanduser(p)) for p in paths], **options}
        for name in ("kind", "scope", "max_file_size", "chunk_tokens", "keep_deleted", "keep_secrets"):
            request.setdefault(name, None)
        handed: list[dict[str, Any]] = []
        report = index_exclusive(self.path, request, progress=progress, on_handoff=handed.append)
        if (vectors_follow() if semantic is None else semantic) and not handed:
            report["semantic"] = embed_after_index(self.conn)
        return report

    def search(self, query: str | SearchRequest, **options: Any) -> SearchResult:
        """Search, as ``memdex search`` does. ``query`` is the text (with ``options`` by the
        names every door takes: ``limit``, ``tags``, ``kinds``, ``since``, ``use_synonyms``...,
        ``memdex/query/options.py``) or a whole :class:`memdex.SearchRequest`."""
        return self.run(query, mode="search", **options).result

    def ask(self, question: str | SearchRequest, **options: Any) -> Outcome:
        """Answer a question with citations, as ``memdex ask`` does: its ``answer`` (summary,
        details, sources), its ``result`` (the passages found) and its ``refinement``."""
        return self.run(question, mode="answer", **options)

    def run(self, query: str | SearchRequest, **options: Any) -> Outcome:
        "A search or an answer (``mode``: search, answer, auto), the options by the table's names."
        from memdex.doors.dispatch import run
        from memdex.query.options import parse

        if isinstance(query, str):
            asked = parse(query, options)
            return run(self.conn, asked.request, engine=self.engine, **asked.answer)
        return run(self.conn, query, engine=self.engine, **options)

    def show(self, ref: int | str, **options: Any) -> dict[str, Any]:
        """A document, whole or some of its lines, as ``memdex show --json`` prints it: ``ref`` is
        its id or anything a result prints to name it. Options: ``line_start``, ``line_end``,
        ``max_tokens``."""
        from memdex.query.documents import get_document

        return get_document(self.conn, ref, **options)

    def status(self) -> dict[str, Any]:
        "What the index holds, its writer and its server, as ``memdex status --json`` prints it."
        from memdex.doors.status import status

        return status(self.conn, Path(self.path))

    def embed(self, model: str | None = None, **options: Any) -> EmbedReport:
        """Give every chunk a vector, as ``memdex embed`` does (``model`` None: $MEMDEX_EMBED_MODEL,
        else the index's own, else the one memdex ships). Options: ``precision``, ``coverage``,
        ``batch_size``, ``threads``, ``progress``."""
        from memdex.query.meaning.embed import embed_index
        from memdex.query.meaning.model import MODEL_ENV

        return embed_index(self.conn, model or os.environ.get(MODEL_ENV) or None, **options)

    def close(self) -> None:
        "Close the connection; wait for anything its own engine started."
        if self._own_engine:
            self.engine.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
