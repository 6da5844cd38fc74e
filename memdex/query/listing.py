"""A query of dates alone ("October", "May 2026", "last week", "what happened yesterday?"):
the documents dated in its period, newest first, with the themes of that time.

Limit, granularity, token budget and filters work as for any search; at chunk granularity
a document's chunks follow one another in reading order. Each result is of layer 0 (date)
and its ``why_relevant`` says its date and where that date came from. A document with no
date of its own is dated by its file's modification time, as date filters date it, and the
note counts how many are: a copy or a checkout gives every file a new modification time, so
such a date says when a file arrived as often as when it was written.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from memdex.models import Candidate, Hit, LayerRun, SearchResult
from memdex.query import period
from memdex.query.ranking import DATE_LAYER, LAYER_NAMES, PERIOD_ORDER
from memdex.query.request import SearchRequest
from memdex.query.results import build_hits
from memdex.query.terms import ParsedQuery
from memdex.query.themes import themes
from memdex.store import db

SOURCE_WORDS = {
    "frontmatter": "its frontmatter",
    "conversation": "the conversation's timestamps",
    "text": "a date in its text",
    "file name": "its file name",
    "mtime": "its file's modification time (dated by file time)",
}


def list_period(
    conn: sqlite3.Connection, request: SearchRequest, parsed: ParsedQuery, params: dict[str, Any]
) -> SearchResult:
    "The documents dated in the query's period (with the request's filters), newest first."
    sql = db.query("period_documents")
    started = time.perf_counter()
    rows = conn.execute(sql, params).fetchall()
    ids = [r["document_id"] for r in rows]
    by_mtime = sum(1 for r in rows if r["by_mtime"])
    ms = round((time.perf_counter() - started) * 1000, 3)
    if request.granularity == "chunk":
        chunks: dict[int, list[int]] = {}
        for r in conn.execute(db.query("chunks_of_documents"), {"ids": json.dumps(ids)}):
            chunks.setdefault(r["document_id"], []).append(r["id"])
        pool = [Candidate(doc, 0, DATE_LAYER, 0.0, {cid: 0.0}) for doc in ids for cid in chunks.get(doc, [])]
    else:
        pool = [Candidate(doc, 0, DATE_LAYER, 0.0) for doc in ids]
    hits, truncated = build_hits(
        conn, pool[: request.limit], [], request.granularity, request.max_tokens, request.full_text
    )
    since, until = parsed.window()
    label = period.describe(parsed.date_words, since, until)
    for hit in hits:
        hit.why_relevant = why_dated(hit, label)
    rendered = db.render_sql(sql, params)
    run = LayerRun(DATE_LAYER, LAYER_NAMES[DATE_LAYER], "", "date", rendered, len(ids), len(ids), ms)
    return SearchResult(
        query=request.query,
        terms=[],
        granularity=request.granularity,
        found=len(pool),
        hits=hits,
        layers=[run],
        filters={**request.filters.to_dict(), **parsed.date_filters()},
        truncated_by_budget=truncated,
        notes=[period_note(len(ids), by_mtime, label)],
        themes=[t.to_dict() for t in themes(conn, ids)],
        period={"words": parsed.date_words, "since": since, "until": until, "order": PERIOD_ORDER},
    )


def period_note(found: int, by_mtime: int, label: str) -> str:
    "What a period holds, and how many of those are dated by their file's modification time."
    if not found:
        return f"nothing is dated {label}"
    unit = "document" if found == 1 else "documents"
    note = f"{found:,} {unit} dated {label}, listed {PERIOD_ORDER}"
    if by_mtime:
        note += (
            f"; {by_mtime:,} of them dated by file time (a file's modification time, "
            "which a copy or a checkout sets anew)"
        )
    return note


def why_dated(hit: Hit, label: str) -> dict[str, Any]:
    "why_relevant of a listed result: its date, where that came from, and the period."
    source = SOURCE_WORDS.get(hit.date_source or "", "its index entry")
    day = (hit.date or "")[:10]
    return {
        "layer": DATE_LAYER,
        "layer_name": LAYER_NAMES[DATE_LAYER],
        "match": "date",
        "terms": [],
        "synonyms": [],
        "missing": [],
        "date": hit.date,
        "date_source": hit.date_source,
        "summary": f"layer {DATE_LAYER} (date): dated {day}, from {source}; in {label}",
    }
