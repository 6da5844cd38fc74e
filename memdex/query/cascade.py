"""The four-layer search cascade, run as ranked SQL.

Layers, narrow to wide, each a named query in ``schema/queries/``:

1. topics -- titles, descriptions, tags and topics, with the query's own terms;
2. topics with synonyms -- each term, or one of its synonyms;
3. content -- chunk text, with the query's own terms;
4. content with synonyms.

First every layer asks for documents matching *all* key terms; the cascade widens only while
it has fewer results than asked for. If the four layers together still have too few, a last
pass ranks documents matching *any* key term by one fused BM25 score (the best chunk's
content score, plus a tenth of the topics score; synonyms at half weight). Results of the
all-terms passes come first, by layer; each carries the layer that first found it and why.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from memdex.errors import InvalidParameter, QuerySyntaxError
from memdex.models import Hit, LayerRun, SearchResult
from memdex.query import synonyms
from memdex.query.ranking import LAYER_NAMES, SYNONYM_WEIGHT
from memdex.query.results import best_chunks, build_hits
from memdex.query.terms import ParsedQuery, Term, all_of, any_of, parse_query
from memdex.store import db

# The any-term pass adds the topics score to the content score. Topic fields are short, so
# their raw bm25 runs large and, at weight 0.5, swamped the content score: Serena dev
# recall@10 0.807 -> 0.836 and SciFact nDCG@10 0.658 -> 0.699 going from 0.5 to 0.1
# (scripts/eval.py). Layers 1-2 still put documents matching all terms in topics first.
TOPIC_WEIGHT = 0.1
# Half of a document's score in that pass is plain bm25 over its whole text, which counts
# words spread across sections together: Serena recall@10 0.822 -> 0.841 and MRR
# 0.740 -> 0.776 (plain FTS5 over whole files: 0.802 / 0.743); SciFact unchanged.
BODY_WEIGHT = 0.5
# At chunk granularity a chunk's score also counts how well its whole document matches, so a
# passage from the conversation the question is about outranks an echo from another one:
# chat questions with their gold turns inside a 2,000-token answer, dev split, 0.75 -> 0.80
# (scripts/eval.py --set chats); flat from 1.0 to 3.0.
CHUNK_CONTEXT_WEIGHT = 1.0
# The any-term pass leaves out a term found in at least this share of all passages (and in
# COMMON_MIN_ROWS of them), when some rarer term is left to search for. BM25 gives such a term
# little weight, but scoring it means reading its whole posting list, in every layer: at
# 100,000 generated notes, a common word with two rare ones took 180 ms (p50) and 330 ms (p95).
# Indexes of fewer passages than COMMON_MIN_ROWS are never pruned (SciFact, Serena: unchanged).
COMMON_SHARE = 0.05
COMMON_MIN_ROWS = 10_000
GRANULARITIES = ("doc", "chunk")
MAX_RAW_CHARS = 2000
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ][0-9:.]+Z?)?)?)?$")


@dataclass
class Filters:
    "Restrict a search. Empty fields do not filter."

    kinds: list[str] = field(default_factory=list)
    namespace: str | None = None
    type: str | None = None
    scope: str | None = None
    platform: str | None = None
    tags: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None

    def params(self, parsed: ParsedQuery | None = None) -> dict[str, Any]:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and not _DATE.match(value):
                raise InvalidParameter(f"--{name} {value!r} is not a date: use YYYY, YYYY-MM or YYYY-MM-DD.")
        return {
            "kinds": json.dumps(self.kinds) if self.kinds else None,
            "namespace": self.namespace,
            "type": self.type,
            "scope": self.scope,
            "platform": self.platform,
            "tags": json.dumps(self.tags) if self.tags else None,
            "since": self.since,
            "until": self.until,
            "years": json.dumps(parsed.years) if parsed and parsed.years else None,
            "months": json.dumps(parsed.months) if parsed and parsed.months else None,
        }

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [])}


@dataclass
class _Candidate:
    document_id: int
    tier: int  # 1-4: all terms matched in that layer; 5: some terms, any-term pass
    layer: int
    score: float  # higher is better; comparable within one tier
    chunks: dict[int, float] = field(default_factory=dict)  # chunk id -> score


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    limit: int = 10,
    granularity: str = "doc",
    max_tokens: int | None = None,
    use_synonyms: bool = True,
    raw: bool = False,
    filters: Filters | None = None,
    full_text: bool = False,
) -> SearchResult:
    """Run the cascade for ``query`` and return ranked hits.

    :param granularity: ``doc`` (one hit per document) or ``chunk`` (one per matching chunk)
    :param max_tokens: stop adding hits before their estimated tokens would pass this budget
    :param raw: treat ``query`` as an FTS5 expression (layers 1 and 3 only, no synonyms)
    :param full_text: include each hit's text (the chunk, or the whole document)
    """
    # Text that cannot be encoded (lone surrogates from undecodable arguments) must not reach
    # SQLite as an exception: the odd characters become "?".
    query = query.encode("utf-8", "replace").decode("utf-8")
    if raw and len(query) > MAX_RAW_CHARS:
        raise QuerySyntaxError(
            f"A raw FTS5 query may be at most {MAX_RAW_CHARS:,} characters (this one is {len(query):,}); "
            "FTS5's cost grows with its square. Shorten it, or drop --raw."
        )
    if granularity not in GRANULARITIES:
        raise InvalidParameter(f"granularity must be doc or chunk, not {granularity!r}.")
    if limit < 1:
        raise InvalidParameter(f"limit must be 1 or more, not {limit}.")
    filters = filters or Filters()
    with snapshot(conn):
        return _search(conn, query, limit, granularity, max_tokens, use_synonyms, raw, filters, full_text)


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


def _search(
    conn: sqlite3.Connection,
    query: str,
    limit: int,
    granularity: str,
    max_tokens: int | None,
    use_synonyms: bool,
    raw: bool,
    filters: Filters,
    full_text: bool,
) -> SearchResult:
    parsed = parse_query(query, date_words=not raw)
    run = _Cascade(conn, parsed, filters, limit, granularity, use_synonyms)
    if raw:
        run.raw(query)
    elif parsed.key_terms:
        run.run()
        if not run.candidates and (parsed.years or parsed.months):
            # No document is dated that way: the date words may be plain words after all.
            note = f"nothing dated {' '.join(parsed.date_words)}; searched those words as text"
            parsed = parse_query(query, date_words=False)
            run = _Cascade(conn, parsed, filters, limit, granularity, use_synonyms)
            run.notes.append(note)
            run.run()
    else:
        run.notes.append("the query has no words to search for")
    hits, truncated = run.hits(max_tokens, full_text)
    if not hits and filters.kinds:
        present = [r[0] for r in conn.execute(db.query("kinds_present"))]
        unknown = [k for k in filters.kinds if k not in present]
        if unknown:
            run.notes.append(
                f"no documents of kind {', '.join(unknown)} here; kinds in this index: {', '.join(present)}"
            )
    return SearchResult(
        query=query,
        terms=[t.text for t in run.terms],
        granularity=granularity,
        found=run.found(),
        found_is_total=run.exhaustive,
        hits=hits,
        layers=run.layers,
        filters={**filters.to_dict(), **_date_filters(parsed)},
        truncated_by_budget=truncated,
        notes=run.notes,
    )


def _date_filters(parsed: ParsedQuery) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if parsed.years:
        out["years"] = parsed.years
    if parsed.months:
        out["months"] = parsed.months
    return out


class _Cascade:
    def __init__(
        self,
        conn: sqlite3.Connection,
        parsed: ParsedQuery,
        filters: Filters,
        limit: int,
        granularity: str,
        use_synonyms: bool,
    ) -> None:
        self.conn = conn
        self.parsed = parsed
        self.limit = limit
        self.granularity = granularity
        self.params = filters.params(parsed)
        self.terms: list[Term] = list(parsed.key_terms)
        if use_synonyms and self.terms:
            self.terms = synonyms.expand(conn, self.terms)
        self.candidates: dict[int, _Candidate] = {}
        self.chunk_hits: dict[int, _Candidate] = {}  # chunk granularity: chunk id -> candidate
        self.layers: list[LayerRun] = []
        self.notes: list[str] = []
        # True while every match has been collected: no layer was cut by its row limit, and the
        # cascade did not stop widening early. Then ``found`` is the number of all matches.
        self.exhaustive = True

    # -- running the layers ------------------------------------------------------------
    def _run_layer(self, layer: int, match: str, mode: str, limit: int, name: str = "") -> list[sqlite3.Row]:
        name = name or ("layer_topics" if layer <= 2 else "layer_content")
        params = {**self.params, "match": match, "limit": limit}
        sql = db.query(name)
        started = time.perf_counter()
        rows = self.conn.execute(sql, params).fetchall()
        ms = round((time.perf_counter() - started) * 1000, 3)
        if len(rows) >= limit:
            self.exhaustive = False
        self.layers.append(
            LayerRun(
                layer,
                LAYER_NAMES[layer],
                match,
                mode,
                db.render_sql(sql, params),
                found=len({r["document_id"] for r in rows}),
                new=0,
                ms=ms,
            )
        )
        return rows

    def _enough(self) -> bool:
        pool = self.chunk_hits if self.granularity == "chunk" else self.candidates
        return len(pool) >= self.limit

    def run(self) -> None:
        originals = [[t] for t in self.terms]
        expanded = [[t, *t.synonyms] for t in self.terms]
        has_synonyms = any(t.synonyms for t in self.terms)
        fetch = max(self.limit * 5, 50)
        for layer in (1, 2, 3, 4):
            if layer in (2, 4) and not has_synonyms:
                continue
            groups = expanded if layer in (2, 4) else originals
            rows = self._run_layer(layer, all_of(groups), "all", fetch if layer <= 2 else fetch * 4)
            self._add(layer, layer, rows, weight=1.0)
            if self._enough():
                self.exhaustive = False
                return
        if len(self.terms) > 1:  # with one term, "any" is "all": nothing new to find
            self._any_terms(originals, has_synonyms, fetch)

    def _any_terms(self, originals: list[list[Term]], has_synonyms: bool, fetch: int) -> None:
        """The widest pass: documents matching any key term, ranked by one fused score.

        score = (1 - BODY_WEIGHT) x (best chunk's content score + TOPIC_WEIGHT x topics score)
              + BODY_WEIGHT x the whole document's content score,
        where a synonym's match counts SYNONYM_WEIGHT of the word's own. Scores are -bm25
        (higher is better).
        """
        alternatives = [list(t.synonyms) for t in self.terms if t.synonyms] if has_synonyms else []
        common = self._too_common([t for g in originals + alternatives for t in g])
        if common and any(t.phrase not in common for g in originals for t in g):
            originals = [kept for g in originals if (kept := [t for t in g if t.phrase not in common])]
            alternatives = [kept for g in alternatives if (kept := [t for t in g if t.phrase not in common])]
            has_synonyms = bool(alternatives)
            self.notes.append(
                "left out of the any-term pass, found in too many passages to rank by: "
                + ", ".join(sorted(common))
            )
        plan = [(1, originals, TOPIC_WEIGHT), (3, originals, 1.0)]
        if has_synonyms:
            plan += [(2, alternatives, TOPIC_WEIGHT * SYNONYM_WEIGHT), (4, alternatives, SYNONYM_WEIGHT)]
        topic_score: dict[int, float] = {}
        chunk_score: dict[int, float] = {}
        chunk_doc: dict[int, int] = {}
        first_layer: dict[int, int] = {}
        runs: dict[int, LayerRun] = {}
        for layer, groups, weight in sorted(plan, key=lambda p: p[0]):
            rows = self._run_layer(layer, any_of(groups), "any", fetch if layer <= 2 else fetch * 4)
            runs[layer] = self.layers[-1]
            for r in rows:
                doc, score = r["document_id"], -r["score"] * weight
                first_layer.setdefault(doc, layer)
                if layer <= 2:
                    topic_score[doc] = topic_score.get(doc, 0.0) + score
                else:
                    chunk_doc[r["chunk_id"]] = doc
                    chunk_score[r["chunk_id"]] = chunk_score.get(r["chunk_id"], 0.0) + score
        body_rows = self._run_layer(
            3, any_of(originals), "any (whole documents)", fetch * 2, name="layer_bodies"
        )
        body_run = self.layers[-1]
        body_score = {r["document_id"]: -r["score"] for r in body_rows}
        for doc in body_score:
            first_layer[doc] = min(first_layer.get(doc, 3), 3)
        best_content: dict[int, float] = {}
        for cid, score in chunk_score.items():
            doc = chunk_doc[cid]
            best_content[doc] = max(best_content.get(doc, 0.0), score)
        for doc, layer in first_layer.items():
            if doc not in self.candidates:
                by_chunk = best_content.get(doc, 0.0) + topic_score.get(doc, 0.0)
                fused = (1 - BODY_WEIGHT) * by_chunk + BODY_WEIGHT * body_score.get(doc, 0.0)
                self.candidates[doc] = _Candidate(doc, 5, layer, fused)
                (runs[layer] if layer in runs else body_run).new += 1
        for cid, score in chunk_score.items():
            doc = chunk_doc[cid]
            self.candidates[doc].chunks.setdefault(cid, score)
            if self.granularity == "chunk" and cid not in self.chunk_hits:
                context = topic_score.get(doc, 0.0) + CHUNK_CONTEXT_WEIGHT * body_score.get(doc, 0.0)
                self.chunk_hits[cid] = _Candidate(doc, 5, first_layer[doc], score + context, {cid: score})
        if self.granularity == "chunk":
            topic_only = [d for d in topic_score if d not in best_content and self.candidates[d].tier == 5]
            for doc, cid in best_chunks(self.conn, topic_only, self.terms).items():
                if cid not in self.chunk_hits:
                    self.chunk_hits[cid] = _Candidate(doc, 5, first_layer[doc], topic_score[doc], {cid: 0.0})

    def _too_common(self, terms: list[Term]) -> set[str]:
        "Phrases of the terms in at least COMMON_SHARE of all passages (see COMMON_SHARE)."
        total = self.conn.execute(db.query("chunks_rows_estimate")).fetchone()[0]
        cap = max(COMMON_MIN_ROWS, int(total * COMMON_SHARE))
        if total < cap:
            return set()
        sql = db.query("term_rows_capped")
        return {
            t.phrase
            for t in terms
            if self.conn.execute(sql, {"match": t.phrase, "cap": cap}).fetchone()[0] >= cap
        }

    def _add(self, tier: int, layer: int, rows: list[sqlite3.Row], weight: float) -> None:
        new = 0
        for r in rows:
            doc, score = r["document_id"], -r["score"] * weight
            cand = self.candidates.get(doc)
            if cand is None:
                cand = self.candidates[doc] = _Candidate(doc, tier, layer, score)
                new += 1
            if layer >= 3:
                cid = r["chunk_id"]
                cand.chunks.setdefault(cid, score)
                if self.granularity == "chunk" and cid not in self.chunk_hits:
                    self.chunk_hits[cid] = _Candidate(doc, tier, layer, score, {cid: score})
        if self.granularity == "chunk" and layer <= 2:
            self._topic_chunks(rows, tier, layer)
        self.layers[-1].new = new

    def _topic_chunks(self, rows: list[sqlite3.Row], tier: int, layer: int) -> None:
        "At chunk granularity a document found by its topics is represented by its best chunk."
        docs = [r["document_id"] for r in rows]
        best = best_chunks(self.conn, docs, self.terms)
        for r in rows:
            cid = best.get(r["document_id"])
            if cid is not None and cid not in self.chunk_hits:
                self.chunk_hits[cid] = _Candidate(
                    r["document_id"], tier, layer, -r["score"], {cid: -r["score"]}
                )

    def raw(self, expression: str) -> None:
        """The user's own FTS5 expression on layers 1 and 3, no synonyms.

        Checked first against empty tables of the same shape, so a bad expression is the
        user's QuerySyntaxError and any other database error stays a real error.
        """
        self.terms = []  # an FTS5 expression has operators, not terms to explain
        problems = {layer: _fts5_problem(layer, expression) for layer in (1, 3)}
        if all(problems.values()):
            raise QuerySyntaxError(
                f"Invalid FTS5 query {expression!r}: {problems[3]}. Drop --raw to search the words "
                "as typed, or see https://sqlite.org/fts5.html#full_text_query_syntax"
            )
        fetch = max(self.limit * 5, 50)
        for layer in (1, 3):
            if problems[layer]:
                self.notes.append(f"layer {layer} skipped: {problems[layer]}")
                continue
            rows = self._run_layer(layer, expression, "raw", fetch if layer == 1 else fetch * 4)
            self._add(layer, layer, rows, weight=1.0)
            if self._enough():
                self.exhaustive = False
                return

    def found(self) -> int:
        return len(self.chunk_hits if self.granularity == "chunk" else self.candidates)

    # -- turning candidates into hits ---------------------------------------------------
    def ranked(self) -> list[_Candidate]:
        pool = self.chunk_hits if self.granularity == "chunk" else self.candidates
        return sorted(pool.values(), key=lambda c: (c.tier, -c.score))

    def hits(self, max_tokens: int | None, full_text: bool) -> tuple[list[Hit], bool]:
        return build_hits(self.conn, self, max_tokens, full_text)


_SHAPES = {1: "title, description, tags, topics", 3: "heading, text"}


def _fts5_problem(layer: int, expression: str) -> str | None:
    "Why FTS5 rejects this expression for a layer's table, or None if it accepts it."
    check = sqlite3.connect(":memory:")
    try:
        check.execute(f"CREATE VIRTUAL TABLE t USING fts5({_SHAPES[layer]}, tokenize='porter unicode61')")
        check.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    except sqlite3.OperationalError as exc:
        return str(exc)
    finally:
        check.close()
    return None
