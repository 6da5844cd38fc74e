"""A search: the readings of a query tried in order, each at most once, then its result.

A query can be read more than one way, and the search tries them in the order ``_readings``
states, each at most once, never calling itself:

1. **as typed**, month, year and relative-date words read as dates ("October", "last week");
2. **dates read as words**, when nothing dated then matched ("earnings this year");
3. **typos fixed**: the nearest indexed words in place of words no document holds ("did you
   mean"), when ``fix_typos`` asks or nothing matched at all, and only when that changes the
   words searched;
4. **typos fixed, dates read as words**, as 2 for 3.

Each reading is one attempt: a listing of what is dated then for a query of dates alone
(``query.listing``), else the cascade of layers (``query.cascade``), the meaning pass
(``query.meaning.passes``) fused in, and the hits made (``query.results``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from memdex.models import SearchResult
from memdex.query import marks, results, suggest
from memdex.query.cascade import Cascade, filter_params
from memdex.query.engine import Engine, given_or_own
from memdex.query.listing import list_period
from memdex.query.request import SearchRequest, as_request
from memdex.query.terms import Term, parse_query
from memdex.query.themes import patterns_noticed
from memdex.store import db


def search(
    conn: sqlite3.Connection, request: SearchRequest | str, engine: Engine | None = None, **options: Any
) -> SearchResult:
    """Run the cascade for a request and return ranked hits.

    ``request`` is a :class:`SearchRequest`, or the query text with the request's fields as
    keywords: ``search(conn, "deploy keys", limit=5)``. ``engine`` keeps the query encoder and
    the vectors for the next search (``query.engine``); without one, this search loads them
    for itself and keeps nothing.
    """
    request = as_request(request, options)
    # Text that cannot be encoded (lone surrogates from undecodable arguments) must not reach
    # SQLite as an exception: the odd characters become "?".
    request = request.with_changes(query=request.query.encode("utf-8", "replace").decode("utf-8"))
    request.check()
    with given_or_own(engine) as engine:
        with snapshot(conn):
            result = _search(conn, request, engine)
            marks.mark(conn, result.hits)  # every door: a source deleted, a session's way back in
            if request.patterns:
                result.patterns = patterns_noticed(conn, result.hits)
        engine.after_search()  # an engine that stays: its faster query encoder, built now
    return result


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction around a search's statements, so they all see the same index: a
    writer committing between two of them must not leave a hit without its document."""
    if conn.in_transaction:  # the caller's own transaction is the snapshot
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")  # nothing was written; ends the read


@dataclass(frozen=True)
class Reading:
    "One way to read a query: its text, and whether its month, year and relative-date words are dates."

    text: str
    dates: bool
    notes: tuple[str, ...] = ()  # what earlier readings found worth saying, said first

    def undated(self, notes: tuple[str, ...]) -> Reading:
        "The same text with its dates read as words, saying first what the dated reading found."
        return replace(self, dates=False, notes=(*self.notes, *notes))


@dataclass
class Attempt:
    "What one reading found: its result and terms, or that nothing was dated when it asked."

    result: SearchResult | None = None
    terms: list[Term] = field(default_factory=list)
    # nothing dated then matched: the notes for the next reading, which reads the dates as words
    nothing_dated: tuple[str, ...] = ()


def _search(conn: sqlite3.Connection, request: SearchRequest, engine: Engine) -> SearchResult:
    "The readings of ``_readings``, in its order, each at most once; the result they settle on."
    readings = _readings(conn, request)
    reading = next(readings)
    while True:
        attempt = _attempt(conn, request, reading, engine)
        try:
            reading = readings.send(attempt)
        except StopIteration as done:
            result: SearchResult = done.value
            return result


def _readings(conn: sqlite3.Connection, request: SearchRequest) -> Generator[Reading, Attempt, SearchResult]:
    """The readings of the module docstring, in order; each is sent back what it found. Returns
    the result to show: the query's own, or its typos fixed, or its own with "did you mean"."""
    typed = Reading(request.query, dates=not request.raw)
    attempt = yield typed
    if attempt.nothing_dated:
        attempt = yield typed.undated(attempt.nothing_dated)
    assert attempt.result is not None
    result = attempt.result
    if request.raw or not attempt.terms:
        return result
    typos = suggest.find_typos(conn, request.query, attempt.terms)
    if typos is None or not typos.changes_words():
        return result
    if request.fix_typos or result.found == 0:
        fixed = Reading(typos.query, dates=typed.dates)
        attempt = yield fixed
        if attempt.nothing_dated:
            attempt = yield fixed.undated(attempt.nothing_dated)
        assert attempt.result is not None
        if request.fix_typos or attempt.result.found:
            return suggest.searched_instead(typos, attempt.result, request)
    return suggest.suggested(typos, result)


def _attempt(conn: sqlite3.Connection, request: SearchRequest, reading: Reading, engine: Engine) -> Attempt:
    """One reading searched: listed when it is dates alone, else the cascade, meaning fused
    in, and its hits made. When it reads dates and nothing dated then matches, it says so
    (``nothing_dated``) and goes no further: the next reading reads them as words."""
    request = request.with_changes(query=reading.text)
    query, raw, filters = reading.text, request.raw, request.filters
    parsed = parse_query(query, date_words=reading.dates)
    own = tuple(
        f"read “{name}” as a word, not a month: write “in {name}” to search what is dated then"
        for name in parsed.month_names
    )
    notes = [*reading.notes, *own]
    nothing_dated = (*own, f"nothing dated {' '.join(parsed.date_words)}; searched those words as text")
    if not raw and parsed.date_only:  # "October", "last week": list what is dated then
        listed = list_period(conn, request, parsed, filter_params(request, parsed))
        # A relative date ("3 weeks ago") is never a word to search for: nothing dated then is
        # the answer (the listing's note says so). A year or a month may be a word ("2019").
        if listed.found or parsed.spans:
            listed.notes[:0] = notes
            return Attempt(listed)
        return Attempt(nothing_dated=nothing_dated)
    run = Cascade(conn, parsed, request)
    run.notes += notes
    if raw:
        run.raw(query)
    elif parsed.key_terms:
        run.run()
        if not run.candidates and parsed.filtering:
            # Nothing dated then matches the other words: they still say what the question is
            # about ("what did Jon paint last week?" asked of conversations from 2023), and the
            # date's words may be plain words after all ("earnings this year").
            return Attempt(nothing_dated=nothing_dated)
        if parsed.loose:
            run.loose_first()
        if parsed.dated:
            run.fill_dated()
    else:
        run.notes.append("the query has no words to search for")
    meaning = None
    if not raw and parsed.key_terms:
        from memdex.query.meaning.passes import MeaningPass, meaning_pass

        if run.settled():  # meaning could not change the results shown: skip its cost
            meaning = MeaningPass(False, "not needed: enough results matched every key word")
        else:
            meaning = meaning_pass(conn, query, request.semantic, run.params, engine)
        if meaning.used and meaning.near:
            run.fuse(meaning.near)
        if meaning.note:
            run.notes.append(meaning.note)
    hits, truncated = run.hits()
    if not hits and filters.kinds:
        present = [r[0] for r in conn.execute(db.query("kinds_present"))]
        unknown = [k for k in filters.kinds if k not in present]
        if unknown:
            run.notes.append(
                f"no documents of kind {', '.join(unknown)} here; kinds in this index: {', '.join(present)}"
            )
    if not hits:  # what to try instead: filter values the index holds, a budget that fits
        run.notes += suggest.filter_notes(conn, filters)
        if truncated and run.ranked():
            run.notes.append(suggest.budget_note(conn, run.ranked()[0], run.terms, request))
    result = SearchResult(
        query=query,
        terms=[t.text for t in run.terms],
        granularity=request.granularity,
        found=run.found(),
        documents_found=run.documents_found(),
        found_is_total=run.exhaustive,
        hits=hits,
        layers=run.layers,
        filters={**filters.to_dict(), **parsed.date_filters()},
        truncated_by_budget=truncated,
        notes=run.notes,
        semantic=meaning.to_dict() if meaning else None,
        related_words=run.related,
        left_out=results.left_out(conn, run.left_out),
    )
    return Attempt(result, run.terms)


__all__ = ["Reading", "search", "snapshot"]
