"""The four-layer search cascade, run as ranked SQL: one run of the layers for one reading
of a query (``query.search`` decides which readings run).

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
import sqlite3
import time
from datetime import date
from typing import TYPE_CHECKING, Any

from memdex.errors import QuerySyntaxError
from memdex.models import Candidate, Hit, LayerRun
from memdex.query import latest, period, ranking, synonyms
from memdex.query.passages import LeftOut, choose
from memdex.query.ranking import (
    BODY_WEIGHT,
    CHUNK_CONTEXT_WEIGHT,
    DATE_LAYER,
    LAYER_NAMES,
    MEANING_LAYER,
    SYNONYM_WEIGHT,
    TOPIC_WEIGHT,
    bm25_params,
)
from memdex.query.request import SearchRequest
from memdex.query.results import best_chunks, build_hits, explainer_for
from memdex.query.terms import ParsedQuery, Term, all_of, any_of, raw_expression
from memdex.store import db

if TYPE_CHECKING:
    from memdex.query.meaning.passes import Near


def filter_params(request: SearchRequest, parsed: ParsedQuery, *, loose: bool = True) -> dict[str, Any]:
    """The filters of the request and the query's own dates, as ``document_filter.sql`` takes
    them; ``loose=False``: without the times said loosely ("last weekend")."""
    window = parsed.window() if loose else parsed.strict_window()
    return request.filters.params(parsed.years, parsed.months, window)


class Cascade:
    "One run of the layers for one request: candidates found so far, and what each layer did."

    def __init__(self, conn: sqlite3.Connection, parsed: ParsedQuery, request: SearchRequest) -> None:
        self.conn = conn
        self.parsed = parsed
        self.request = request
        self.limit = request.limit
        self.granularity = request.granularity
        filters = filter_params(request, parsed, loose=False)
        self.params = {**filters, **bm25_params()}
        # No filter: the layers may rank their matches before they look rows up (*_unfiltered.sql);
        # not when copies of a session are to be left out (db.has_copies).
        self.unfiltered = all(value is None for value in filters.values()) and not db.has_copies(conn)
        self.terms: list[Term] = list(parsed.key_terms)
        if request.use_synonyms and self.terms:
            self.terms = synonyms.expand(conn, self.terms)
        self.candidates: dict[int, Candidate] = {}
        self.chunk_hits: dict[int, Candidate] = {}  # chunk granularity: chunk id -> candidate
        self.layers: list[LayerRun] = []
        self.notes: list[str] = []
        self.related: list[str] = []  # words of the best messages that counted too (passages.feedback)
        self.left_out: list[LeftOut] = []  # what the budget passed over (passages.choose)
        self.order: list[Candidate] | None = None  # the fused order, once meaning is fused
        # True while every match has been collected: no layer was cut by its row limit, and the
        # cascade did not stop widening early. Then ``found`` is the number of all matches.
        self.exhaustive = True

    # -- running the layers ------------------------------------------------------------
    def _run_layer(self, layer: int, match: str, mode: str, limit: int, name: str = "") -> list[sqlite3.Row]:
        name = name or ("layer_topics" if layer <= 2 else "layer_content")
        if self.unfiltered and name in ("layer_topics", "layer_content", "layer_bodies"):
            name += "_unfiltered"
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
                self.candidates[doc] = Candidate(doc, 5, layer, fused)
                (runs[layer] if layer in runs else body_run).new += 1
        for cid, score in chunk_score.items():
            doc = chunk_doc[cid]
            self.candidates[doc].chunks.setdefault(cid, score)
            if self.granularity == "chunk" and cid not in self.chunk_hits:
                context = topic_score.get(doc, 0.0) + CHUNK_CONTEXT_WEIGHT * body_score.get(doc, 0.0)
                self.chunk_hits[cid] = Candidate(doc, 5, first_layer[doc], score + context, {cid: score})
        if self.granularity == "chunk":
            topic_only = [d for d in topic_score if d not in best_content and self.candidates[d].stage == 5]
            for doc, cid in best_chunks(self.conn, topic_only, self.terms).items():
                if cid not in self.chunk_hits:
                    self.chunk_hits[cid] = Candidate(doc, 5, first_layer[doc], topic_score[doc], {cid: 0.0})

    def loose_first(self) -> None:
        """A time said loosely ("last weekend", "a couple of days ago") does not filter: the
        words are searched at every time, since the time may be off by more than it was
        widened by. What holds every key word and is dated then goes first
        (``Candidate.dated_then``); the period's other documents may follow (``fill_dated``)."""
        loose = [s for s in self.parsed.spans if s.loose]
        since, until = period.window(loose)
        if since is None or until is None:
            return
        every_word = {c.document_id for c in self.candidates.values() if c.stage <= 4}
        params = {**period.narrow(self.params, since, until), "ids": json.dumps(sorted(every_word))}
        inside = {r["document_id"] for r in self.conn.execute(db.query("documents_dated_in"), params)}
        for pool in (self.candidates, self.chunk_hits):
            for c in pool.values():
                c.dated_then = c.stage <= 4 and c.document_id in inside
        said = period.describe([s.words for s in loose], since, until)
        first = (
            f"{len(inside)} dated then holding every word first"
            if inside
            else "none dated then holds every word"
        )
        self.notes.append(f"{said} is said loosely: searched at every time, {first}")

    def fill_dated(self) -> None:
        """The rest of a short period the query names, after what its words found there
        (ranking.DATED_FILL_DAYS): a document dated then that shares no word is still what the
        question may be about. Only while the words found fewer documents than asked for."""
        since, until = self.parsed.window()
        if since is None or until is None:
            return
        if (date.fromisoformat(until) - date.fromisoformat(since)).days + 1 > ranking.DATED_FILL_DAYS:
            return
        room = self.limit - self.documents_found()
        if room <= 0:
            return
        sql = db.query("period_documents")
        params = period.narrow(self.params, since, until)  # a loose time's days too
        started = time.perf_counter()
        rows = self.conn.execute(sql, params).fetchall()
        ms = round((time.perf_counter() - started) * 1000, 3)
        found = {c.document_id for c in self.chunk_hits.values()} | set(self.candidates)
        extra = [r["document_id"] for r in rows if r["document_id"] not in found][:room]
        run = LayerRun(
            DATE_LAYER,
            LAYER_NAMES[DATE_LAYER],
            "",
            "date",
            db.render_sql(sql, params),
            found=len(rows),
            new=len(extra),
            ms=ms,
        )
        self.layers.append(run)
        if not extra:
            return
        first: dict[int, int] = {}
        if self.granularity == "chunk":
            for r in self.conn.execute(db.query("chunks_of_documents"), {"ids": json.dumps(extra)}):
                first.setdefault(r["document_id"], r["id"])
        for doc in extra:
            cand = Candidate(doc, ranking.DATED_STAGE, DATE_LAYER, 0.0)
            self.candidates[doc] = cand
            if doc in first:
                cand.chunks[first[doc]] = 0.0
                self.chunk_hits[first[doc]] = Candidate(
                    doc, ranking.DATED_STAGE, DATE_LAYER, 0.0, {first[doc]: 0.0}
                )
        self.notes.append(
            f"{len(extra)} more dated {period.describe(self.parsed.date_words, since, until)} "
            "share no word with the query: shown after the matches"
        )

    def _too_common(self, terms: list[Term]) -> set[str]:
        "Phrases of the terms in too many passages to rank by (ranking.COMMON_SHARE)."
        total = self.conn.execute(db.query("chunks_rows_estimate")).fetchone()[0]
        cap = max(ranking.COMMON_MIN_ROWS, int(total * ranking.COMMON_SHARE))
        if total < cap:
            return set()
        known = db.memo(self.conn, "rows_capped")  # phrase, cap -> rows, while the index is unchanged
        sql = db.query("term_rows_capped")
        for t in terms:
            if (t.phrase, cap) not in known:
                known[t.phrase, cap] = self.conn.execute(sql, {"match": t.phrase, "cap": cap}).fetchone()[0]
        return {t.phrase for t in terms if known[t.phrase, cap] >= cap}

    def _add(self, stage: int, layer: int, rows: list[sqlite3.Row], weight: float) -> None:
        new = 0
        for r in rows:
            doc, score = r["document_id"], -r["score"] * weight
            cand = self.candidates.get(doc)
            if cand is None:
                cand = self.candidates[doc] = Candidate(doc, stage, layer, score)
                new += 1
            if layer >= 3:
                cid = r["chunk_id"]
                cand.chunks.setdefault(cid, score)
                if self.granularity == "chunk" and cid not in self.chunk_hits:
                    self.chunk_hits[cid] = Candidate(doc, stage, layer, score, {cid: score})
        if self.granularity == "chunk" and layer <= 2:
            self._topic_chunks(rows, stage, layer)
        self.layers[-1].new = new

    def _topic_chunks(self, rows: list[sqlite3.Row], stage: int, layer: int) -> None:
        "At chunk granularity a document found by its topics is represented by its best chunk."
        docs = [r["document_id"] for r in rows]
        best = best_chunks(self.conn, docs, self.terms)
        for r in rows:
            cid = best.get(r["document_id"])
            if cid is not None and cid not in self.chunk_hits:
                self.chunk_hits[cid] = Candidate(
                    r["document_id"], stage, layer, -r["score"], {cid: -r["score"]}
                )

    def raw(self, expression: str) -> None:
        """The user's own FTS5 expression on layers 1 and 3, no synonyms.

        Checked first against empty tables of the same shape, so a bad expression is the
        user's QuerySyntaxError and any other database error stays a real error.
        """
        self.terms = []  # an FTS5 expression has operators, not terms to explain
        typed, expression = expression, raw_expression(expression)  # its words as the index holds them
        problems = {layer: _fts5_problem(self.conn, layer, expression) for layer in (1, 3)}
        if all(problems.values()):
            raise QuerySyntaxError(
                f"Invalid FTS5 query {typed!r}: {problems[3]}. Drop --raw to search the words "
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

    def documents_found(self) -> int:
        "Documents matched, whatever the granularity: chunks of one document count once."
        if self.granularity != "chunk":
            return len(self.candidates)
        return len({c.document_id for c in self.chunk_hits.values()})

    def settled(self) -> bool:
        "Do results that matched every key word already fill the limit? Then fusion keeps them all."
        if not ranking.ALL_TERMS_FIRST:
            return False
        pool = self.chunk_hits if self.granularity == "chunk" else self.candidates
        return sum(1 for c in pool.values() if c.stage <= 4) >= self.limit

    def fuse(self, near: list[Near]) -> None:
        """Fuse the meaning pass into the words' ranking (see ranking.fuse_score).

        Results that matched all key words in a layer keep their place first when
        ALL_TERMS_FIRST; the rest, and what only meaning found, are ordered by the fused
        score. A result only meaning found is a candidate of the meaning layer."""
        by_chunk = self.granularity == "chunk"
        pool = self.chunk_hits if by_chunk else self.candidates
        words = self.ranked()
        head = [c for c in words if c.stage <= 4] if ranking.ALL_TERMS_FIRST else []
        kept = {id(c) for c in head}
        words_rank = {id(c): rank for rank, c in enumerate(words)}
        meaning_rank: dict[int, int] = {}
        weight: dict[int, float] = {}
        for n in near:
            key = n.chunk_id if by_chunk else n.document_id
            cand = pool.get(key)
            if cand is None:
                cand = pool[key] = Candidate(n.document_id, 6, MEANING_LAYER, 0.0, {n.chunk_id: n.similarity})
            if id(cand) in meaning_rank:
                continue
            cand.similarity = n.similarity
            cand.chunks.setdefault(n.chunk_id, 0.0)
            meaning_rank[id(cand)] = len(meaning_rank)
            weight[id(cand)] = ranking.meaning_weight(n.conversation, n.whole)
        rest = [c for c in pool.values() if id(c) not in kept]
        for c in rest:
            c.fused = ranking.fuse_score(
                words_rank.get(id(c)), meaning_rank.get(id(c)), weight.get(id(c), 0.0)
            )
        rest.sort(key=lambda c: -c.fused)
        self.order = head + rest

    # -- turning candidates into hits ---------------------------------------------------
    def ranked(self) -> list[Candidate]:
        if self.order is not None:
            return self.order
        pool = self.chunk_hits if self.granularity == "chunk" else self.candidates
        return sorted(pool.values(), key=lambda c: (not c.dated_then, c.stage, -c.score))

    def hits(self) -> tuple[list[Hit], bool]:
        hits, truncated = self._hits()
        if self.granularity == "chunk" and self.parsed.about_now and len(hits) > 1:
            hits = latest.newest_first(hits, [t.text for t in self.terms])
            if said := latest.note(hits):
                self.notes.append(said)
        return hits, truncated

    def _hits(self) -> tuple[list[Hit], bool]:
        r = self.request
        if r.granularity == "chunk" and self.ranked():
            # what of the ranked chunks is handed out: windows of conversations' messages
            picked = choose(
                self.conn,
                self.ranked(),
                explainer_for(self.conn, self.terms),
                r.max_tokens,
                self.limit,
                about_asker=self.parsed.about_asker,
            )
            if picked is not None:
                self.related = picked.related
                self.left_out = picked.left_out
                ranked = [p.candidate for p in picked.picks]
                windows = [p.window for p in picked.picks]
                scores = ranking.shown_scores([[p.score for p in picked.picks]])
                hits, _ = build_hits(
                    self.conn, ranked, self.terms, r.granularity, r.max_tokens, r.full_text, windows, scores
                )
                return hits, picked.truncated
        ranked = self.ranked()[: self.limit]
        return build_hits(
            self.conn,
            ranked,
            self.terms,
            r.granularity,
            r.max_tokens,
            r.full_text,
            scores=self._shown(ranked),
        )

    def _shown(self, ranked: list[Candidate]) -> list[float]:
        "The score each ranked candidate shows: its stage's (or the fusion's), lifted in order."
        groups: list[list[float]] = []
        last: object = None
        for c in ranked:
            fused = self.order is not None and not (ranking.ALL_TERMS_FIRST and c.stage <= 4)
            key = "fused" if fused else c.stage
            if key != last:
                groups.append([])
                last = key
            groups[-1].append(c.fused if fused else c.score)
        return ranking.shown_scores(groups)


_LAYER_TABLES = {1: "documents_fts", 3: "chunks_fts"}
_CHECK_MATCH = {
    1: "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?",
    3: "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?",
}


def _fts5_problem(conn: sqlite3.Connection, layer: int, expression: str) -> str | None:
    """Why FTS5 rejects this expression for a layer's table, or None if it accepts it.

    Tried on an empty table declared exactly as the index declares its own (same columns,
    same tokenizer), so only the expression can be at fault."""
    declaration = conn.execute(db.query("fts_declaration"), {"name": _LAYER_TABLES[layer]}).fetchone()[0]
    check = sqlite3.connect(":memory:")
    try:
        check.execute(declaration)
        check.execute(_CHECK_MATCH[layer], (expression,)).fetchall()
    except sqlite3.OperationalError as exc:
        return str(exc)
    finally:
        check.close()
    return None
