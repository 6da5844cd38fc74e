"""A Datasette plugin: memdex's query layer as SQL functions, for canned queries and ?sql=.

Loaded by Datasette through the ``datasette`` entry point whenever memdex is installed
beside it (``memdex datasette`` registers it too). On every memdex database it adds:

- ``memdex_words(text)`` -- the tokens of a text as the index holds them (``memdex.tokens``):
  the full-text tables read their content through views that call it;
- ``escape_fts(q)``, in place of Datasette's own -- the search box's text made the phrases of
  its tokens, so "deployment" finds "deploy" and 東京 a note in Japanese (Datasette's quotes
  the words as typed, which the tokens would not match);
- ``memdex_snippet(text, q)`` -- about 32 words of ``text`` around the words of ``q``, marked
  «so», as ``memdex search`` shows them;

- ``memdex_match(q)`` -- the FTS5 expression memdex builds for the text ``q``: its key words,
  escaped, all of them required (layers 1 and 3); ``memdex_match(q, 1)`` with each word's
  synonyms as alternatives (layers 2 and 4). ``'""'`` (matches nothing) if ``q`` has no words.
- ``memdex_search(q)``, ``memdex_search(q, limit)`` -- the whole cascade, exactly as
  ``memdex search`` ranks it, as a JSON array of results in the shape every door gives them
  (``json_each`` turns it into rows).

The functions read through a read-only connection of their own to the same file, so a
canned query never runs memdex's statements inside Datasette's.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from datasette import hookimpl

if TYPE_CHECKING:
    from memdex.query.engine import Engine
    from memdex.query.explain import Explainer

_local = threading.local()


def _reader(path: str) -> sqlite3.Connection:
    "This thread's read-only memdex connection to ``path``."
    from memdex.store import db

    readers: dict[str, sqlite3.Connection] = getattr(_local, "readers", None) or {}
    _local.readers = readers
    if path not in readers:
        readers[path] = db.connect(path, create=False, readonly=True, upgrade=True)
    return readers[path]


_engines: list[Engine] = []  # the one engine of this Datasette, made on its first search
_engine_made = threading.Lock()


def _engine() -> Engine:
    """The engine (query.engine) every thread's searches share: the query encoder and vectors
    loaded once for the process, not once for each of Datasette's threads."""
    from memdex.query.engine import Engine

    with _engine_made:
        if not _engines:
            _engines.append(Engine())
        return _engines[0]


def match_expression(conn: sqlite3.Connection, q: str | None, with_synonyms: int = 0) -> str:
    from memdex.query import synonyms
    from memdex.query.terms import all_of, parse_query

    terms = parse_query(q or "").key_terms
    if not terms:
        return '""'
    if with_synonyms:
        expanded = synonyms.expand(conn, terms)
        return all_of([[t, *t.synonyms] for t in expanded])
    return all_of([[t] for t in terms])


def search_json(
    conn: sqlite3.Connection, q: str | None, limit: int = 10, engine: Engine | None = None
) -> str:
    "The cascade's results for ``q`` as a JSON array, each result as every door writes it (Hit.to_dict)."
    from memdex.query.search import search

    result = search(conn, q or "", engine, limit=max(1, min(int(limit), 100)))
    return json.dumps([hit.to_dict() for hit in result.hits], ensure_ascii=False, default=str)


def escape_fts(q: str | None) -> str:
    """The search box's text as memdex's tokens: each word typed (a run of letters and digits;
    quotes and operators are text) a phrase every row must match, as Datasette's own
    escape_fts asks every word; ``'""'`` (matches nothing) when there is no word."""
    from memdex.tokens import WORD, phrase

    typed = WORD.findall(q or "")
    return " ".join(phrase([w]) for w in typed) if typed else '""'


def snippet(text: str | None, q: str | None) -> str:
    return _explainer(q or "").snippet(text or "")


@lru_cache(maxsize=32)
def _explainer(q: str) -> Explainer:
    "The query's explainer, made once for all the rows a query shows a snippet of."
    from memdex.query.explain import Explainer
    from memdex.query.terms import parse_query

    return Explainer(parse_query(q).key_terms)


def _is_memdex(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memdex_migrations'").fetchone()
    return row is not None


# trylast: after Datasette's own prepare_connection, so this escape_fts is the one it calls
@hookimpl(trylast=True)
def prepare_connection(conn: sqlite3.Connection, database: str, datasette: Any) -> None:
    try:
        if not _is_memdex(conn):
            return
        path = datasette.get_database(database).path
    except (sqlite3.Error, KeyError):
        return
    from memdex.store.db import add_functions

    add_functions(conn)
    conn.create_function("escape_fts", 1, escape_fts, deterministic=True)
    conn.create_function("memdex_snippet", 2, snippet, deterministic=True)
    if not path:
        return

    def match(q: str | None, with_synonyms: int = 0) -> str:
        return match_expression(_reader(path), q, with_synonyms)

    def cascade(q: str | None, limit: int = 10) -> str:
        return search_json(_reader(path), q, limit, _engine())

    conn.create_function("memdex_match", 1, match)
    conn.create_function("memdex_match", 2, match)
    conn.create_function("memdex_search", 1, cascade)
    conn.create_function("memdex_search", 2, cascade)


# An address that asks a table for ``_search`` and nothing else (a link, a bookmark, a typed
# URL) goes to the canned query that ranks the same FTS table by relevance: Datasette's table
# view lists matches by id or date. The table page's own search form also sends its sort and
# filter fields, so a search typed there stays the table view, with its facets (see
# docs/datasette.md). The JSON API, and any other argument, stay Datasette's own.
RANKED_SEARCH = {"documents": "layer_1_topics", "chunks": "layer_3_content"}


@hookimpl
def asgi_wrapper(datasette: Any) -> Any:
    from urllib.parse import parse_qs, urlencode

    from datasette.utils import tilde_decode

    def wrap(app: Any) -> Any:
        async def ranked(scope: dict[str, Any], receive: Any, send: Any) -> None:
            target = _ranked_target(scope, parse_qs)
            # the address names the database tilde-encoded (work.notes.db is /work~2Enotes/)
            if target is None or tilde_decode(target[0]) not in datasette.databases:
                await app(scope, receive, send)
                return
            segment, query, q = target
            location = f"/{segment}/{query}?{urlencode({'q': q})}"
            headers = [(b"location", location.encode()), (b"content-type", b"text/plain")]
            await send({"type": "http.response.start", "status": 302, "headers": headers})
            await send({"type": "http.response.body", "body": b""})

        return ranked

    return wrap


def _ranked_target(scope: dict[str, Any], parse_qs: Any) -> tuple[str, str, str] | None:
    "(database, canned query, q) for a table-page search to rank, else None."
    if scope.get("type") != "http" or scope.get("method") != "GET":
        return None
    parts = scope.get("path", "").strip("/").split("/")
    if len(parts) != 2 or parts[1] not in RANKED_SEARCH:
        return None
    args = parse_qs(scope.get("query_string", b"").decode("utf-8", "replace"))
    if "_search" not in args or "_sort" in args or "_sort_desc" in args or len(args) > 1:
        return None  # filters, facets and sorts of the table view stay the table view's
    return parts[0], RANKED_SEARCH[parts[1]], args["_search"][0]
